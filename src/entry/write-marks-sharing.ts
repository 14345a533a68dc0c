// Node mode with several server processes and a read replica: one process's
// writes must count for the replica reads of every other, since a client's
// next request may reach any of them. Each process announces the write marks
// it learns (db/replica.ts) to the cluster primary, which relays them to the
// others. The relay is asynchronous: a read that races the announcement by
// less than an IPC hop can still go to a replica that lacks that write, so
// the README documents the guarantee per process, and this as best effort.
import cluster from 'node:cluster';
import type { DataStore } from '../db/client.js';
import { sendToWorker } from '../shared/send-to-worker.js';

interface WriteMarkMessage {
  type: 'placement-write-mark';
  mark: number;
}

const isWriteMark = (msg: unknown): msg is WriteMarkMessage =>
  typeof msg === 'object' &&
  msg !== null &&
  (msg as { type?: unknown }).type === 'placement-write-mark' &&
  typeof (msg as { mark?: unknown }).mark === 'number';

/** In a forked server process: announce our marks, and take the others'. */
export function shareWriteMarks(store: DataStore): void {
  if (!store.replica || !cluster.isWorker || !process.send) return;
  store.marks.onRaise = (mark) => process.send?.({ type: 'placement-write-mark', mark } satisfies WriteMarkMessage);
  process.on('message', (msg: unknown) => {
    if (isWriteMark(msg)) store.marks.saw(msg.mark);
  });
}

/** In the cluster primary: pass each process's marks to every other process. */
export function relayWriteMarks(): void {
  cluster.on('message', (from, msg: unknown) => {
    if (!isWriteMark(msg)) return;
    for (const worker of Object.values(cluster.workers ?? {})) {
      if (worker && worker.id !== from.id) sendToWorker(worker, msg);
    }
  });
}
