// The one writer of a cluster's server processes (src/db/shared-writer.ts),
// its messages crossing a JSON round trip as over node:cluster's channel:
// a write batch answers exactly as the batch runner it replaces answers it
// (values of every kind, generated ids, errors with their class, code and
// statement index), and a batch the channel could not carry fails saying
// nothing was written. The random concurrent histories are compared in
// group-commit-differential.test.ts.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type Client, type InStatement } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BatchRunner, openBatchRunner } from '../../src/db/node-batches.js';
import {
  openSharedWriter,
  type SharedWriter,
  SharedWriterClient,
  SharedWriterService,
  type WriteRequest,
} from '../../src/db/shared-writer.js';
import { observable } from '../helpers/result-sets.js';

let dir: string;
let client: Client;
let alone: BatchRunner;
let writer: SharedWriter;
let remote: SharedWriterClient;

/** The same schema and rows in two files: one written directly, one through the writer. */
async function openFile(name: string): Promise<string> {
  const path = join(dir, name);
  const c = createClient({ url: `file:${path}` });
  await c.execute('PRAGMA journal_mode=WAL');
  await c.batch(
    [
      'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, amount INTEGER, ratio REAL, data BLOB)',
      "INSERT INTO t (name, amount, ratio, data) VALUES ('a', 1, 1.5, x'0102'), ('b', NULL, 16.0, NULL)",
    ],
    'write',
  );
  c.close();
  return path;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'shared-writer-'));
  alone = openBatchRunner(await openFile('alone.db'), 200);
  const sharedPath = await openFile('shared.db');
  client = createClient({ url: `file:${sharedPath}` });
  writer = openSharedWriter(sharedPath, 200);
  const service = new SharedWriterService(Promise.resolve(writer));
  remote = new SharedWriterClient((msg, done) => {
    void service.receive('server-1', JSON.parse(JSON.stringify(msg)) as WriteRequest, (reply) =>
      setImmediate(() => remote.receive(JSON.parse(JSON.stringify(reply)))),
    );
    done(null);
  });
});

afterEach(() => {
  alone.close();
  writer.close();
  client.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What a caller sees of a batch: its results, or its error's class, message, code and statement index. */
async function outcome(write: (s: InStatement[]) => Promise<unknown[]>, statements: InStatement[]): Promise<unknown> {
  try {
    return { results: (await write(statements)).map((r) => observable(r as never)) };
  } catch (err) {
    const { name, message, code, rawCode, statementIndex } = err as Error & Record<string, unknown>;
    return { name, message, code, rawCode, statementIndex, isError: err instanceof Error };
  }
}

const BATCHES: [string, InStatement[]][] = [
  [
    'values of every kind, and generated ids',
    [
      {
        sql: 'INSERT INTO t (name, amount, ratio, data) VALUES (?, ?, ?, ?)',
        args: ['c', 9_007_199_254_740_991n, 0.25, new Uint8Array([7, 8, 9])],
      },
      { sql: 'INSERT INTO t (name, amount) VALUES (:name, :amount)', args: { name: 'd', amount: true } },
      'SELECT id, name, amount, ratio, data, typeof(data) FROM t ORDER BY id',
      { sql: 'UPDATE t SET ratio = ? WHERE name = ?', args: [null, 'zz'] },
    ],
  ],
  ['a constraint failure at its statement', [{ sql: "INSERT INTO t (name) VALUES ('e')" }, { sql: "INSERT INTO t (name) VALUES ('a')" }]],
  ['a statement SQLite refuses', ['SELECT nope FROM t']],
  ['an argument no database takes', [{ sql: 'SELECT ?', args: [Number.NaN] }]],
  ['an unsafe integer read back', ['SELECT 9007199254740993']],
];

describe('a write batch through the one writer', () => {
  it.each(BATCHES)('answers as the batch runner does: %s', async (_, statements) => {
    const expected = await outcome((s) => alone.writeBatch(s), statements);
    const actual = await outcome((s) => remote.write(s), statements);
    expect(actual).toEqual(expected);
  });

  it('is all or nothing: a failing batch leaves nothing written, the next one commits', async () => {
    await expect(remote.write(["INSERT INTO t (name) VALUES ('f')", "INSERT INTO t (name) VALUES ('a')"])).rejects.toThrow(/UNIQUE/);
    await remote.write(["INSERT INTO t (name) VALUES ('g')"]);
    const names = (await client.execute('SELECT name FROM t ORDER BY id')).rows.map((r) => r.name);
    expect(names).toEqual(['a', 'b', 'g']);
  });

  it('fails saying nothing was written when the channel cannot carry it', async () => {
    const closed = new SharedWriterClient((_, done) => done(new Error('channel closed')));
    await expect(closed.write(["INSERT INTO t (name) VALUES ('h')"])).rejects.toThrow(
      /cannot be reached \(channel closed\): nothing was written/,
    );
  });

  it('fails the batches in flight when the writer goes', async () => {
    const silent = new SharedWriterClient((_, done) => done(null));
    const pending = silent.write(["INSERT INTO t (name) VALUES ('i')"]);
    await new Promise((resolve) => setImmediate(resolve));
    silent.failAll(new Error('the cluster primary has gone'));
    await expect(pending).rejects.toThrow('the cluster primary has gone');
  });
});
