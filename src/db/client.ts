// The database handle shared by every repo. `Db` is either the top-level
// drizzle database or a transaction; repos accept both so callers can compose
// several repo calls into one atomic write.
import type { Client, InStatement, ResultSet, Row } from '@libsql/client';
import { drizzle, type LibSQLDatabase } from 'drizzle-orm/libsql';
import { clientWithDeadlines, type DatabaseDeadline, readsWithDeadline } from './deadline.js';
import { CommitGroups, type GroupOutcome } from './group-commit.js';
import { markOf, RAISE_WRITE_MARK, RAISE_WRITE_MARK_SQL, ReplicaReader, type ReplicaOptions, WriteMarks } from './replica.js';
import * as schema from './schema/index.js';
import { type StorageLog, storageFullWatch } from './storage-full.js';

export type Schema = typeof schema;
export type Database = LibSQLDatabase<Schema>;
export type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];
export type Db = Database | Tx;

/** A promise-chain mutex: callers run one after another, in arrival order. */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(fn, fn);
    this.tail = result.catch(() => undefined);
    return result;
  }
}

/** Anything that reads statements in one snapshot, one round trip (a DataStore does). */
export interface BatchReader {
  readBatch(statements: InStatement[]): Promise<ResultSet[]>;
}

/** A client's own read batches as a BatchReader (tests and tools that count its round trips). */
export const clientReader = (client: Client): BatchReader => ({ readBatch: (statements) => client.batch(statements, 'read') });

export interface DataStore extends BatchReader {
  db: Database;
  client: Client;
  /**
   * Runs fn in one write transaction (BEGIN IMMEDIATE). Writers inside this
   * process are serialised by a mutex because libSQL's busy wait blocks the
   * event loop; writers in other processes (the other server processes of a
   * PLACEMENT_WORKERS cluster, or any other program on the file) are ordered
   * by SQLite's lock plus the client's busy timeout. Throwing inside fn rolls
   * everything back.
   */
  writeTx<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * One round trip: the statements in one write transaction (BEGIN IMMEDIATE),
   * all or nothing. Queued behind writeTx's in-process lock, since an open
   * interactive transaction holds SQLite's write lock (see db/write-batch.ts).
   */
  writeBatch(statements: InStatement[]): Promise<ResultSet[]>;
  /**
   * Reads that may come from a replica near this instance (PLACEMENT_DB_READ_URL):
   * allocation candidates, the dashboard, the diagnostics. Never older than this
   * instance's own writes (db/replica.ts). Without a replica, the store itself.
   */
  nearby: BatchReader;
  /** The replica reader, where one is configured (its counts feed /metrics). */
  replica?: ReplicaReader;
  /** The mark of this instance's latest write (kept only while a replica is configured). */
  marks: WriteMarks;
  /** Where this store's operations and lost races are counted (the app's metrics, given by the composition root). */
  watch: DbWatch;
  /** The writes of this process that lost a race try again through these, one at a time (db/write-batch.ts). */
  retryTurns?: Mutex;
  /** The deadlines of a database reached over the network (db/deadline.ts); none for an embedded file. */
  deadline?: DatabaseDeadline;
  close(): void;
}

/** Runs batches on a connection of its own (Node mode's cached statements, db/node-batches.ts). */
export interface BatchConnection {
  readBatch(statements: InStatement[]): Promise<ResultSet[]>;
  writeBatch(statements: InStatement[]): Promise<ResultSet[]>;
  /** Where present, concurrent write batches share commits through it (db/group-commit.ts). */
  writeGroup?(batches: InStatement[][]): Promise<GroupOutcome[]>;
  /**
   * Set when writeBatch hands the batch to a writer that orders and groups
   * the writes itself (another process's, db/shared-writer.ts): the store
   * sends each at once instead of behind its in-process lock.
   */
  writerElsewhere?: boolean;
  close(): void;
}

// --- Results as the client shapes them ---------------------------------------
// Results in @libsql/client's shapes (ResultSet, Row) built cheaply, for the
// batch runners that bypass the client (db/node-batches.ts: Node mode's
// cached statements; db/hrana-reads.ts: the Worker's read batches), so
// callers cannot tell them from the client's own.
/**
 * Rows as @libsql/client makes them (named columns enumerable, indices and
 * length not), built from one shared prototype per statement instead of one
 * defineProperty per value.
 */
export function rowFactory(columns: string[]): (values: unknown[]) => Row {
  const plainNames = new Set(columns).size === columns.length && columns.every((c) => !/^\d+$/.test(c) && c !== 'length');
  if (!plainNames) return (values) => definedRow(values, columns);
  const proto: object = Object.create(Object.prototype);
  for (const [i, name] of columns.entries()) {
    Object.defineProperty(proto, i, {
      get(this: Record<string, unknown>) {
        return this[name];
      },
    });
  }
  Object.defineProperty(proto, 'length', { value: columns.length });
  return (values) => {
    const row = Object.create(proto) as Record<string, unknown>;
    for (let i = 0; i < columns.length; i += 1) row[columns[i]!] = values[i];
    return row as Row;
  };
}

