// A cluster's server processes share one listening socket, and the kernel
// gives a new connection to whichever process accepts first: a burst of them
// (a client's pool opening ten at once) mostly goes to one process, 9 to 1 in
// the benches, and kept alive they stay there. Every request on them then
// queues behind the others in that process while the other process waits
// between the few it holds: the slowest answers wait several times as long as
// the median (docs/performance.md, tails). So each server process tells the
// primary how many connections it holds, the primary tells every process its
// share (the total over the live processes, rounded up), and a process above
// its share answers its next requests with `Connection: close` until it is
// not. The client opens a new connection for its next request, which the
// process less busy, mostly the one with fewer, accepts first.
// Only while another of its connections is busy too, though: a client's idle
// kept-alive connections (a pool that loaded the cloud) count toward the
// share, and the process holding more of them closed the one connection a
// lone client was using. Its next request paid a new connection and landed in
// a process that had not answered its query, and nothing waited less.
import cluster, { type Worker } from 'node:cluster';
import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { sendToWorker } from '../shared/send-to-worker.js';

const COUNT = 'placement-connections:count';
const SHARE = 'placement-connections:share';
/** How long a server process lets its count settle before telling it (a burst of connections is one message). */
const REPORT_AFTER_MS = 20;
/**
 * At most one connection closed this often per process: a client's new
 * connection may land on the same process again, and the counts the share
 * is made of arrive a moment late; this bounds the reconnects that costs.
 */
const CLOSE_EVERY_MS = 50;
/** A connection counts as busy with a request in flight on it, or one answered this recently (a client's next request follows at once). */
const BUSY_WITHIN_MS = 20;

const count = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0;
const isCount = (raw: unknown): raw is { type: typeof COUNT; value: number } =>
  typeof raw === 'object' && raw !== null && (raw as { type?: unknown }).type === COUNT && count((raw as { value?: unknown }).value);
/** The connections the other server processes last told, and how many processes there are. */
const isShare = (raw: unknown): raw is { type: typeof SHARE; others: number; processes: number } =>
  typeof raw === 'object' &&
  raw !== null &&
  (raw as { type?: unknown }).type === SHARE &&
  count((raw as { others?: unknown }).others) &&
  count((raw as { processes?: unknown }).processes) &&
  (raw as { processes: number }).processes > 0;

/**
 * In a cluster's server process: counts `server`'s connections and tells the
 * primary; returns what to call for every response as its request arrives,
 * which closes the connection after it while this process holds more than
 * its share and another of its connections is busy.
 */
export function balanceConnections(server: Server): (res: ServerResponse) => void {
  /** Connections already told to close: not counted against the share again. */
  const closing = new WeakSet<Socket>();
  let leaving = 0;
  /** Until the primary has told: no share, nothing closed. */
  let others = 0;
  let processes = 0;
  let lastClose = Number.NEGATIVE_INFINITY;
  /** Each open connection's requests in flight, and when its last one was answered (its size: the connections open). */
  const activity = new Map<Socket, { inFlight: number; answeredAt: number }>();
  /** Whether a connection of this process other than `socket` is busy. */
  const anotherBusy = (socket: Socket, now: number) => {
    for (const [other, { inFlight, answeredAt }] of activity)
      if (other !== socket && (inFlight > 0 || now - answeredAt < BUSY_WITHIN_MS)) return true;
    return false;
  };
  let report: NodeJS.Timeout | undefined;
  const tell = () => {
    if (report) return;
    report = setTimeout(() => {
      report = undefined;
      process.send?.({ type: COUNT, value: activity.size });
    }, REPORT_AFTER_MS);
    report.unref();
  };
  server.on('connection', (socket: Socket) => {
    activity.set(socket, { inFlight: 0, answeredAt: Number.NEGATIVE_INFINITY });
    tell();
    socket.once('close', () => {
      activity.delete(socket);
      if (closing.has(socket)) leaving -= 1;
      tell();
    });
  });
  process.on('message', (raw: unknown) => {
    if (isShare(raw)) ({ others, processes } = raw);
  });
  // Told from now on; the primary answers this first count with what the others hold.
  process.send?.({ type: COUNT, value: activity.size });
  return (res) => {
    const socket = res.socket;
    const own = socket ? activity.get(socket) : undefined;
    if (own) {
      own.inFlight += 1;
      res.once('close', () => {
        own.inFlight -= 1;
        own.answeredAt = performance.now();
      });
    }
    // This process's own count is current; the others' are as they last told.
    const kept = activity.size - leaving;
    if (!socket || processes === 0 || kept <= Math.ceil((others + kept) / processes) || closing.has(socket) || res.headersSent) return;
    const now = performance.now();
    if (now - lastClose < CLOSE_EVERY_MS || !anotherBusy(socket, now)) return;
    lastClose = now;
    closing.add(socket);
    leaving += 1;
    res.setHeader('connection', 'close');
  };
}

/** In the primary: each server process's count, and every process told the others' when they change. */
export function shareConnections(): void {
  const counts = new Map<number, number>();
  const told = new Map<number, string>();
  /** `asked`: the process that just told its count, answered even when nothing changed for it (its first count). */
  const update = (asked?: number) => {
    const live = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w?.isConnected() === true);
    let total = 0;
    for (const w of live) total += counts.get(w.id) ?? 0;
    for (const w of live) {
      const share = { type: SHARE, others: total - (counts.get(w.id) ?? 0), processes: live.length };
      const key = `${share.others}/${share.processes}`;
      if (told.get(w.id) === key && w.id !== asked) continue;
      told.set(w.id, key);
      sendToWorker(w, share);
    }
  };
  cluster.on('message', (worker: Worker, raw: unknown) => {
    if (!isCount(raw)) return;
    const first = !counts.has(worker.id);
    counts.set(worker.id, raw.value);
    update(first ? worker.id : undefined);
  });
  cluster.on('exit', (worker) => {
    counts.delete(worker.id);
    told.delete(worker.id);
    update();
  });
  // A new process holds none yet: the others' share drops.
  cluster.on('online', () => update());
}
