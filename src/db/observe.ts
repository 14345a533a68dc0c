// What the database layer reports to whoever watches it (the app's metrics,
// wired by the composition root): how long each operation took and which
// writes lost a race. db/ imports nothing outside itself, so the watcher is
// registered rather than imported: one per store (DataStore.watch), so two
// apps in one process, each on its own store, count into their own metrics.

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

const WRITTEN_TABLE = /^\s*(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+[`"[]?(\w+)/i;

/** One store's watcher, if any (none until the composition root sets `observer`). */
export class DbWatch {
  observer: DbObserver | undefined;

  /** Runs `fn`, reporting its duration as one `name` operation. */
  async timed<T>(name: DbOperation, fn: () => Promise<T>): Promise<T> {
    const watching = this.observer;
    if (!watching) return fn();
    const started = performance.now();
    try {
      return await fn();
    } finally {
      watching.operation(name, (performance.now() - started) / 1000);
    }
  }

  /** Reports a lost race on the statement `sql`. */
  lostRace(sql: string): void {
    this.observer?.raceLost(WRITTEN_TABLE.exec(sql)?.[1]?.toLowerCase() ?? 'check');
  }

  /** Reports who answered one replica-eligible read. */
  replicaRead(outcome: ReplicaReadOutcome): void {
    this.observer?.replicaRead(outcome);
  }
}
