// What the database layer reports to whoever watches it (the service's
// metrics, wired by the composition root): how long each operation took and
// which writes lost a race. db/ imports nothing outside itself, so the
// watcher is registered here rather than imported.

export type DbOperation = 'read_batch' | 'write_batch' | 'transaction';

export interface DbObserver {
  /** One operation finished, or failed, after `seconds`. */
  operation(name: DbOperation, seconds: number): void;
  /** A write lost a race and is decided again; `kind` names the table its losing statement writes ("check": a guard). */
  raceLost(kind: string): void;
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
