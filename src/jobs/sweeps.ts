// Periodic work, the same in both runtimes (Node: a timer; Worker: the cron
// trigger): re-send due outbox rows to the queue, and fail binds stuck in
// BindStarted past ARQ_BINDING_TIMEOUT.
import { failStuckBinds } from '../cyborg/bind.js';
import type { Deps } from '../deps.js';
import { dueOutbox, messageFor } from './outbox.js';

export async function drainOutbox(deps: Deps, limit = 500): Promise<number> {
  const rows = await dueOutbox(deps.store.db, deps.clock().getTime(), limit);
  for (const row of rows) await deps.jobs.send(messageFor(row));
  return rows.length;
}

export async function sweepBindingTimeouts(deps: Deps): Promise<number> {
  const nowMs = deps.clock().getTime();
  const cutoff = new Date(nowMs - deps.config.ARQ_BINDING_TIMEOUT * 1000).toISOString();
  const events = await deps.store.writeTx((tx) => failStuckBinds(tx, cutoff, new Date(nowMs).toISOString(), nowMs));
  for (const event of events) await deps.jobs.send(event);
  return events.length;
}

export async function runSweeps(deps: Deps): Promise<void> {
  await sweepBindingTimeouts(deps);
  await drainOutbox(deps);
}
