// Periodic work, the same in both runtimes (Node: a timer; Worker: the cron
// trigger): the sweeps the job modules registered (e.g. failing binds stuck
// past ARQ_BINDING_TIMEOUT), then re-sending due outbox rows to the queue and
// purging old delivered rows. Each step reads first and takes the write lock
// only when it has work.
import { isStorageFull } from '../db/storage-full.js';
import type { Deps } from '../deps.js';
import { dueOutbox, hasDoneOutboxBefore, messageFor, purgeDoneOutbox } from './outbox.js';

/** Delivered outbox rows are kept this long (for inspection) before the purge. */
export const DONE_RETENTION_MS = 24 * 3600_000;

export async function drainOutbox(deps: Deps, limit = 500): Promise<number> {
  const rows = await dueOutbox(deps.store.db, deps.clock().getTime(), limit);
  for (const row of rows) await deps.jobs.send(messageFor(row));
  return rows.length;
}

export async function purgeDelivered(deps: Deps): Promise<number> {
  const cutoff = new Date(deps.clock().getTime() - DONE_RETENTION_MS).toISOString();
  if (!(await hasDoneOutboxBefore(deps.store.db, cutoff))) return 0;
  return purgeDoneOutbox(deps.store, cutoff);
}

export async function runSweeps(deps: Deps): Promise<void> {
  for (const sweep of deps.jobHandlers.sweeps) await sweep(deps);
  await drainOutbox(deps);
  await purgeDelivered(deps);
}

/**
 * runSweeps for a timer (Node) or a cron trigger (Worker): a failure is logged
 * as an error and the next run tries again; never thrown, so nothing is left
 * rejected in the background. A full disk is logged once per episode by the
 * store, not at every sweep.
 */
export async function runSweepsLogged(deps: Deps): Promise<void> {
  try {
    await runSweeps(deps);
  } catch (err) {
    if (!isStorageFull(err)) deps.log.error('sweep failed', { err: String(err) });
  }
}
