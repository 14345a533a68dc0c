// The one consumer for both runtimes: Node's in-process queue and the
// Worker's queue() handler call consume(deps, body). It claims the outbox row
// the message names and hands it to the handler registered for its topic
// (deps.jobHandlers). Finished or already-claimed rows are skipped, so
// re-delivery is harmless.
import type { Deps } from '../deps.js';
import { JobMessage } from './messages.js';
import { claimOutbox } from './outbox.js';
import type { ConsumeResult } from './registry.js';

export type { ConsumeResult } from './registry.js';

/** How long a claimed row is held before a crashed attempt can be retried. */
export const CLAIM_LEASE_MS = 60_000;
const MAX_BACKOFF_MS = 15 * 60_000;

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
  const handler = deps.jobHandlers.handlerFor(msg.type);
  if (!handler) {
    deps.log.warn('no handler for job topic; leaving the outbox row for a later release', { topic: msg.type });
    return { outcome: 'skipped' };
  }
  const row = await claimOutbox(deps.store, msg.outboxId, deps.clock().getTime(), CLAIM_LEASE_MS);
  if (!row || row.topic !== msg.type) return { outcome: 'skipped' };
  return handler(deps, row);
}
