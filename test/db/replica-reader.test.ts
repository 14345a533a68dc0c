// The replica reader on its own (src/db/replica.ts), on two real in-memory
// libSQL databases standing for the replica and the primary, each answering
// which one it is: a replica whose write mark is one below this instance's
// last write is not used (the read goes to the primary, counted "behind");
// at or above the mark it is. A replica that fails rests for retryMs (reads
// go straight to the primary), is tried again after, and each episode is
// logged once. The marks' bookkeeping and the replica's fetch timeout too.
import { type Client, createClient, type InStatement } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DbWatch, type ReplicaReadOutcome } from '../../src/db/client.js';
import { fetchWithTimeout, markOf, RAISE_WRITE_MARK, ReplicaReader, WriteMarks } from '../../src/db/replica.js';

const WHO = { sql: 'SELECT who FROM whoami', args: [] } satisfies InStatement;

async function database(who: string, mark: number | null): Promise<Client> {
  const client = createClient({ url: ':memory:' });
  await client.batch(
    [
      'CREATE TABLE whoami (who TEXT NOT NULL)',
      { sql: 'INSERT INTO whoami VALUES (?)', args: [who] },
      'CREATE TABLE placement_write_marks (id INTEGER PRIMARY KEY, mark INTEGER NOT NULL)',
      ...(mark === null ? [] : [{ sql: 'INSERT INTO placement_write_marks VALUES (1, ?)', args: [mark] }]),
    ],
    'write',
  );
  return client;
}

const setMark = (client: Client, mark: number) =>
  client.execute({ sql: 'UPDATE placement_write_marks SET mark = ? WHERE id = 1', args: [mark] });

