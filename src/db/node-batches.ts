// Node mode's read and write batches on an embedded file, on a connection of
// their own that keeps its prepared statements.
//
// @libsql/client's embedded driver prepares every statement anew, probes
// whether it returns rows by catching an exception, and builds each row with
// one defineProperty per column: in a claim (about 15 short statements) that
// was a third of the server's CPU. The write model (db/write-batch.ts) sends
// the same few statement texts over and over, so a prepared-statement cache
// pays off at once. Results keep @libsql/client's shapes (ResultSet, Row,
// LibsqlBatchError with statementIndex, number integers that throw when
// unsafe) so callers cannot tell the two apart.
//
// Only for a file database: an in-memory one exists on one connection only.
import { LibsqlBatchError, LibsqlError, type InArgs, type InStatement, type InValue, type ResultSet, type Row } from '@libsql/client';
import Database from 'libsql';
import type { GroupOutcome } from './group-commit.js';
import { resultSet, rowFactory } from './client.js';

type Connection = InstanceType<typeof Database>;
type Prepared = ReturnType<Connection['prepare']>;

interface CachedStatement {
  statement: Prepared;
  /** Present when the statement returns rows. */
  makeRow?: (values: unknown[]) => Row;
  columns: string[];
  columnTypes: string[];
}

/**
 * When a commit reaches the disk (SQLite's synchronous, in WAL mode):
 * normal, a commit survives the process's crash and the WAL is synced at
 * checkpoints, so the OS crashing or the power failing may lose the last
 * commits; full, every COMMIT is synced before it returns (one fsync per
 * commit, which group commit shares among the batches of a group).
 */
export type Synchronous = 'normal' | 'full';

export const synchronousPragma = (mode: Synchronous): string => `PRAGMA synchronous=${mode === 'full' ? 'FULL' : 'NORMAL'}`;

/** Distinct statement texts kept prepared; the write model uses a few dozen. */
const CACHE_LIMIT = 512;

export interface BatchRunner {
  readBatch(statements: InStatement[]): Promise<ResultSet[]>;
  writeBatch(statements: InStatement[]): Promise<ResultSet[]>;
  /**
   * The batches in one transaction and one COMMIT, each in a SAVEPOINT of its
   * own: one outcome per batch, in order, each what it would have been had
   * the batch run alone after the ones before it (db/group-commit.ts).
   */
  writeGroup(batches: InStatement[][]): Promise<GroupOutcome[]>;
  close(): void;
}

/**
 * A connection to `path` whose batches run on cached prepared statements.
 * A batch runs synchronously, start to finish, so nothing else in this
 * process interleaves with it.
 *
 * When another process (the other server processes of a PLACEMENT_WORKERS
 * cluster) holds SQLite's write lock, the batch is tried again
 * asynchronously until `busyTimeoutMs` has passed: SQLite's own busy handler
 * would sleep the whole event loop for 1 ms and more on every collision,
 * when the other writer needs well under a millisecond.
 */
