// The cluster primary's one way to message a server process.
import type { Serializable } from 'node:child_process';
import type { Worker } from 'node:cluster';

/**
 * Sends `message` to `worker` unless its channel is closed. With a callback, a
 * send to a process that died this instant (not yet seen to go) hands its EPIPE
 * to the callback; without one it was an 'error' nobody handled, ending the primary.
 */
export function sendToWorker(worker: Worker, message: Serializable): void {
  if (worker.isConnected()) worker.send(message, undefined, undefined, () => undefined);
}
