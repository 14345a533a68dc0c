// Group commit (db/group-commit.ts) against the write path it replaces: the
// same random histories of concurrent claims and deletes, written the way the
// write model writes them (commitGuarded: compare-and-swap on a generation,
// a racing insert, a capacity guard, a statement that fails on its own),
// through a store whose write batches each commit alone and a store whose
// concurrent batches share commits. Every write's answer (its results, the
// race it lost, or its error and statement index) and the final rows must be
// the same, and the shared store must really have shared commits.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Client, createClient, type InStatement } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BatchConnection, createDataStore, type DataStore } from '../../src/db/client.js';
import { openBatchRunner } from '../../src/db/node-batches.js';
import { openSharedWriter, SharedWriterClient, SharedWriterService, type WriteRequest } from '../../src/db/shared-writer.js';
import { commitGuarded, guard, LostRace, stmt, withRaceRetries } from '../../src/db/write-batch.js';
import { mulberry32 } from '../helpers/random.js';

// Both bugs it was checked against (a failing batch not rolled back to its savepoint; a group
// run out of order) fail it within the first two histories; GROUP_COMMIT_HISTORIES widens a run by hand.
const HISTORIES = Number(process.env.GROUP_COMMIT_HISTORIES ?? 500);
const PROVIDERS = 4;
const CONSUMERS = 12;

const SCHEMA = [
  'CREATE TABLE providers (id INTEGER PRIMARY KEY, generation INTEGER NOT NULL, capacity INTEGER NOT NULL, used INTEGER NOT NULL CHECK (used >= 0))',
  'CREATE TABLE allocations (consumer TEXT PRIMARY KEY, provider INTEGER NOT NULL REFERENCES providers (id), amount INTEGER NOT NULL CHECK (amount > 0))',
];

interface Side {
  client: Client;
  store: DataStore;
  /** Batches per shared commit (the grouped side only). */
  groupSizes: number[];
}

let dir: string;
let alone: Side;
let grouped: Side;
let shared: Side;

async function open(name: string, group: boolean): Promise<Side> {
  const path = join(dir, `${name}.db`);
  const client = createClient({ url: `file:${path}` });
  await client.execute('PRAGMA journal_mode=WAL');
  await client.batch(SCHEMA, 'write');
  const runner = openBatchRunner(path, 5000);
  const groupSizes: number[] = [];
  const connection: BatchConnection = group
    ? {
        ...runner,
        writeGroup: (batches: InStatement[][]) => {
          groupSizes.push(batches.length);
          return runner.writeGroup(batches);
        },
      }
    : { readBatch: runner.readBatch, writeBatch: runner.writeBatch, close: runner.close };
  return { client, store: createDataStore(client, connection), groupSizes };
}

/**
 * A server process of a cluster whose writes go to the one writer
 * (db/shared-writer.ts): its messages and the writer's replies cross a JSON
 * round trip, as over node:cluster's channel, each reply a turn later.
 * `groupSizes`: write batches per message sent.
 */
async function openShared(name: string): Promise<Side> {
  const path = join(dir, `${name}.db`);
  const client = createClient({ url: `file:${path}` });
  await client.execute('PRAGMA journal_mode=WAL');
  await client.batch(SCHEMA, 'write');
  const reads = openBatchRunner(path, 5000);
  const writer = openSharedWriter(path, 5000);
  const service = new SharedWriterService(Promise.resolve(writer));
  const groupSizes: number[] = [];
  const sender: SharedWriterClient = new SharedWriterClient((msg, done) => {
    groupSizes.push(msg.batches.length);
    const request = JSON.parse(JSON.stringify(msg)) as WriteRequest;
    void service.receive('server-1', request, (reply) => setImmediate(() => sender.receive(JSON.parse(JSON.stringify(reply)))));
    done(null);
  });
  const connection: BatchConnection = {
    readBatch: reads.readBatch,
    writeBatch: (statements) => sender.write(statements),
    writerElsewhere: true,
    close: () => {
      reads.close();
      writer.close();
    },
  };
  return { client, store: createDataStore(client, connection), groupSizes };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'group-commit-'));
  alone = await open('alone', false);
  grouped = await open('grouped', true);
  shared = await openShared('shared');
});

afterAll(() => {
  alone?.store.close();
  grouped?.store.close();
  shared?.store.close();
  rmSync(dir, { recursive: true, force: true });
});

type Op =
  | { kind: 'claim'; consumer: string; provider: number; amount: number }
  | { kind: 'delete'; consumer: string }
  /** A write that fails on its own (a CHECK constraint, not a race): its error reaches the caller. */
  | { kind: 'bad'; consumer: string; provider: number }
  /** A write that reads back in its batch what the batches before it in the same commit wrote. */
  | { kind: 'count'; provider: number };

