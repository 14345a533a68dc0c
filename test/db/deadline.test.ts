// The deadline layer itself (src/db/deadline.ts): what a caller is told when
// a call is given up, whether a queued write was ever sent, and that the
// write lock is let go at the deadline. Calls here never answer: promises
// that never settle stand for a database behind a held link.
import { describe, expect, it } from 'vitest';
import { Mutex } from '../../src/db/client.js';
import { DatabaseDeadline, DatabaseTimeout } from '../../src/db/deadline.js';

const never = <T>() => new Promise<T>(() => {});
const deadline = () => new DatabaseDeadline({ database: 'PLACEMENT_DB_URL (http://db.example:8080)', readMs: 50, writeMs: 80 });

async function failure(promise: Promise<unknown>): Promise<DatabaseTimeout> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DatabaseTimeout);
  return err as DatabaseTimeout;
}

describe('database deadlines', () => {
  it('a read that gets no answer is given up, naming the database; nothing was written', async () => {
    const d = deadline();
    const err = await failure(d.read(never));
    expect(err).toMatchObject({ operation: 'read', outcome: 'not_written', timeoutMs: 50, code: 'PLACEMENT_DB_TIMEOUT' });
    expect(err.message).toContain('PLACEMENT_DB_URL (http://db.example:8080) gave no answer within 50 ms');
    expect(err.message).toContain('Nothing was written');
    expect(d.answeredAt).toBeUndefined();
  });

  it('a write sent and not answered: its outcome is unknown', async () => {
    const err = await failure(deadline().write(never));
    expect(err).toMatchObject({ operation: 'write', outcome: 'unknown', timeoutMs: 80 });
    expect(err.message).toContain('outcome is unknown');
  });

  it('an answer, or an error the database sent, counts as answering', async () => {
    const d = deadline();
    await failure(d.read(never));
    expect(d.answeredAt).toBeUndefined();
    await expect(d.read(() => Promise.reject(new Error('SQLITE_ERROR')))).rejects.toThrow('SQLITE_ERROR');
    expect(d.answeredAt).toBeTypeOf('number');
    expect(await d.read(() => Promise.resolve(7))).toBe(7);
  });

  it('writes queued behind one that does not answer: the lock is let go at its deadline, a write given up in the queue was never sent', async () => {
    const d = deadline();
    const lock = new Mutex();
    const sent: string[] = [];
    const first = d.queued(lock, () => {
      sent.push('first');
      return never();
    });
    // Queued behind `first`: given up before the lock is let go, and never sent afterwards.
    const starved = new DatabaseDeadline({ database: 'db', readMs: 50, writeMs: 20 }).queued(lock, () => {
      sent.push('starved');
      return Promise.resolve('late');
    });
    const next = d.queued(lock, () => {
      sent.push('next');
      return Promise.resolve('done');
    });
    expect(await failure(starved)).toMatchObject({ outcome: 'not_written' });
    expect(await failure(first)).toMatchObject({ outcome: 'unknown' });
    // `next` was queued at the same moment as `first` and has the same deadline: it runs only if the lock was let go in time.
    const outcome = await next.then(
      (v) => v,
      (e: unknown) => (e as DatabaseTimeout).outcome,
    );
    expect(['done', 'not_written']).toContain(outcome);
    expect(sent).not.toContain('starved');
    // And a write queued now is not held by `first`, which never answers.
    expect(await d.queued(lock, () => Promise.resolve('after'))).toBe('after');
  });
});