/** @libsql/client's own construction, for duplicate or numeric column names. */
function definedRow(values: unknown[], columns: string[]): Row {
  const row = {};
  Object.defineProperty(row, 'length', { value: values.length });
  values.forEach((value, i) => {
    Object.defineProperty(row, i, { value });
    const column = columns[i]!;
    if (!Object.hasOwn(row, column)) Object.defineProperty(row, column, { value, enumerable: true, configurable: true, writable: true });
  });
  return row as Row;
}

export function resultSet(
  columns: string[],
  columnTypes: string[],
  rows: Row[],
  rowsAffected: number,
  lastInsertRowid: bigint | undefined,
): ResultSet {
  return {
    columns,
    columnTypes,
    rows,
    rowsAffected,
    lastInsertRowid,
    toJSON: () => ({
      columns,
      columnTypes,
      rows: rows.map((r) => Array.from(r as ArrayLike<unknown>, valueToJson)),
      rowsAffected,
      lastInsertRowid: lastInsertRowid?.toString() ?? null,
    }),
  };
}

function valueToJson(value: unknown): unknown {
  if (typeof value === 'bigint') return String(value);
  if (value instanceof ArrayBuffer) return base64Of(new Uint8Array(value));
  return value;
}

/** Bytes as base64, with what both runtimes have (no Node Buffer in a Worker). */
export function base64Of(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** A replica to read from, and how (see db/replica.ts). */
export interface ReplicaConnection extends ReplicaOptions {
  client: Client;
}

/**
 * `log` hears of a full disk under the database, once per episode (db/storage-full.ts).
 * With `deadline`, every call to the database is given up at its deadline (db/deadline.ts).
 */
export function createDataStore(
  rawClient: Client,
  rawBatches?: BatchConnection,
  replica?: ReplicaConnection,
  log?: StorageLog,
  deadline?: DatabaseDeadline,
): DataStore {
  const client = deadline ? clientWithDeadlines(rawClient, deadline) : rawClient;
  const batches = deadline && rawBatches ? readsWithDeadline(rawBatches, deadline) : rawBatches;
  const db = drizzle(client, { schema });
  const lock = new Mutex();
  const watch = new DbWatch();
  const watchWrite = storageFullWatch(log);
  // A write waits behind the lock and runs within one deadline, where there is one.
  const locked = <T>(send: () => Promise<T>): Promise<T> => (deadline ? deadline.queued(lock, send) : lock.run(send));
  const readBatch = batches ? (s: InStatement[]) => batches.readBatch(s) : (s: InStatement[]) => client.batch(s, 'read');
  const groups = batches?.writeGroup ? commitGroups(batches.writeGroup.bind(batches), locked, watch) : undefined;
  // Inside `locked`, which holds the write deadline: the raw client's batch, not timed twice.
  const runWriteBatch = groups
    ? (s: InStatement[]) => groups.write(s)
    : batches
      ? (s: InStatement[]) => batches.writeBatch(s)
      : (s: InStatement[]) => rawClient.batch(s, 'write');
  // With a replica, every write also raises the write mark and learns it (one
  // more statement, same round trip), so replica reads can tell whether they
  // are as fresh as our writes. Without one, writes are exactly as before.
  const marks = new WriteMarks();
  const writeBatch = replica
    ? async (statements: InStatement[]) => {
        const results = await runWriteBatch([...statements, RAISE_WRITE_MARK]);
        marks.raised(markOf(results[results.length - 1]));
        return results.slice(0, -1);
      }
    : runWriteBatch;
  const writeTx = replica
    ? <T>(fn: (tx: Tx) => Promise<T>) =>
        db.transaction(async (tx) => {
          const result = await fn(tx);
          marks.raised(markOf(await tx.run(RAISE_WRITE_MARK_SQL)));
          return result;
        })
    : <T>(fn: (tx: Tx) => Promise<T>) => db.transaction(fn);
  const timedRead = (statements: InStatement[]) => watch.timed('read_batch', () => readBatch(statements));
  const replicaReader = replica ? new ReplicaReader(replica.client, { readBatch: timedRead }, marks, replica, watch) : undefined;
  const store: DataStore = {
    db,
    client,
    writeTx: (fn) => watchWrite(locked(() => watch.timed('transaction', () => writeTx(fn)))),
    readBatch: timedRead,
    // Timed once the lock is held: the wait behind other writers is not the database's.
    // A shared commit takes the lock and is timed itself (commitGroups).
    writeBatch: groups
      ? (statements) => watchWrite(writeBatch(statements))
      : batches?.writerElsewhere
        ? (statements) => watchWrite(watch.timed('write_batch', () => writeBatch(statements)))
        : (statements) => watchWrite(locked(() => watch.timed('write_batch', () => writeBatch(statements)))),
    // Without a replica, the store itself, so the tree model kept per reader (candidates/cloud-model.ts) is shared.
    get nearby(): BatchReader {
      return replicaReader ?? store;
    },
    ...(replicaReader ? { replica: replicaReader } : {}),
    marks,
    watch,
    retryTurns: new Mutex(),
    ...(deadline ? { deadline } : {}),
    close: () => {
      batches?.close();
      rawClient.close();
      replica?.client.close();
    },
  };
  return store;
}

/**
 * Write batches that share commits: each group waits for the lock writeTx
 * holds (within the write deadline, where there is one), and counts as one write_batch per batch in it, each taking the
 * group's time (what its writer waited for).
 */
function commitGroups(
  writeGroup: (batches: InStatement[][]) => Promise<GroupOutcome[]>,
  locked: <T>(send: () => Promise<T>) => Promise<T>,
  watch: DbWatch,
): CommitGroups {
  return new CommitGroups((group) =>
    locked(async () => {
      const started = performance.now();
      try {
        return await writeGroup(group);
      } finally {
        const seconds = (performance.now() - started) / 1000;
        for (let i = 0; i < group.length; i += 1) watch.took('write_batch', seconds);
      }
    }),
  );
}

// --- What the store reports ---------------------------------------------------
// The database layer counts into the app's metrics (wired by the composition
// root): how long each operation took and which writes lost a race. db/
// imports nothing outside itself, so the metric families it is given are
// typed here by the little it calls on them (observability/registry.ts's
// shapes); one watch per store (DataStore.watch), so two apps in one
// process, each on its own store, count into their own metrics.

/** `replica_read_batch`: one read batch sent to the read replica (PLACEMENT_DB_READ_URL), answered or not. */
export type DbOperation = 'read_batch' | 'write_batch' | 'transaction' | 'replica_read_batch';

/** Who answered a read that could come from the replica (db/replica.ts). */
export type ReplicaReadOutcome = 'replica' | 'behind' | 'unavailable';

/** The metric families a store counts into (the app's Deps['metrics'] has them, by these names). */
export interface DbMetrics {
  /** Each operation's duration in seconds, finished or failed, by database system and operation. */
  dbDuration: { labels(system: string, operation: DbOperation): { observe(seconds: number): void } };
  /** Writes that lost a race and are decided again, by the table their losing statement writes ("check": a guard). */
  writeRetries: { inc(labels: [kind: string]): void };
  /** Reads that may come from the replica, by who answered: the replica, or the primary because the replica lagged behind this instance's writes (`behind`) or failed or rests after a failure (`unavailable`). */
  replicaReads: { inc(labels: [outcome: ReplicaReadOutcome]): void };
}

const WRITTEN_TABLE = /^\s*(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+[`"[]?(\w+)/i;

/** One store's reports, counted nowhere until the composition root gives it metrics (countInto). */
export class DbWatch {
  private metrics: DbMetrics | undefined;
  /** Each operation's duration series, kept once used: an observation is then one Map lookup. */
  private readonly durations = new Map<DbOperation, { observe(seconds: number): void }>();

  /** From now on, counts into `metrics`. */
  countInto(metrics: DbMetrics): void {
    this.metrics = metrics;
    this.durations.clear();
  }

  /** Runs `fn`, reporting its duration as one `name` operation. */
  async timed<T>(name: DbOperation, fn: () => Promise<T>): Promise<T> {
    if (!this.metrics) return fn();
    const started = performance.now();
    try {
      return await fn();
    } finally {
      this.took(name, (performance.now() - started) / 1000);
    }
  }

  /** Reports one `name` operation that took `seconds`. */
  took(name: DbOperation, seconds: number): void {
    const metrics = this.metrics;
    if (!metrics) return;
    let series = this.durations.get(name);
    if (!series) this.durations.set(name, (series = metrics.dbDuration.labels('sqlite', name)));
    series.observe(seconds);
  }

  /** Reports a lost race on the statement `sql`. */
  lostRace(sql: string): void {
    this.metrics?.writeRetries.inc([WRITTEN_TABLE.exec(sql)?.[1]?.toLowerCase() ?? 'check']);
  }

  /** Reports who answered one replica-eligible read. */
  replicaRead(outcome: ReplicaReadOutcome): void {
    this.metrics?.replicaReads.inc([outcome]);
  }
}
