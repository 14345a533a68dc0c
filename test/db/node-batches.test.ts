// Node mode's cached-statement batches (src/db/node-batches.ts) answer
// exactly as @libsql/client's own embedded batches do, roll back as a whole,
// and wait for another process's write lock without stalling the event loop.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, LibsqlBatchError, type Client, type InStatement } from '@libsql/client';
import Database from 'libsql';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openBatchRunner, type BatchRunner } from '../../src/db/node-batches.js';
import { observable } from '../helpers/result-sets.js';

let dir: string;
let path: string;
let client: Client;
let runner: BatchRunner;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'node-batches-'));
  path = join(dir, 'db.sqlite');
  client = createClient({ url: `file:${path}` });
  await client.execute('PRAGMA journal_mode=WAL');
  await client.batch(
    [
      'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, amount INTEGER, ratio REAL, data BLOB)',
      "INSERT INTO t (name, amount, ratio, data) VALUES ('a', 1, 1.5, x'0102'), ('b', NULL, 16.0, NULL)",
    ],
    'write',
  );
  runner = openBatchRunner(path, 200);
});

afterEach(() => {
  runner.close();
  client.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('cached-statement batches', () => {
  it('answer reads and writes exactly as @libsql/client does, the second time (cached) too', async () => {
    const reads: InStatement[] = [
      { sql: 'SELECT id, name, amount, ratio, data FROM t WHERE id IN (?, ?) ORDER BY id', args: [1, 2] },
      'SELECT count(*), max(amount) AS top, name AS name, name AS name FROM t',
      { sql: 'SELECT 1 AS "0", 2 AS length', args: [] },
      { sql: 'SELECT name FROM t WHERE name = ?', args: ['nobody'] },
    ];
    const expected = (await client.batch(reads, 'read')).map(observable);
    expect((await runner.readBatch(reads)).map(observable)).toEqual(expected);
    expect((await runner.readBatch(reads)).map(observable)).toEqual(expected);

    const write: InStatement[] = [
      { sql: 'INSERT INTO t (name, amount) VALUES (?, ?)', args: ['c', 3] },
      { sql: 'UPDATE t SET amount = amount + ? WHERE amount IS NOT NULL', args: [10] },
      { sql: 'DELETE FROM t WHERE name = ?', args: ['nobody'] },
    ];
    const [inserted, updated, deleted] = (await runner.writeBatch(write)).map(observable);
    expect(inserted).toMatchObject({ rowsAffected: 1, lastInsertRowid: 3n, rows: [] });
    expect(updated).toMatchObject({ rowsAffected: 2 });
    expect(deleted).toMatchObject({ rowsAffected: 0 });
    expect((await client.execute('SELECT name, amount FROM t ORDER BY id')).rows.map((r) => [r.name, r.amount])).toEqual([
      ['a', 11],
      ['b', null],
      ['c', 13],
    ]);
  });

  it("binds NULL where a batch leaves an argument out, as the client does, not the cached statement's last value", async () => {
    const select = (args: (string | number)[]): InStatement => ({ sql: 'SELECT ? AS a, ? AS b', args });
    const reads = [select([1, 2]), select([3]), select([])];
    const expected = (await client.batch(reads, 'read')).map(observable);
    expect(expected.map((r) => r.rows[0]!.byIndex)).toEqual([
      [1, 2],
      [3, null],
      [null, null],
    ]);
    expect((await runner.readBatch(reads)).map(observable)).toEqual(expected);
    const insert = (args: (string | number)[]): InStatement => ({ sql: 'INSERT INTO t (name, amount) VALUES (?, ?)', args });
    await runner.writeBatch([insert(['c', 5]), insert(['d'])]);
    expect((await client.execute("SELECT amount FROM t WHERE name = 'd'")).rows[0]!.amount).toBeNull();
  });

  it('refuses integers a JavaScript number cannot hold, as the client does', async () => {
    await client.execute('INSERT INTO t (name, amount) VALUES (?, ?)', ['huge', 2n ** 60n]);
    const read = [{ sql: 'SELECT amount FROM t WHERE name = ?', args: ['huge'] }];
    await expect(client.batch(read, 'read')).rejects.toThrow(RangeError);
    await expect(runner.readBatch(read)).rejects.toThrow(RangeError);
  });

  it('rolls the whole batch back and names the failing statement', async () => {
    const failing: InStatement[] = [
      { sql: 'UPDATE t SET amount = 99 WHERE name = ?', args: ['a'] },
      { sql: 'INSERT INTO t (name) VALUES (?)', args: ['b'] },
    ];
    const err = await runner.writeBatch(failing).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LibsqlBatchError);
    expect(err).toMatchObject({ statementIndex: 1, code: 'SQLITE_CONSTRAINT', extendedCode: 'SQLITE_CONSTRAINT_UNIQUE' });
    const fromClient = await client.batch(failing, 'write').catch((e: unknown) => e);
    expect(fromClient).toMatchObject({ statementIndex: 1, code: 'SQLITE_CONSTRAINT', extendedCode: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect((await client.execute("SELECT amount FROM t WHERE name = 'a'")).rows[0]!.amount).toBe(1);
    // The connection is usable afterwards.
    expect((await runner.writeBatch([{ sql: "UPDATE t SET amount = 2 WHERE name = 'a'", args: [] }]))[0]!.rowsAffected).toBe(1);
  });

  it('waits for another process holding the write lock without stalling the event loop', async () => {
    // A long busy timeout, so the other writer may hold the lock as long as a loaded machine needs
    // for the loop to turn: the proof is that timers run while the batch waits, not how many in a window.
    const patient = openBatchRunner(path, 10_000);
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    other.exec("UPDATE t SET amount = 5 WHERE name = 'a'");
    let settled = false;
    const pending = patient.writeBatch([{ sql: "UPDATE t SET amount = amount * 10 WHERE name = 'a'", args: [] }]).finally(() => {
      settled = true;
    });
    try {
      // Six turns of the loop while the lock is held: a stalled loop runs none until the batch returns,
      // and then only after its busy timeout, with SQLITE_BUSY.
      for (let turn = 0; turn < 6; turn += 1) await new Promise((resolve) => setTimeout(resolve, 5));
      expect(settled).toBe(false);
      other.exec('COMMIT');
      await pending;
    } finally {
      other.close();
      patient.close();
    }
    // Applied after the other writer, on what it committed.
    expect((await client.execute("SELECT amount FROM t WHERE name = 'a'")).rows[0]!.amount).toBe(50);
  });

  it('gives up with SQLITE_BUSY once the busy timeout has passed', async () => {
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const err = await runner.writeBatch([{ sql: 'DELETE FROM t', args: [] }]).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'SQLITE_BUSY' });
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect((await client.execute('SELECT count(*) AS n FROM t')).rows[0]!.n).toBe(2);
  });
});

describe('write groups (one shared commit)', () => {
  const names = async () => (await client.execute('SELECT name FROM t ORDER BY id')).rows.map((r) => r.name);

  it('answers each batch on its own: a failing one is rolled back alone, with its statement index', async () => {
    const outcomes = await runner.writeGroup([
      [{ sql: 'INSERT INTO t (name) VALUES (?)', args: ['c'] }],
      [
        { sql: 'INSERT INTO t (name) VALUES (?)', args: ['d'] },
        { sql: 'INSERT INTO t (name) VALUES (?)', args: ['a'] },
      ],
      [{ sql: 'SELECT count(*) AS n FROM t', args: [] }],
    ]);
    expect(outcomes).toHaveLength(3);
    expect(outcomes[0]).toMatchObject({ results: [{ rowsAffected: 1, lastInsertRowid: 3n }] });
    expect(outcomes[1]).toMatchObject({
      error: { statementIndex: 1, code: 'SQLITE_CONSTRAINT', extendedCode: 'SQLITE_CONSTRAINT_UNIQUE' },
    });
    expect(outcomes[1]).toHaveProperty('error');
    expect((outcomes[1] as { error: unknown }).error).toBeInstanceOf(LibsqlBatchError);
    // The third sees the first's row and none of the second's.
    expect(outcomes[2]).toMatchObject({ results: [{ rows: [{ n: 3 }] }] });
    expect(await names()).toEqual(['a', 'b', 'c']);
  });

  it('an error that ends the whole transaction (a trigger RAISE(ROLLBACK)) costs the others nothing: each runs again alone', async () => {
    await client.execute("CREATE TRIGGER no_x BEFORE INSERT ON t WHEN NEW.name = 'x' BEGIN SELECT RAISE(ROLLBACK, 'no x'); END");
    const outcomes = await runner.writeGroup([
      [{ sql: 'INSERT INTO t (name) VALUES (?)', args: ['c'] }],
      [{ sql: 'INSERT INTO t (name) VALUES (?)', args: ['x'] }],
      [{ sql: 'INSERT INTO t (name) VALUES (?)', args: ['e'] }],
    ]);
    expect(outcomes.map((o) => ('error' in o ? 'error' : 'ok'))).toEqual(['ok', 'error', 'ok']);
    expect((outcomes[1] as { error: Error }).error.message).toContain('no x');
    expect(await names()).toEqual(['a', 'b', 'c', 'e']);
  });

  it('waits for another process holding the write lock, then commits the whole group', async () => {
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    other.exec("UPDATE t SET amount = 5 WHERE name = 'a'");
    const pending = runner.writeGroup([
      [{ sql: "UPDATE t SET amount = amount * 10 WHERE name = 'a'", args: [] }],
      [{ sql: "UPDATE t SET amount = amount + 1 WHERE name = 'a'", args: [] }],
    ]);
    try {
      await new Promise((resolve) => setTimeout(resolve, 5));
      other.exec('COMMIT');
    } finally {
      other.close();
    }
    expect((await pending).every((o) => 'results' in o)).toBe(true);
    expect((await client.execute("SELECT amount FROM t WHERE name = 'a'")).rows[0]!.amount).toBe(51);
  });

  it('answers every batch of the group SQLITE_BUSY, nothing written, once the busy timeout has passed', async () => {
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const outcomes = await runner.writeGroup([
        [{ sql: 'DELETE FROM t', args: [] }],
        [{ sql: "INSERT INTO t (name) VALUES ('z')", args: [] }],
      ]);
      expect(outcomes).toEqual([
        { error: expect.objectContaining({ code: 'SQLITE_BUSY' }) },
        { error: expect.objectContaining({ code: 'SQLITE_BUSY' }) },
      ]);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(await names()).toEqual(['a', 'b']);
  });
});