function history(random: () => number): Op[][] {
  const waves: Op[][] = [];
  const waveCount = 1 + Math.floor(random() * 4);
  for (let w = 0; w < waveCount; w += 1) {
    const ops: Op[] = [];
    const size = 1 + Math.floor(random() * 14);
    for (let i = 0; i < size; i += 1) {
      const consumer = `c${Math.floor(random() * CONSUMERS)}`;
      const provider = 1 + Math.floor(random() * PROVIDERS);
      const roll = random();
      if (roll < 0.55) ops.push({ kind: 'claim', consumer, provider, amount: 1 + Math.floor(random() * 6) });
      else if (roll < 0.85) ops.push({ kind: 'delete', consumer });
      else if (roll < 0.92) ops.push({ kind: 'bad', consumer, provider });
      else ops.push({ kind: 'count', provider });
    }
    waves.push(ops);
  }
  return waves;
}

/** What the caller of a write sees: its results, the race it lost, or its error. */
async function answer(write: () => Promise<unknown[]>): Promise<unknown> {
  try {
    return { results: await write() };
  } catch (err) {
    if (err instanceof LostRace) return { lostRace: err.statement };
    const { code, statementIndex, message } = err as { code?: string; statementIndex?: number; message?: string };
    return { error: code, statementIndex, message };
  }
}

const seen = (rs: { rowsAffected: number; lastInsertRowid?: bigint; rows: ArrayLike<unknown>[] }) => ({
  rowsAffected: rs.rowsAffected,
  lastInsertRowid: rs.lastInsertRowid === undefined ? undefined : String(rs.lastInsertRowid),
  rows: rs.rows.map((row) => Array.from(row)),
});

/** One operation as the write model runs it: read, decide, one guarded write batch (no retry: its answer is compared). */
async function perform(store: DataStore, op: Op): Promise<unknown> {
  if (op.kind === 'claim') {
    const [read] = await store.readBatch([{ sql: 'SELECT generation, used, capacity FROM providers WHERE id = ?', args: [op.provider] }]);
    const [generation, used, capacity] = Array.from(read!.rows[0]!) as number[];
    if (used! + op.amount > capacity!) return { refused: 'capacity' };
    return answer(async () =>
      (
        await commitGuarded(store, [
          stmt(
            'UPDATE providers SET generation = generation + 1, used = used + ? WHERE id = ? AND generation = ?',
            [op.amount, op.provider, generation!],
            {
              mustChange: true,
            },
          ),
          stmt('INSERT INTO allocations (consumer, provider, amount) VALUES (?, ?, ?)', [op.consumer, op.provider, op.amount], {
            racing: true,
          }),
          guard('(SELECT used FROM providers WHERE id = ?) <= (SELECT capacity FROM providers WHERE id = ?)', [op.provider, op.provider]),
        ])
      ).map(seen),
    );
  }
  if (op.kind === 'delete') {
    const [read] = await store.readBatch([
      {
        sql: 'SELECT a.provider, a.amount, p.generation FROM allocations a JOIN providers p ON p.id = a.provider WHERE a.consumer = ?',
        args: [op.consumer],
      },
    ]);
    const row = read!.rows[0];
    if (!row) return { absent: true };
    const [provider, amount, generation] = Array.from(row) as number[];
    return answer(async () =>
      (
        await commitGuarded(store, [
          stmt('DELETE FROM allocations WHERE consumer = ?', [op.consumer], { mustChange: true }),
          stmt(
            'UPDATE providers SET used = used - ?, generation = generation + 1 WHERE id = ? AND generation = ?',
            [amount!, provider!, generation!],
            {
              mustChange: true,
            },
          ),
        ])
      ).map(seen),
    );
  }
  if (op.kind === 'bad') {
    return answer(async () =>
      (
        await commitGuarded(store, [
          stmt('UPDATE providers SET generation = generation + 1 WHERE id = ?', [op.provider]),
          stmt('INSERT INTO allocations (consumer, provider, amount) VALUES (?, ?, 0)', [`${op.consumer}-bad`, op.provider]),
        ])
      ).map(seen),
    );
  }
  return answer(async () =>
    (
      await commitGuarded(store, [
        stmt('UPDATE providers SET generation = generation + 1 WHERE id = ?', [op.provider], { mustChange: true }),
        stmt('SELECT count(*), coalesce(sum(amount), 0) FROM allocations WHERE provider = ?', [op.provider]),
        stmt('SELECT generation, used FROM providers ORDER BY id'),
      ])
    ).map(seen),
  );
}

async function run(
  side: Side,
  waves: Op[][],
  capacities: number[],
): Promise<{ answers: unknown[]; providers: unknown[]; allocations: unknown[] }> {
  const { store } = side;
  await store.writeBatch([
    'DELETE FROM allocations',
    'DELETE FROM providers',
    ...capacities.map((capacity, i) => ({
      sql: 'INSERT INTO providers (id, generation, capacity, used) VALUES (?, 0, ?, 0)',
      args: [i + 1, capacity],
    })),
  ]);
  const answers: unknown[] = [];
  // Every operation of a wave reads before any of them writes (as concurrent
  // requests read in the same turn of the loop), in both stores alike; a wave
  // starts once the last one's writes have all been answered.
  for (const ops of waves) answers.push(...(await Promise.all(ops.map((op) => perform(store, op)))));
  const rows = async (sql: string) => (await side.client.execute(sql)).rows.map((row) => Array.from(row));
  return {
    answers,
    providers: await rows('SELECT id, generation, capacity, used FROM providers ORDER BY id'),
    allocations: await rows('SELECT consumer, provider, amount FROM allocations ORDER BY consumer'),
  };
}

