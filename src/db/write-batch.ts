// The write model (docs/write-model.md): read everything a write depends on in ONE
// read batch, decide in TypeScript, then commit in ONE atomic write batch
// whose statements are guarded by what was read. Each batch is one round
// trip to libSQL, a network hop at the edge; an interactive transaction would
// cost one hop per statement.
//
// Guards: an UPDATE ... WHERE generation = <read value> (compare-and-swap)
// is followed by a statement that fails when it changed no row, which aborts
// and rolls back the whole batch. A statement may also be marked as racing
// (an INSERT of a row the read found absent: a concurrent writer makes it
// fail its UNIQUE constraint), or be a check (guard() below: a condition on
// the data as of the write, e.g. "the parent still exists"). Any of these
// failures means another writer got in
// between the read and the write: the caller re-reads and decides again, a
// bounded number of times, so a write is serialisable without holding a lock
// across round trips.
// Types only: the Worker bundle must not pull in the Node client.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import type { DataStore } from './client.js';
import type { DbWatch } from './client.js';

/** A statement of a guarded write batch. */
export interface WriteStatement {
  sql: string;
  args: InValue[];
  /** The batch aborts (lost race) unless this statement changed at least one row. */
  mustChange?: boolean;
  /** Any constraint failure of this statement means a concurrent writer got in first (lost race). */
  racing?: boolean;
  /** A check built by guard(): any failure of it means the data changed since the read (lost race). */
  check?: boolean;
}

export const stmt = (sql: string, args: InValue[] = [], flags: Pick<WriteStatement, 'mustChange' | 'racing'> = {}): WriteStatement => ({
  sql,
  args,
  ...flags,
});

/**
 * A statement that aborts the batch (lost race) unless `condition`, an SQL
 * boolean expression over the data as of the write, holds: what the decision
 * relied on and no generation covers (a row still there, no row added).
 */
export const guard = (condition: string, args: InValue[] = []): WriteStatement => prebuiltGuard(guardSql(condition), args);

/**
 * The SQL text of guard(condition), for a caller that builds it once and sends it many times.
 * Its column is named: unnamed, SQLite names it after the whole expression, a name the one
 * writer sends back and compares with every result of a claim (db/shared-writer.ts).
 */
export const guardSql = (condition: string): string => `SELECT json(CASE WHEN (${condition}) THEN '0' ELSE 'lost race' END) AS holds`;

/** guard() with a text from guardSql(). */
export const prebuiltGuard = (sql: string, args: InValue[] = []): WriteStatement => ({ sql, args, check: true });

// Fails ("malformed JSON") exactly when the previous statement changed no row.
// changes() is per connection and a batch runs on one connection, in order.
const CHANGED_GUARD = "SELECT json(CASE WHEN changes() = 0 THEN 'lost race' ELSE '0' END) AS changed";

/** Runs functions one at a time, in arrival order (the store's Mutex). */
export interface Turns {
  run<T>(fn: () => Promise<T>): Promise<T>;
}

/** Another writer changed what this write was decided on; re-read and decide again. */
export class LostRace extends Error {
  /**
   * `watch`: the store's, told when the write is decided again. `retryTurns`:
   * the store's, through which the write's further attempts take turns.
   */
  constructor(
    readonly statement: string,
    readonly watch?: DbWatch,
    readonly retryTurns?: Turns,
  ) {
    super(`lost a write race at: ${statement}`);
    this.name = 'LostRace';
  }
}

/** Retries were exhausted: the data kept changing under this write. */
export class WriteContention extends Error {
  constructor(readonly attempts: number) {
    super(`the data changed concurrently ${attempts} times in a row`);
    this.name = 'WriteContention';
  }
}

/**
 * Runs `statements` as one atomic write batch with their guards. Returns the
 * result of each given statement (guards left out). Throws LostRace when a
 * guard fired; every other failure is rethrown as is. Nothing is written
 * unless everything is.
 */
export async function commitGuarded(store: DataStore, statements: WriteStatement[]): Promise<ResultSet[]> {
  const batch: InStatement[] = [];
  const owner: number[] = []; // batch index -> index in `statements` (-1: a guard of the statement before)
  statements.forEach((s, i) => {
    batch.push({ sql: s.sql, args: s.args });
    owner.push(i);
    if (s.mustChange) {
      batch.push(CHANGED_GUARD);
      owner.push(-1 - i);
    }
  });
  let results: ResultSet[];
  try {
    results = await store.writeBatch(batch);
  } catch (err) {
    const index = failedStatementIndex(err);
    if (index !== undefined && index < owner.length) {
      const at = owner[index]!;
      if (at < 0) throw new LostRace(statements[-1 - at]!.sql, store.watch, store.retryTurns);
      const failed = statements[at]!;
      if (failed.check || (failed.racing && isConstraintFailure(err))) throw new LostRace(failed.sql, store.watch, store.retryTurns);
    }
    throw err;
  }
  return results.filter((_, i) => owner[i]! >= 0);
}

function isConstraintFailure(err: unknown): boolean {
  const code = err && typeof err === 'object' && 'code' in err ? String(err.code) : '';
  const message = err instanceof Error ? err.message : '';
  return code.startsWith('SQLITE_CONSTRAINT') || /constraint failed/i.test(message);
}

function failedStatementIndex(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'statementIndex' in err && typeof err.statementIndex === 'number') {
    return err.statementIndex;
  }
  return undefined;
}

/** How many times a write is decided again after losing a race before giving up. */
export const MAX_WRITE_ATTEMPTS = 8;

/**
 * Runs `attempt` (read, decide, commitGuarded) until it does not lose a race,
 * at most MAX_WRITE_ATTEMPTS times; then WriteContention. Domain errors from
 * the decision pass through on the first attempt that raises them.
 *
 * After a loss, the attempts run through the store's retry turns: the writes
 * of this process that lost a race read, decide and commit one after another,
 * so they no longer race each other. Without that, N writes on one provider
 * decided in one turn of the event loop (or committed in one shared commit,
 * db/group-commit.ts) leave N-1 losers that re-read together and lose
 * together again, one winner a round, until some give up. Within a turn a
 * retry can lose only to a first attempt or another process. An attempt must
 * not run withRaceRetries on the same store inside itself (the turns are not
 * reentrant).
 */
export async function withRaceRetries<T>(attempt: () => Promise<T>): Promise<T> {
  let turns: Turns | undefined;
  for (let tries = 1; ; tries += 1) {
    try {
      return await (turns ? turns.run(attempt) : attempt());
    } catch (err) {
      if (!(err instanceof LostRace)) throw err;
      err.watch?.lostRace(err.statement);
      turns ??= err.retryTurns;
      if (tries >= MAX_WRITE_ATTEMPTS) throw new WriteContention(tries);
      // A little jitter so two losers do not collide again in lockstep.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * tries));
    }
  }
}

/** `?, ?, ?` for an IN list of `n` values (n >= 1). */
export const placeholders = (n: number): string => Array.from({ length: n }, () => '?').join(', ');

/** The inside of `IN (...)` for these values: their placeholders, or NULL (matches nothing) when there are none. */
export const inList = (values: readonly unknown[]): string => (values.length > 0 ? placeholders(values.length) : 'NULL');
