// The one consumer for both runtimes: Node's in-process queue and the
// Worker's queue() handler call consume(deps, body). It claims the outbox row
// the message names, does the work, and records the outcome. Finished or
// already-claimed rows are skipped, so re-delivery is harmless.
import { bindArqs } from '../cyborg/bind.js';
import { sendNovaEvents } from '../cyborg/nova-events.js';
import type { Deps } from '../deps.js';
import { BindPayload, JobMessage, NovaEventPayload } from './messages.js';
import { claimOutbox, finishOutbox, retryOutboxAt } from './outbox.js';

/** How long a claimed row is held before a crashed attempt can be retried. */
export const CLAIM_LEASE_MS = 60_000;
const MAX_BACKOFF_MS = 15 * 60_000;

export type ConsumeResult =
  | { outcome: 'done' | 'skipped' | 'dead' }
  | { outcome: 'retry'; delayMs: number };

export function backoffMs(base: number, attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, base * 2 ** Math.max(0, attempts - 1));
}

export async function consume(deps: Deps, body: unknown): Promise<ConsumeResult> {
  const parsed = JobMessage.safeParse(body);
  if (!parsed.success) {
    deps.log.warn('dropping malformed job message', { body: JSON.stringify(body) });
    return { outcome: 'skipped' };
  }
  const msg = parsed.data;
  const nowMs = deps.clock().getTime();
  const row = await deps.store.writeTx((tx) => claimOutbox(tx, msg.outboxId, nowMs, CLAIM_LEASE_MS));
  if (!row || row.topic !== msg.type) return { outcome: 'skipped' };

  if (msg.type === 'bind') {
    const payload = BindPayload.parse(JSON.parse(row.payload));
    const now = new Date(nowMs).toISOString();
    const events = await deps.store.writeTx(async (tx) => {
      const out = await bindArqs(tx, payload.arqIds, now, nowMs);
      await finishOutbox(tx, row.id, nowMs, 'done');
      return out;
    });
    for (const event of events) await deps.jobs.send(event).catch((err: unknown) => deps.log.warn('queue send failed; the drain will deliver', { err: String(err) }));
    return { outcome: 'done' };
  }

  const payload = NovaEventPayload.parse(JSON.parse(row.payload));
  const { config } = deps;
  const result = await sendNovaEvents(
    { url: config.NOVA_URL, token: config.NOVA_TOKEN, timeoutMs: config.NOVA_TIMEOUT_MS, fetch: deps.novaFetch },
    payload,
  );
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
