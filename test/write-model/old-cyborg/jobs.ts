// The accelerator API's background work, registered with the job runner
// (src/jobs/registry.ts): the bind job, Nova event delivery, and the sweep that
// fails binds stuck past ARQ_BINDING_TIMEOUT.
import type { Deps } from '../../../src/deps.js';
import { backoffMs } from './jobs/consume.js';
import { BindPayload, NovaEventPayload } from '../../../src/jobs/messages.js';
import { finishOutbox, retryOutboxAt, type OutboxRow } from './jobs/outbox.js';
import type { ConsumeResult, JobModule } from '../../../src/jobs/registry.js';
import { bindArqs, failStuckBinds, hasStuckBinds } from './bind.js';
import { sendNovaEvents } from '../../../src/cyborg/nova-events.js';

async function runBind(deps: Deps, row: OutboxRow): Promise<ConsumeResult> {
  const payload = BindPayload.parse(JSON.parse(row.payload));
  const nowMs = deps.clock().getTime();
  const events = await deps.store.writeTx(async (tx) => {
    const out = await bindArqs(tx, payload.arqIds, new Date(nowMs).toISOString(), nowMs);
    await finishOutbox(tx, row.id, nowMs, 'done');
    return out;
  });
  for (const event of events) {
    await deps.jobs.send(event).catch((err: unknown) => deps.log.warn('queue send failed; the drain will deliver', { err: String(err) }));
  }
  return { outcome: 'done' };
}

async function deliverNovaEvent(deps: Deps, row: OutboxRow): Promise<ConsumeResult> {
  const payload = NovaEventPayload.parse(JSON.parse(row.payload));
  const { config } = deps;
  const result = await sendNovaEvents(deps.nova, { timeoutMs: config.NOVA_TIMEOUT_MS, fetch: deps.novaFetch }, payload);
  const after = deps.clock().getTime();
  if (result.delivered) {
    await deps.store.writeTx((tx) => finishOutbox(tx, row.id, after, 'done', result.note));
    return { outcome: 'done' };
  }
  if (row.attempts >= config.NOVA_EVENT_MAX_ATTEMPTS) {
    deps.log.error('nova event dead-lettered', { outboxId: row.id, instance: payload.instanceUuid, error: result.error });
    await deps.store.writeTx((tx) => finishOutbox(tx, row.id, after, 'dead', result.error));
    return { outcome: 'dead' };
  }
  const delayMs = backoffMs(config.NOVA_EVENT_BACKOFF_MS, row.attempts);
  await deps.store.writeTx((tx) => retryOutboxAt(tx, row.id, after + delayMs, result.error, after));
  return { outcome: 'retry', delayMs };
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

export const cyborgJobs: JobModule = {
  handlers: { bind: runBind, 'nova-event': deliverNovaEvent },
  sweeps: [sweepBindingTimeouts],
};
