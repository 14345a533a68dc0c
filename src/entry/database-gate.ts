// Node mode: a server process listens before its database is prepared
// (migrations, standard names), and the requests that need the database wait
// for it there instead of being refused or failing: they are answered as
// soon as it is. `GET /`, `/healthz` and `/readyz` need no database and are
// answered at once (/readyz with 503 `warming`).
//
// In a cluster the primary prepares the database once while its server
// processes start; each asks it (IPC) whether it is done, and is told when it is.
import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { STATUS_TITLES } from '../http/api-error.js';
import { sendToWorker } from '../shared/send-to-worker.js';

export class DatabaseGate {
  #open = false;
  #opened!: () => void;
  #refused!: (reason: Error) => void;
  readonly #ready = new Promise<void>((resolve, reject) => {
    this.#opened = resolve;
    this.#refused = reject;
  });
  /** Answers being sent to the requests that waited when the start was refused. */
  readonly #answering = new Set<Promise<void>>();

  constructor() {
    // Nobody may be waiting when the start is refused.
    this.#ready.catch(() => {});
  }

  get isOpen(): boolean {
    return this.#open;
  }

  open(): void {
    this.#open = true;
    this.#opened();
  }

  /** Resolves once the database is prepared; rejects when the start is refused. */
  passed(): Promise<void> {
    return this.#ready;
  }

  /** True once the database is prepared, false when `ms` pass first; rejects when the start is refused. */
  passedWithin(ms: number): Promise<boolean> {
    if (!Number.isFinite(ms)) return this.#ready.then(() => true);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    return Promise.race([this.#ready.then(() => true), late]).finally(() => clearTimeout(timer));
  }

  /**
   * The start is refused: each waiting request is answered 503 in the
   * envelope (`answer` sends it) before the process stops; resolves once
   * they are sent, or after a second at most.
   */
  async refuse(reason: Error): Promise<void> {
    this.#refused(reason);
    // The waiting requests' handlers run on the next turns, and add their answers.
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.race([Promise.all(this.#answering), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
  }

  /** Sends one refused request's answer, tracked until it is written. */
  answering(send: () => Promise<void>): void {
    const sent = send().catch(() => {});
    this.#answering.add(sent);
  }
}

/** The answer to a request that waited for a database the start gave up on: 503 in the envelope both APIs read. */
export function startRefusedAnswer(outgoing: ServerResponse, detail: string): Promise<void> {
  const status = 503;
  const body = JSON.stringify({
    errors: [{ status, title: STATUS_TITLES[status] ?? 'Service Unavailable', detail, request_id: `req-${randomUUID()}` }],
  });
  return new Promise((resolve) => {
    if (outgoing.headersSent || outgoing.writableEnded) return resolve();
    outgoing.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
    outgoing.end(body, () => resolve());
  });
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
        sendToWorker(worker, { type: 'placement-database-prepared', done: true } satisfies PreparedMessage);
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
