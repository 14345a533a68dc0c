// The asynchronous half of bind, run by the bind job inside one write
// transaction: allocate a free attach handle of the deployable behind the
// device RP (or wait for the agent to report the requested bitstream), mark
// the ARQ Bound or BindFailed, and write the Nova events (one outbox row per
// instance) in the same transaction. ARQs no longer BindStarted are skipped,
// so a re-delivered job changes nothing.
import { and, eq, inArray, isNull, lte } from 'drizzle-orm';
import type { Db } from '../../../src/db/client.js';
import { acceleratorRequests, attachHandles, deployables, devices } from '../../../src/db/schema/cyborg.js';
import type { JobMessage, NovaEventPayload } from '../../../src/jobs/messages.js';
import { addOutbox } from './jobs/outbox.js';
import { ArqState, RESOLVED_EVENT_STATUS } from '../../oracle-rules/arq-state.js';
import type { ArqRow } from './repo/arqs.js';
import { readGroup, type ProfileGroup } from '../../../src/cyborg/schemas/device-profiles.js';

type Outcome = { arq: ArqRow; state: 'Bound' | 'BindFailed' } | { arq: ArqRow; state: 'waiting' };

async function bindOne(db: Db, arq: ArqRow, now: string): Promise<Outcome> {
  const want = readGroup(JSON.parse(arq.deviceProfileGroup) as ProfileGroup);
  const fail = async (): Promise<Outcome> => {
    await db
      .update(acceleratorRequests)
      .set({ state: ArqState.BIND_FAILED, updatedAt: now })
      .where(and(eq(acceleratorRequests.id, arq.id), eq(acceleratorRequests.state, ArqState.BIND_STARTED)));
    return { arq, state: 'BindFailed' };
  };
  if (want.bitstreamId && want.functionId) return fail();
  if (!arq.deviceRpUuid) return fail();
  const found = await db
    .select({ deployable: deployables, deviceStatus: devices.status })
    .from(deployables)
    .innerJoin(devices, eq(devices.id, deployables.deviceId))
    .where(eq(deployables.rpUuid, arq.deviceRpUuid))
    .get();
  // A device an admin disabled (maintaining) is not handed out.
  if (!found || found.deviceStatus !== 'enabled') return fail();
  const { deployable } = found;
  const needsProgram =
    (want.bitstreamId && deployable.bitstreamId !== want.bitstreamId) || (want.functionId && deployable.functionId !== want.functionId);
  if (needsProgram) return { arq, state: 'waiting' };
  const free = await db
    .select()
    .from(attachHandles)
    .where(and(eq(attachHandles.deployableId, deployable.id), isNull(attachHandles.arqId)))
    .orderBy(attachHandles.id)
    .get();
  if (!free) return fail();
  // Compare-and-set on the handle; the unique index on arq_id backs it up.
  const taken = await db
    .update(attachHandles)
    .set({ arqId: arq.id, updatedAt: now })
    .where(and(eq(attachHandles.id, free.id), isNull(attachHandles.arqId)))
    .returning({ id: attachHandles.id });
  if (!taken.length) return fail();
  await db
    .update(acceleratorRequests)
    .set({
      state: ArqState.BOUND,
      deployableId: deployable.id,
      attachHandleId: free.id,
      updatedAt: now,
    })
    .where(and(eq(acceleratorRequests.id, arq.id), eq(acceleratorRequests.state, ArqState.BIND_STARTED)));
  return { arq, state: 'Bound' };
}

/** Writes one nova-event outbox row per instance for the resolved ARQs. */
export async function queueNovaEvents(
  db: Db,
  resolved: { arq: ArqRow; state: 'Bound' | 'BindFailed' }[],
  nowMs: number,
): Promise<JobMessage[]> {
  const byInstance = new Map<string, NovaEventPayload['events']>();
  for (const { arq, state } of resolved) {
    if (!arq.instanceUuid) continue;
    const events = byInstance.get(arq.instanceUuid) ?? [];
    events.push({ arqUuid: arq.uuid, status: RESOLVED_EVENT_STATUS[state]! });
    byInstance.set(arq.instanceUuid, events);
  }
  const messages: JobMessage[] = [];
  for (const [instanceUuid, events] of byInstance) {
    messages.push(await addOutbox(db, 'nova-event', { instanceUuid, events }, nowMs));
  }
  return messages;
}

/** Binds the given ARQs that are still BindStarted; returns the Nova event messages to send after commit. */
export async function bindArqs(db: Db, arqIds: number[], now: string, nowMs: number): Promise<JobMessage[]> {
  const arqs = await db
    .select()
    .from(acceleratorRequests)
    .where(and(inArray(acceleratorRequests.id, arqIds), eq(acceleratorRequests.state, ArqState.BIND_STARTED)))
    .orderBy(acceleratorRequests.id);
  const resolved: { arq: ArqRow; state: 'Bound' | 'BindFailed' }[] = [];
  for (const arq of arqs) {
    const outcome = await bindOne(db, arq, now);
    if (outcome.state !== 'waiting') resolved.push(outcome);
  }
  return queueNovaEvents(db, resolved, nowMs);
}

/** ARQs waiting on this deployable's programming: the device-programmed report re-runs their bind. */
export async function arqsWaitingOn(db: Db, rpUuid: string): Promise<number[]> {
  const rows = await db
    .select({ id: acceleratorRequests.id })
    .from(acceleratorRequests)
    .where(and(eq(acceleratorRequests.deviceRpUuid, rpUuid), eq(acceleratorRequests.state, ArqState.BIND_STARTED)));
  return rows.map((r) => r.id);
}

/** Binding timeout: BindStarted since before `cutoff` becomes BindFailed, with a failed event. */
export async function failStuckBinds(db: Db, cutoff: string, now: string, nowMs: number): Promise<JobMessage[]> {
  const stuck = await db
    .select()
    .from(acceleratorRequests)
    .where(and(eq(acceleratorRequests.state, ArqState.BIND_STARTED), lte(acceleratorRequests.bindStartedAt, cutoff)));
  const failed: { arq: ArqRow; state: 'BindFailed' }[] = [];
  for (const arq of stuck) {
    await db.update(attachHandles).set({ arqId: null, updatedAt: now }).where(eq(attachHandles.arqId, arq.id));
    const changed = await db
      .update(acceleratorRequests)
      .set({ state: ArqState.BIND_FAILED, attachHandleId: null, updatedAt: now })
      .where(and(eq(acceleratorRequests.id, arq.id), eq(acceleratorRequests.state, ArqState.BIND_STARTED)))
      .returning({ id: acceleratorRequests.id });
    if (changed.length) failed.push({ arq, state: 'BindFailed' });
  }
  return queueNovaEvents(db, failed, nowMs);
}

/** Cheap read before the sweep takes the write lock: is any bind past the cutoff? */
export async function hasStuckBinds(db: Db, cutoff: string): Promise<boolean> {
  const row = await db
    .select({ id: acceleratorRequests.id })
    .from(acceleratorRequests)
    .where(and(eq(acceleratorRequests.state, ArqState.BIND_STARTED), lte(acceleratorRequests.bindStartedAt, cutoff)))
    .limit(1)
    .get();
  return row !== undefined;
}
