// Node mode: a server process listens before its database is prepared
// (migrations, standard names), and the requests that need the database wait
// for it there instead of being refused or failing: they are answered as
// soon as it is. `GET /`, `/healthz` and `/readyz` need no database and are
// answered at once (/readyz with 503 `warming`).
//
// In a cluster the primary prepares the database once while its server
// processes start; each asks it (IPC) whether it is done, and is told when it is.
import cluster from 'node:cluster';

export class DatabaseGate {
  #open = false;
  #opened!: () => void;
  readonly #ready = new Promise<void>((resolve) => {
    this.#opened = resolve;
  });

  get isOpen(): boolean {
    return this.#open;
  }

  open(): void {
    this.#open = true;
    this.#opened();
  }

  /** Resolves once the database is prepared. */
  passed(): Promise<void> {
    return this.#ready;
  }
}

const NO_DATABASE = new Set(['/', '/healthz', '/readyz']);

/** Whether a request is answered without the database (so before it is prepared). */
export function needsNoDatabase(method: string | undefined, url: string | undefined): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const path = (url ?? '/').split('?', 1)[0]!;
  return NO_DATABASE.has(path);
}

interface PreparedMessage {
  type: 'placement-database-prepared';
  /** Asked by a server process (false), told by the primary (true). */
  done: boolean;
}

const isPrepared = (msg: unknown): msg is PreparedMessage =>
  typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'placement-database-prepared';

/** In a forked server process: resolves once the primary has prepared the database. */
export function preparedByPrimary(): Promise<void> {
  if (!process.send) return Promise.resolve();
  return new Promise((resolve) => {
    const listener = (msg: unknown) => {
      if (!isPrepared(msg) || !msg.done) return;
      process.off('message', listener);
      resolve();
    };
    process.on('message', listener);
    // Asked only now that the answer has a listener: one sent before would be lost.
    process.send?.({ type: 'placement-database-prepared', done: false } satisfies PreparedMessage);
  });
}

/** In the cluster primary: tells each server process that asks, once `prepared` has resolved. */
export function answerPrepared(prepared: Promise<unknown>): void {
  cluster.on('message', (worker, msg: unknown) => {
    if (!isPrepared(msg) || msg.done) return;
    void prepared.then(
      () => {
        if (worker.isConnected()) worker.send({ type: 'placement-database-prepared', done: true } satisfies PreparedMessage);
      },
      () => {},
    );
  });
}

interface ServerReadyMessage {
  type: 'placement-server-ready';
}

/** In a forked server process: tells the primary this process has warmed up. */
export function tellPrimaryReady(): void {
  process.send?.({ type: 'placement-server-ready' } satisfies ServerReadyMessage);
}

/** In the cluster primary: calls `ready` once, when `count` server processes have warmed up. */
export function whenServersReady(count: number, ready: () => void): void {
  const warmed = new Set<number>();
  cluster.on('message', (worker, msg: unknown) => {
    if ((msg as { type?: unknown } | null)?.type !== 'placement-server-ready' || warmed.size >= count) return;
    warmed.add(worker.id);
    if (warmed.size === count) ready();
  });
}