describe('group commit against a commit per write batch', () => {
  it(`answers every write and leaves the same rows over ${HISTORIES} random concurrent claim/delete histories`, async () => {
    const answered = { granted: 0, lostRace: 0, error: 0 };
    for (let seed = 1; seed <= HISTORIES; seed += 1) {
      const random = mulberry32(seed);
      const capacities = Array.from({ length: PROVIDERS }, () => 3 + Math.floor(random() * 12));
      const waves = history(random);
      const expected = await run(alone, waves, capacities);
      const actual = await run(grouped, waves, capacities);
      if (JSON.stringify(actual) !== JSON.stringify(expected)) expect({ seed, ...actual }).toEqual({ seed, ...expected });
      // Through the one writer of a cluster's server processes: the same answers, errors and rows.
      const throughWriter = await run(shared, waves, capacities);
      if (JSON.stringify(throughWriter) !== JSON.stringify(expected)) expect({ seed, ...throughWriter }).toEqual({ seed, ...expected });
      for (const a of expected.answers as Record<string, unknown>[]) {
        if ('results' in a) answered.granted += 1;
        else if ('lostRace' in a) answered.lostRace += 1;
        else if ('error' in a) answered.error += 1;
      }
    }
    // Every kind of answer was compared, and commits were really shared.
    expect(answered.granted).toBeGreaterThan(HISTORIES);
    expect(answered.lostRace).toBeGreaterThan(HISTORIES / 4);
    expect(answered.error).toBeGreaterThan(HISTORIES / 10);
    expect(grouped.groupSizes.filter((n) => n > 1).length).toBeGreaterThan(HISTORIES / 2);
    expect(Math.max(...grouped.groupSizes)).toBeGreaterThan(5);
    expect(shared.groupSizes.filter((n) => n > 1).length).toBeGreaterThan(HISTORIES / 2);
  }, 300_000);
});

/** A claim as the write model makes it, retried after each lost race: read the generation, decide, compare-and-swap. */
async function claimWithRetries(store: DataStore, consumer: string, provider: number, amount: number): Promise<string> {
  try {
    return await withRaceRetries(async () => {
      const [read] = await store.readBatch([{ sql: 'SELECT generation, used, capacity FROM providers WHERE id = ?', args: [provider] }]);
      const [generation, used, capacity] = Array.from(read!.rows[0]!) as number[];
      if (used! + amount > capacity!) return 'refused';
      await commitGuarded(store, [
        stmt(
          'UPDATE providers SET generation = generation + 1, used = used + ? WHERE id = ? AND generation = ?',
          [amount, provider, generation!],
          {
            mustChange: true,
          },
        ),
        stmt('INSERT INTO allocations (consumer, provider, amount) VALUES (?, ?, ?)', [consumer, provider, amount], { racing: true }),
      ]);
      return 'granted';
    });
  } catch (err) {
    return err instanceof Error ? err.name : String(err);
  }
}

describe('group commit under contention on one provider', () => {
  it('grants every one of N concurrent claims that fit, retried after lost races, as a commit per batch does', async () => {
    for (const claims of [2, 8, 32, 64, 100]) {
      const outcomes: Record<string, unknown> = {};
      for (const [name, side] of [
        ['alone', alone],
        ['grouped', grouped],
      ] as const) {
        await side.store.writeBatch([
          'DELETE FROM allocations',
          'DELETE FROM providers',
          'INSERT INTO providers (id, generation, capacity, used) VALUES (1, 0, 1000, 0)',
        ]);
        const before = side.groupSizes.length;
        const answers = await Promise.all(Array.from({ length: claims }, (_, i) => claimWithRetries(side.store, `c${i}`, 1, 3)));
        const rows = async (sql: string) => (await side.client.execute(sql)).rows.map((row) => Array.from(row));
        outcomes[name] = {
          answers,
          providers: await rows('SELECT id, generation, capacity, used FROM providers'),
          allocations: await rows('SELECT consumer, provider, amount FROM allocations ORDER BY consumer'),
        };
        // The first attempts really met in shared commits (and lost to each other there).
        if (name === 'grouped' && claims > 1) expect(Math.max(...side.groupSizes.slice(before))).toBeGreaterThan(1);
      }
      expect(outcomes.grouped).toEqual(outcomes.alone);
      expect(outcomes.grouped).toMatchObject({ answers: Array(claims).fill('granted'), providers: [[1, claims, 1000, 3 * claims]] });
    }
  }, 120_000);
});
