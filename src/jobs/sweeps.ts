// Periodic work, the same in both runtimes (Node: a timer; Worker: the cron
// trigger): re-send due outbox rows to the queue, fail binds stuck in
// BindStarted past ARQ_BINDING_TIMEOUT, and purge old delivered rows. Each
// step reads first and takes the write lock only when it has work.
import { failStuckBinds, hasStuckBinds } from '../cyborg/bind.js';
import type { Deps } from '../deps.js';
import { dueOutbox, hasDoneOutboxBefore, messageFor, purgeDoneOutbox } from './outbox.js';

/** Delivered outbox rows are kept this long (for inspection) before the purge. */
export const DONE_RETENTION_MS = 24 * 3600_000;

export async function drainOutbox(deps: Deps, limit = 500): Promise<number> {
  const rows = await dueOutbox(deps.store.db, deps.clock().getTime(), limit);
  for (const row of rows) await deps.jobs.send(messageFor(row));
  return rows.length;
}

/** Returns how many Nova event batches the failed binds produced. */
export async function sweepBindingTimeouts(deps: Deps): Promise<number> {
  const nowMs = deps.clock().getTime();
  const cutoff = new Date(nowMs - deps.config.ARQ_BINDING_TIMEOUT * 1000).toISOString();
  if (!(await hasStuckBinds(deps.store.db, cutoff))) return 0;
  const events = await deps.store.writeTx((tx) => failStuckBinds(tx, cutoff, new Date(nowMs).toISOString(), nowMs));
  for (const event of events) await deps.jobs.send(event);
  return events.length;
}

export async function purgeDelivered(deps: Deps): Promise<number> {
  const cutoff = new Date(deps.clock().getTime() - DONE_RETENTION_MS).toISOString();
  if (!(await hasDoneOutboxBefore(deps.store.db, cutoff))) return 0;
  return deps.store.writeTx((tx) => purgeDoneOutbox(tx, cutoff));
}

export async function runSweeps(deps: Deps): Promise<void> {
  await sweepBindingTimeouts(deps);
  await drainOutbox(deps);
  await purgeDelivered(deps);
}
