// What the database layer reports to whoever watches it (the service's
// metrics, wired by the composition root): how long each operation took and
// which writes lost a race. db/ imports nothing outside itself, so the
// watcher is registered here rather than imported.

/** `replica_read_batch`: one read batch sent to the read replica (PLACEMENT_DB_READ_URL), answered or not. */
export type DbOperation = 'read_batch' | 'write_batch' | 'transaction' | 'replica_read_batch';

/** Who answered a read that could come from the replica (db/replica.ts). */
export type ReplicaReadOutcome = 'replica' | 'behind' | 'unavailable';

export interface DbObserver {
  /** One operation finished, or failed, after `seconds`. */
  operation(name: DbOperation, seconds: number): void;
  /** A write lost a race and is decided again; `kind` names the table its losing statement writes ("check": a guard). */
  raceLost(kind: string): void;
  /** A read that may come from the replica was answered by it (`replica`), or by the primary because the replica lagged behind this instance's writes (`behind`) or failed or rests after a failure (`unavailable`). */
  replicaRead(outcome: ReplicaReadOutcome): void;
}

let observer: DbObserver | undefined;

/** Registers the process's database observer (one per process; a later call replaces it). */
export function observeDatabase(next: DbObserver | undefined): void {
  observer = next;
}

/** Runs `fn`, reporting its duration as one `name` operation. */
export async function timed<T>(name: DbOperation, fn: () => Promise<T>): Promise<T> {
  const watching = observer;
  if (!watching) return fn();
  const started = performance.now();
  try {
    return await fn();
  } finally {
    watching.operation(name, (performance.now() - started) / 1000);
  }
}

const WRITTEN_TABLE = /^\s*(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+[`"[]?(\w+)/i;

/** Reports a lost race on the statement `sql`. */
export function reportLostRace(sql: string): void {
  observer?.raceLost(WRITTEN_TABLE.exec(sql)?.[1]?.toLowerCase() ?? 'check');
}

/** Reports who answered one replica-eligible read. */
export function reportReplicaRead(outcome: ReplicaReadOutcome): void {
  observer?.replicaRead(outcome);
}
