// Reads from a libSQL replica near this instance (PLACEMENT_DB_READ_URL),
// never older than this instance's own writes, with the primary as fallback.
//
// How freshness is known: while a replica is configured, every write batch
// this instance sends to the primary also raises the one-row counter
// `placement_write_marks` and reads it back (same batch, same round trip), so
// the instance knows the mark of its latest write. A replica read carries one
// more statement, the replica's mark, in the same read transaction (the same
// snapshot, the same round trip). A replica whose mark is below ours has not
// yet applied our last write: that read is sent to the primary instead, so an
// answer never misses a write this instance acknowledged.
//
// A replica that fails or does not answer within its timeout sends reads to
// the primary for `retryMs`, then is tried again; each episode is logged once.
import type { Client, InStatement, ResultSet } from '@libsql/client';
import type { BatchReader } from './client.js';
import type { DbWatch, ReplicaReadOutcome } from './client.js';
import { WRITE_MARK } from './columns.js';

/** The statement a write batch ends with: raise the mark, and learn it. */
export const RAISE_WRITE_MARK_SQL = `UPDATE placement_write_marks SET ${WRITE_MARK.mark} = ${WRITE_MARK.mark} + 1 WHERE ${WRITE_MARK.id} = 1 RETURNING ${WRITE_MARK.mark}`;
export const RAISE_WRITE_MARK: InStatement = { sql: RAISE_WRITE_MARK_SQL, args: [] };

/** The statement a replica read starts with: how far the replica has got. */
const READ_WRITE_MARK: InStatement = { sql: `SELECT ${WRITE_MARK.mark} FROM placement_write_marks WHERE ${WRITE_MARK.id} = 1`, args: [] };

export interface ReplicaLog {
  warn(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
}

export interface ReplicaOptions {
  /** After a failure, how long reads go to the primary before the replica is tried again. */
  retryMs: number;
  log: ReplicaLog;
  now?: () => number;
}

/** What the replica reads did, for /metrics and tests. */
export interface ReplicaCounts {
  /** Reads answered by the replica. */
  replica: number;
  /** Reads sent to the primary because the replica had not caught up with our writes. */
  behind: number;
  /** Reads sent to the primary because the replica failed or was resting after a failure. */
  unavailable: number;
}

/** The mark a RAISE_WRITE_MARK result carries (0 where the table had no row). */
export function markOf(result: ResultSet | undefined): number {
  const value = result?.rows[0]?.[0];
  return typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : Number(value ?? 0);
}

/** Tracks the mark of this instance's latest write. Shared by the write paths and the replica reader. */
export class WriteMarks {
  private latest = 0;
  /** Called with each mark this process's own writes raise (the cluster shares them). */
  onRaise?: (mark: number) => void;
  get last(): number {
    return this.latest;
  }
  /** Records a mark another process of this instance reported. */
  saw(mark: number): void {
    if (mark > this.latest) this.latest = mark;
  }
  /** Records the mark one of our own writes raised. */
  raised(mark: number): void {
    this.saw(mark);
    this.onRaise?.(mark);
  }
}

export class ReplicaReader implements BatchReader {
  readonly counts: ReplicaCounts = { replica: 0, behind: 0, unavailable: 0 };
  private restingUntil = 0;
  private readonly now: () => number;

  constructor(
    private readonly replica: Client,
    private readonly primary: BatchReader,
    private readonly marks: WriteMarks,
    private readonly options: ReplicaOptions,
    private readonly watch?: DbWatch,
  ) {
    this.now = options.now ?? Date.now;
  }

  async readBatch(statements: InStatement[]): Promise<ResultSet[]> {
    if (this.now() < this.restingUntil) {
      this.count('unavailable');
      return this.primary.readBatch(statements);
    }
    const needed = this.marks.last;
    let results: ResultSet[];
    try {
      // Timed like the primary's batches (db_client_operation_duration_seconds), failures and timeouts included.
      const read = () => this.replica.batch([READ_WRITE_MARK, ...statements], 'read');
      results = await (this.watch ? this.watch.timed('replica_read_batch', read) : read());
    } catch (err) {
      if (this.restingUntil === 0) {
        this.options.log.warn('read replica failed: reading from the primary', { err: String(err), retry_ms: this.options.retryMs });
      }
      this.restingUntil = this.now() + this.options.retryMs;
      this.count('unavailable');
      return this.primary.readBatch(statements);
    }
    if (this.restingUntil !== 0) {
      this.restingUntil = 0;
      this.options.log.info('read replica answers again');
    }
    if (markOf(results[0]) < needed) {
      this.count('behind');
      return this.primary.readBatch(statements);
    }
    this.count('replica');
    return results.slice(1);
  }

  /** Counted here (tests) and reported to the metrics (placement_db_replica_reads_total). */
  private count(outcome: ReplicaReadOutcome): void {
    this.counts[outcome] += 1;
    this.watch?.replicaRead(outcome);
  }
}

/**
 * A fetch that gives up after `timeoutMs`, for the replica's client: a replica
 * that hangs (stopped, or a network that drops packets) must not hold a read
 * any longer than that before the primary answers it.
 */
export function fetchWithTimeout(timeoutMs: number, base: typeof fetch = fetch): typeof fetch {
  return (input, init) => base(input, { ...init, signal: AbortSignal.timeout(timeoutMs) });
}