export function openBatchRunner(
  path: string,
  busyTimeoutMs: number,
  { synchronous = 'normal' }: { synchronous?: Synchronous } = {},
): BatchRunner {
  const db = new Database(path, { timeout: 0 } as ConstructorParameters<typeof Database>[1]);
  db.exec(synchronousPragma(synchronous));
  // Checkpoint (copy the WAL back into the file, with an fsync) every ~40 MB
  // of WAL instead of SQLite's 4 MB: claims rewrite the same hot pages, so a
  // checkpoint ten times rarer copies far fewer pages in all, and the write
  // lock a claim holds through COMMIT is held about half as long
  // (docs/performance.md#figures-behind-the-code).
  db.exec('PRAGMA wal_autocheckpoint=10000');
  // Per statement text, its prepared statements by how many positional
  // arguments a batch passes (index count + 1; 0: named arguments). A prepared
  // statement keeps its bindings from one run to the next, and a run binds
  // only the positional arguments it is given: sent with one argument fewer,
  // it would bind the last run's value where @libsql/client (a statement
  // prepared anew each time) binds NULL. A statement only ever run with the
  // same count rebinds every argument it ever bound; libsql binds every named
  // parameter of a run, NULL when absent.
  const cache = new Map<string, CachedStatement[]>();

  const prepared = (sql: string, slot: number): CachedStatement => {
    const hit = cache.get(sql);
    if (hit) {
      // Least recently used goes first: re-insert on use.
      cache.delete(sql);
      cache.set(sql, hit);
      const entry = hit[slot];
      if (entry) return entry;
    }
    const statement = db.prepare(sql);
    statement.safeIntegers(true);
    let entry: CachedStatement = { statement, columns: [], columnTypes: [] };
    if (statement.reader) {
      statement.raw(true);
      const defs = statement.columns();
      const columns = defs.map((d) => d.name);
      entry = { statement, columns, columnTypes: defs.map((d) => d.type ?? ''), makeRow: rowFactory(columns) };
    }
    if (hit) hit[slot] = entry;
    else {
      const bySlot: CachedStatement[] = [];
      bySlot[slot] = entry;
      cache.set(sql, bySlot);
      if (cache.size > CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    }
    return entry;
  };

  const run = (sql: string, args: unknown[] | Record<string, unknown>): ResultSet => {
    const { statement, makeRow, columns, columnTypes } = prepared(sql, Array.isArray(args) ? args.length + 1 : 0);
    if (makeRow) {
      const rows = (statement.all(args) as unknown[][]).map((values) => makeRow(values.map(fromSql)));
      return resultSet(columns, columnTypes, rows, 0, undefined);
    }
    const info = statement.run(args);
    return resultSet([], [], [], info.changes, BigInt(info.lastInsertRowid));
  };

  const runAll = (statements: InStatement[]): ResultSet[] => {
    const results: ResultSet[] = [];
    for (let i = 0; i < statements.length; i += 1) {
      const s = statements[i]!;
      const [sql, args] = typeof s === 'string' ? [s, []] : [s.sql, argsOf(s.args)];
      try {
        results.push(run(sql, args));
      } catch (err) {
        throw batchError(err, i);
      }
    }
    return results;
  };

  const batch = (begin: string, statements: InStatement[]): ResultSet[] => {
    execute(begin);
    try {
      const results = runAll(statements);
      execute('COMMIT');
      return results;
    } finally {
      rollbackIfOpen();
    }
  };

  // A failed ROLLBACK (SQLite has already rolled back on some errors) must
  // not hide the error that made the batch fail.
  function rollbackIfOpen(): void {
    if (!db.inTransaction) return;
    try {
      execute('ROLLBACK');
    } catch {
      // the batch's own outcome is what the caller needs
    }
  }

  /**
   * The batches under one BEGIN IMMEDIATE ... COMMIT, each in a savepoint: a
   * failing batch is rolled back to its savepoint and answers its own error;
   * the others go on. Undefined when the group cannot commit as a whole (its
   * COMMIT failed, or an error ended the whole transaction, as SQLITE_FULL
   * may): nothing of it is written then. Throws SQLITE_BUSY (nothing written)
   * when another process holds the write lock.
   */
  const group = (batches: InStatement[][]): GroupOutcome[] | undefined => {
    execute('BEGIN IMMEDIATE');
    try {
      const outcomes: GroupOutcome[] = [];
      for (const statements of batches) {
        execute('SAVEPOINT grouped_batch');
        try {
          outcomes.push({ results: runAll(statements) });
          execute('RELEASE grouped_batch');
        } catch (err) {
          if (isBusy(err)) throw err;
          if (!db.inTransaction) return undefined;
          execute('ROLLBACK TO grouped_batch');
          execute('RELEASE grouped_batch');
          outcomes.push({ error: err });
        }
      }
      try {
        execute('COMMIT');
      } catch (err) {
        if (isBusy(err)) throw err;
        return undefined;
      }
      return outcomes;
    } finally {
      rollbackIfOpen();
    }
  };

  function execute(sql: string): void {
    try {
      prepared(sql, 1).statement.run([]);
    } catch (err) {
      throw libsqlError(err);
    }
  }

  const retryWhileBusy = async <T>(attempt: () => T): Promise<T> => {
    const started = performance.now();
    for (let tries = 0; ; tries += 1) {
      try {
        return attempt();
      } catch (err) {
        if (!isBusy(err) || performance.now() - started > busyTimeoutMs) throw err;
        // The other writer is usually done within a turn or two of the loop.
        await (tries < 16 ? new Promise((resolve) => setImmediate(resolve)) : new Promise((resolve) => setTimeout(resolve, 1)));
      }
    }
  };

  const writeBatch = (statements: InStatement[]) => retryWhileBusy(() => batch('BEGIN IMMEDIATE', statements));

  /** A group that cannot commit as a whole runs again one batch at a time, so each gets the answer it would have had alone. */
  const writeAlone = async (batches: InStatement[][]): Promise<GroupOutcome[]> => {
    const outcomes: GroupOutcome[] = [];
    for (const statements of batches) {
      try {
        outcomes.push({ results: await writeBatch(statements) });
      } catch (error) {
        outcomes.push({ error });
      }
    }
    return outcomes;
  };

  return {
    readBatch: (statements) => retryWhileBusy(() => batch('BEGIN TRANSACTION READONLY', statements)),
    writeBatch,
    writeGroup: async (batches) => {
      if (batches.length === 1) return writeAlone(batches);
      let shared: GroupOutcome[] | undefined;
      try {
        shared = await retryWhileBusy(() => group(batches));
      } catch (error) {
        // The write lock did not come within the busy timeout: each batch would have waited as long in vain.
        if (isBusy(error)) return batches.map(() => ({ error }));
        // BEGIN itself failed: each batch on its own finds out why.
      }
      return shared ?? writeAlone(batches);
    },
    close: () => {
      cache.clear();
      if (db.open) db.close();
    },
  };
}

/** Positional arguments, or named ones without their prefix (`:name` binds as `name`), as the client binds them. */
function argsOf(args: InArgs | undefined): unknown[] | Record<string, unknown> {
  if (args === undefined) return [];
  if (Array.isArray(args)) return args.map(toSql);
  const named: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) named[/^[@$:]/.test(name) ? name.slice(1) : name] = toSql(value);
  return named;
}