describe('ReplicaReader', () => {
  let replica: Client;
  let primary: Client;
  let primaryReads: number;
  let failing: boolean;
  let clock: number;
  let logs: { level: string; msg: string; extra?: Record<string, unknown> }[];
  let reported: ReplicaReadOutcome[];
  let operations: string[];
  let marks: WriteMarks;
  let reader: ReplicaReader;

  const who = async () => {
    const [result, ...rest] = await reader.readBatch([WHO]);
    expect(rest).toEqual([]);
    return result!.rows[0]!.who;
  };

  beforeEach(async () => {
    replica = await database('replica', 7);
    primary = await database('primary', 7);
    primaryReads = 0;
    failing = false;
    clock = 1_000;
    logs = [];
    reported = [];
    operations = [];
    const watch = new DbWatch();
    watch.countInto({
      dbDuration: { labels: (_system, operation) => ({ observe: () => operations.push(operation) }) },
      writeRetries: { inc() {} },
      replicaReads: { inc: ([outcome]) => reported.push(outcome) },
    });
    // The replica as the reader sees it: down while `failing` is set.
    const flaky = new Proxy(replica, {
      get(target, key, receiver) {
        if (key === 'batch' && failing) return () => Promise.reject(new Error('connection refused'));
        const value: unknown = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const log = (level: string) => (msg: string, extra?: Record<string, unknown>) => logs.push({ level, msg, extra });
    marks = new WriteMarks();
    reader = new ReplicaReader(
      flaky,
      {
        readBatch: (statements) => {
          primaryReads += 1;
          return primary.batch(statements, 'read');
        },
      },
      marks,
      { retryMs: 500, log: { warn: log('warn'), info: log('info') }, now: () => clock },
      watch,
    );
    marks.saw(7);
  });

  afterEach(() => {
    replica.close();
    primary.close();
  });

  it("reads from the replica when its mark equals this instance's last write", async () => {
    expect(marks.last).toBe(7);
    expect(await who()).toBe('replica');
    expect(reader.counts).toEqual({ replica: 1, behind: 0, unavailable: 0 });
    expect(primaryReads).toBe(0);
    expect(reported).toEqual(['replica']);
    expect(operations).toEqual(['replica_read_batch']); // timed as a replica read (db_client_operation_duration_seconds)
  });

  it('sends the read to the primary, counted "behind", when the replica is one write behind', async () => {
    marks.raised(8);
    expect(await who()).toBe('primary');
    expect(reader.counts).toEqual({ replica: 0, behind: 1, unavailable: 0 });
    expect(primaryReads).toBe(1);
    expect(reported).toEqual(['behind']);
    expect(logs).toEqual([]); // lag is not a failure
    await setMark(replica, 8);
    expect(await who()).toBe('replica');
    await setMark(replica, 9); // ahead of us (another instance's writes): still fresh enough
    expect(await who()).toBe('replica');
    expect(reader.counts).toEqual({ replica: 2, behind: 1, unavailable: 0 });
  });

  it('reads the replica when it has no mark yet and this instance has written nothing', async () => {
    const blank = await database('blank', null);
    try {
      const fresh = new ReplicaReader(blank, { readBatch: () => Promise.reject(new Error('not the primary')) }, new WriteMarks(), {
        retryMs: 1,
        log: { warn() {}, info() {} },
      });
      const [result] = await fresh.readBatch([WHO]);
      expect(result!.rows[0]!.who).toBe('blank');
      expect(fresh.counts.replica).toBe(1);
    } finally {
      blank.close();
    }
  });

  it('a failed replica rests for retryMs (reads go straight to the primary), is tried again after, and logs once per episode', async () => {
    failing = true;
    expect(await who()).toBe('primary');
    expect(reader.counts).toEqual({ replica: 0, behind: 0, unavailable: 1 });
    expect(logs).toEqual([
      { level: 'warn', msg: 'read replica failed: reading from the primary', extra: { err: 'Error: connection refused', retry_ms: 500 } },
    ]);
    failing = false; // back, but resting: not asked until the retry time
    clock += 499;
    expect(await who()).toBe('primary');
    expect(reader.counts.unavailable).toBe(2);
    failing = true;
    clock += 1; // the retry time: asked again, fails again, same episode (no second warning)
    expect(await who()).toBe('primary');
    expect(reader.counts.unavailable).toBe(3);
    clock += 499;
    expect(await who()).toBe('primary');
    expect(reader.counts.unavailable).toBe(4);
    expect(logs).toHaveLength(1);
    failing = false;
    clock += 1;
    expect(await who()).toBe('replica');
    expect(logs.at(-1)).toEqual({ level: 'info', msg: 'read replica answers again', extra: undefined });
    expect(await who()).toBe('replica');
    expect(logs).toHaveLength(2);
    // A new failure is a new episode: warned again.
    failing = true;
    expect(await who()).toBe('primary');
    expect(logs.filter((l) => l.level === 'warn')).toHaveLength(2);
    expect(reader.counts).toEqual({ replica: 2, behind: 0, unavailable: 5 });
    expect(reported).toEqual(['unavailable', 'unavailable', 'unavailable', 'unavailable', 'replica', 'replica', 'unavailable']);
  });
});

describe('WriteMarks', () => {
  it('keeps the highest mark seen, and reports only its own raises', () => {
    const marks = new WriteMarks();
    const raised: number[] = [];
    marks.onRaise = (mark) => raised.push(mark);
    expect(marks.last).toBe(0);
    marks.saw(5);
    marks.saw(3);
    expect(marks.last).toBe(5);
    marks.raised(4); // an older answer arriving late never lowers the mark
    expect(marks.last).toBe(5);
    marks.raised(9);
    expect(marks.last).toBe(9);
    expect(raised).toEqual([4, 9]);
  });
});

describe('markOf', () => {
  it('reads the mark a RAISE_WRITE_MARK returns, as a number whichever way the client gives integers', async () => {
    for (const intMode of ['number', 'bigint', 'string'] as const) {
      const client = createClient({ url: ':memory:', intMode });
      try {
        await client.execute('CREATE TABLE placement_write_marks (id INTEGER PRIMARY KEY, mark INTEGER NOT NULL)');
        await client.execute('INSERT INTO placement_write_marks VALUES (1, 41)');
        expect(markOf(await client.execute(RAISE_WRITE_MARK)), intMode).toBe(42);
        await client.execute('DELETE FROM placement_write_marks');
        expect(markOf(await client.execute(RAISE_WRITE_MARK)), `${intMode}, no row`).toBe(0);
        expect(markOf(await client.execute('SELECT NULL')), `${intMode}, NULL`).toBe(0);
      } finally {
        client.close();
      }
    }
    expect(markOf(undefined)).toBe(0);
  });
});

describe('fetchWithTimeout', () => {
  it('passes the request on with a signal that aborts after the timeout', async () => {
    const seen: { input: unknown; init: RequestInit | undefined }[] = [];
    const base = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      seen.push({ input, init });
      return new Promise<Response>((_, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal?.reason)));
    }) as typeof fetch;
    const started = performance.now();
    const error = await fetchWithTimeout(50, base)('http://replica.invalid/v2/pipeline', { method: 'POST', body: '{}' }).catch(
      (err: unknown) => err,
    );
    expect((error as Error).name).toBe('TimeoutError');
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.input).toBe('http://replica.invalid/v2/pipeline');
    expect(seen[0]!.init).toMatchObject({ method: 'POST', body: '{}' });
  });
});
