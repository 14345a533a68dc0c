// Node cluster mode with group commit on: the cluster primary is the one
// writer of every server process (db/shared-writer.ts). A server process
// sends its write batches to the primary over node:cluster's channel and
// reads on its own connection; the primary commits the batches of all of
// them together on one connection and answers each with its own outcome.
// The database modules are loaded when needed: the primary forks its server
// processes before it loads the service's code.
import cluster, { type Worker } from 'node:cluster';
import type { AppConfig } from '../config.js';
import type { BatchConnection } from '../db/client.js';
import type { WriteReply, WriteRequest } from '../db/shared-writer.js';
import { sendToWorker } from '../shared/send-to-worker.js';

/** Whether a cluster's server processes send their writes to the primary: group commit on. */
const oneWriter = (config: AppConfig): boolean => config.PLACEMENT_GROUP_COMMIT;

/**
 * In a cluster's server process: `batches` with its writes sent to the
 * primary. Elsewhere (one process alone, group commit off, a database
 * that is not a file: no batches), `batches` as it is.
 */
export async function writesThroughPrimary(config: AppConfig, batches: BatchConnection | undefined): Promise<BatchConnection | undefined> {
  if (!batches || !oneWriter(config) || !cluster.isWorker || !process.send) return batches;
  const { SharedWriterClient } = await import('../db/shared-writer.js');
  // With a callback, a closed channel is told to it rather than thrown as an 'error' event.
  const writer = new SharedWriterClient((msg, done) => {
    if (!process.send || !process.connected) done(new Error('the channel to the primary is closed'));
    else process.send(msg, undefined, undefined, done);
  });
  process.on('message', (msg: unknown) => writer.receive(msg));
  process.on('disconnect', () => writer.failAll(new Error('the cluster primary, which commits every write, has gone')));
  // A primary that is alive but does not answer (stopped, stuck) would hold
  // every write of this process: each has the write deadline a database
  // across a link has, and its outcome is then unknown (it was sent).
  const { DatabaseDeadline } = await import('../db/deadline.js');
  const deadline = new DatabaseDeadline({
    database: 'the cluster primary, the one writer of PLACEMENT_DB_URL',
    readMs: config.PLACEMENT_DB_READ_TIMEOUT_MS,
    writeMs: config.PLACEMENT_DB_WRITE_TIMEOUT_MS,
  });
  return {
    readBatch: (statements) => batches.readBatch(statements),
    writeBatch: (statements) => deadline.write(() => writer.write(statements)),
    writerElsewhere: true,
    close: () => batches.close(),
  };
}

const isWriteRequest = (msg: unknown): msg is WriteRequest =>
  typeof msg === 'object' && msg !== null && (msg as { type?: unknown }).type === 'placement-write';

/**
 * In the cluster primary: commit the server processes' writes once
 * `prepared` (the database migrated) has settled. Nothing where they write
 * themselves. The listener is on at once; requests wait for the writer in
 * the order they came.
 */
export function serveServerProcessWrites(config: AppConfig, prepared: Promise<unknown>): void {
  if (!oneWriter(config)) return;
  const service = (async () => {
    const [{ SharedWriterService }, { batchFilePath, openNodeSharedWriter }] = await Promise.all([
      import('../db/shared-writer.js'),
      import('../db/node-client.js'),
    ]);
    // Not a file: the server processes write themselves (writesThroughPrimary gets no batches there).
    if (batchFilePath(config.PLACEMENT_DB_URL) === undefined) return undefined;
    const writer = prepared.then(() => openNodeSharedWriter(config.PLACEMENT_DB_URL, { synchronous: config.PLACEMENT_DB_SYNCHRONOUS })!);
    // A primary that cannot prepare the database stops the service; a write meanwhile gets that error.
    writer.catch(() => undefined);
    return new SharedWriterService(writer);
  })();
  // A server process gone since sent its request is not answered (the callback takes the closed channel's error).
  const answer = (worker: Worker) => (reply: WriteReply) => sendToWorker(worker, reply);
  cluster.on('message', (worker: Worker, msg: unknown) => {
    if (isWriteRequest(msg)) void service.then((s) => s?.receive(worker.id, msg, answer(worker)));
  });
  cluster.on('exit', (worker) => void service.then((s) => s?.forget(worker.id)));
}