function toSql(value: InValue): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw new RangeError('Only finite numbers (not Infinity or NaN) can be passed as arguments');
  }
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (value instanceof Date) return value.valueOf();
  if (value === undefined) throw new TypeError('undefined cannot be passed as argument to the database');
  return value;
}

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

function fromSql(value: unknown): unknown {
  if (typeof value === 'bigint') {
    if (value < MIN_SAFE || value > MAX_SAFE) {
      throw new RangeError('Received integer which cannot be safely represented as a JavaScript number');
    }
    return Number(value);
  }
  if (value instanceof Buffer) return value.buffer;
  return value;
}

interface SqliteFailure {
  message: string;
  code?: string;
  rawCode?: number;
}

const isSqliteFailure = (err: unknown): err is Error & SqliteFailure => err instanceof Error && 'rawCode' in err;

function libsqlError(err: unknown): unknown {
  if (!isSqliteFailure(err)) return err;
  return new LibsqlError(err.message, baseCode(err.rawCode), err.code, err.rawCode, err);
}

/** The whole batch was rolled back because another connection held a lock it needed. */
const isBusy = (err: unknown): boolean => err instanceof LibsqlError && (err.code === 'SQLITE_BUSY' || err.code === 'SQLITE_LOCKED');

function batchError(err: unknown, index: number): unknown {
  if (!isSqliteFailure(err)) return err;
  return new LibsqlBatchError(err.message, index, baseCode(err.rawCode), err.code, err.rawCode, err);
}

const BASE_CODES: Record<number, string> = {
  1: 'SQLITE_ERROR',
  5: 'SQLITE_BUSY',
  6: 'SQLITE_LOCKED',
  8: 'SQLITE_READONLY',
  10: 'SQLITE_IOERR',
  11: 'SQLITE_CORRUPT',
  13: 'SQLITE_FULL',
  14: 'SQLITE_CANTOPEN',
  19: 'SQLITE_CONSTRAINT',
  20: 'SQLITE_MISMATCH',
  25: 'SQLITE_RANGE',
};

/** Extended codes are base | (extended << 8). */
function baseCode(rawCode: number | undefined): string {
  if (rawCode === undefined) return 'SQLITE_UNKNOWN';
  const base = rawCode & 0xff;
  return BASE_CODES[base] ?? `SQLITE_UNKNOWN_${base}`;
}
