// Accelerator requests: creation from a profile, reads with their attach
// handle, the synchronous half of bind (validate, BindStarted, outbox row in
// the same transaction), unbind and delete.
import { DomainError } from '../../../../src/errors.js';
import { and, eq, inArray, isNull, notInArray, type SQL } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { acceleratorRequests, attachHandles } from '../../../../src/db/schema/cyborg.js';
import { inventories, resourceClasses, resourceProviders, resourceProviderTraits, traits } from '../../../../src/db/schema/placement.js';
import { addOutbox } from '../jobs/outbox.js';
import type { JobMessage } from '../../../../src/jobs/messages.js';
import { ArqState, canTransition } from '../../../oracle-rules/arq-state.js';
import { arqCountForGroup, readGroup, type ProfileGroup } from '../../../../src/cyborg/schemas/device-profiles.js';
import { profileGroups, type DeviceProfileRow } from './device-profiles.js';

export type ArqRow = typeof acceleratorRequests.$inferSelect;
export type HandleRow = typeof attachHandles.$inferSelect;
export interface ArqWithHandle {
  arq: ArqRow;
  handle: HandleRow | null;
}

export async function createArqs(
  db: Db,
  profile: DeviceProfileRow,
  projectId: string | null,
  newId: () => string,
  now: string,
  onlyGroup?: number,
): Promise<ArqRow[]> {
  const groups = profileGroups(profile);
  if (onlyGroup !== undefined && !groups[onlyGroup]) {
    throw new DomainError('invalid', `Device profile ${profile.name} has no group ${onlyGroup}.`);
  }
  const rows: (typeof acceleratorRequests.$inferInsert)[] = [];
  groups.forEach((group, index) => {
    if (onlyGroup !== undefined && index !== onlyGroup) return;
    for (let i = 0; i < arqCountForGroup(group); i++) {
      rows.push({
        uuid: newId(),
        state: ArqState.INITIAL,
        deviceProfileId: profile.id,
        deviceProfileName: profile.name,
        deviceProfileGroupId: index,
        deviceProfileGroup: JSON.stringify(group),
        projectId,
        createdAt: now,
      });
    }
  });
  if (!rows.length) throw new DomainError('invalid', `Device profile ${profile.name} requests no resources.`);
  return db.insert(acceleratorRequests).values(rows).returning();
}

async function withHandles(db: Db, arqs: ArqRow[]): Promise<ArqWithHandle[]> {
  const handleIds = arqs.map((a) => a.attachHandleId).filter((id): id is number => id !== null);
  const handles = handleIds.length ? await db.select().from(attachHandles).where(inArray(attachHandles.id, handleIds)) : [];
  const byId = new Map(handles.map((h) => [h.id, h]));
  return arqs.map((arq) => ({ arq, handle: arq.attachHandleId === null ? null : (byId.get(arq.attachHandleId) ?? null) }));
}

/** `project` undefined = every project (admin); otherwise only that project's ARQs. */
export async function listArqs(db: Db, filter: { instance?: string; project?: string | null }): Promise<ArqWithHandle[]> {
  const conds: SQL[] = [];
  if (filter.instance !== undefined) conds.push(eq(acceleratorRequests.instanceUuid, filter.instance));
  if (filter.project !== undefined) {
    conds.push(filter.project === null ? isNull(acceleratorRequests.projectId) : eq(acceleratorRequests.projectId, filter.project));
  }
  const rows = await db
    .select()
    .from(acceleratorRequests)
    .where(conds.length ? and(...conds) : undefined)
    .orderBy(acceleratorRequests.id);
  return withHandles(db, rows);
}

export async function findArq(db: Db, uuid: string, project?: string | null): Promise<ArqWithHandle | undefined> {
  const arq = await db.select().from(acceleratorRequests).where(eq(acceleratorRequests.uuid, uuid)).get();
  if (!arq || (project !== undefined && arq.projectId !== project)) return undefined;
  return (await withHandles(db, [arq]))[0];
}

const arqNotFound = (uuid: string) => new DomainError('not_found', `Accelerator request ${uuid} could not be found.`);

export interface BindRequest {
  uuid: string;
  hostname: string;
  deviceRpUuid: string;
  instanceUuid: string;
  projectId: string | null;
}

/** Checks that the device RP exists, sits in hostname's tree, and offers what the group asks for. */
async function checkDeviceProvider(db: Db, req: BindRequest, group: ProfileGroup): Promise<void> {
  const rp = await db.select().from(resourceProviders).where(eq(resourceProviders.uuid, req.deviceRpUuid)).get();
  if (!rp) throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} does not exist.`);
  const root =
    rp.rootProviderId === null || rp.rootProviderId === rp.id
      ? rp
      : await db.select().from(resourceProviders).where(eq(resourceProviders.id, rp.rootProviderId)).get();
  if (!root || root.name !== req.hostname) {
    throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} is not in the tree of host ${req.hostname}.`);
  }
  const want = readGroup(group);
  const offered = await db
    .select({ name: resourceClasses.name })
    .from(inventories)
    .innerJoin(resourceClasses, eq(resourceClasses.id, inventories.resourceClassId))
    .where(eq(inventories.resourceProviderId, rp.id));
  const offeredNames = new Set(offered.map((o) => o.name));
  for (const rc of want.resources.keys()) {
    if (!offeredNames.has(rc)) throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} has no ${rc} inventory.`);
  }
  const has = await db
    .select({ name: traits.name })
    .from(resourceProviderTraits)
    .innerJoin(traits, eq(traits.id, resourceProviderTraits.traitId))
    .where(eq(resourceProviderTraits.resourceProviderId, rp.id));
  const hasNames = new Set(has.map((t) => t.name));
  for (const t of want.required) {
    if (!hasNames.has(t)) throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} lacks required trait ${t}.`);
  }
  for (const t of want.forbidden) {
    if (hasNames.has(t)) throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} has forbidden trait ${t}.`);
  }
}

const sameBinding = (arq: ArqRow, req: BindRequest) =>
  arq.hostname === req.hostname && arq.deviceRpUuid === req.deviceRpUuid && arq.instanceUuid === req.instanceUuid;

/**
 * The synchronous half of bind: every ARQ is validated before any is changed;
 * then they become BindStarted and one outbox row carries the bind work.
 * A repeat of a bind already under way or done is a no-op (no new work).
 */
export async function startBind(
  db: Db,
  reqs: BindRequest[],
  project: string | null | undefined,
  now: string,
  nowMs: number,
): Promise<JobMessage | undefined> {
  const arqs: { arq: ArqRow; req: BindRequest }[] = [];
  for (const req of reqs) {
    const found = await findArq(db, req.uuid, project);
    if (!found) throw arqNotFound(req.uuid);
    arqs.push({ arq: found.arq, req });
  }
  const fresh = arqs.filter(({ arq, req }) => {
    const repeat = sameBinding(arq, req) && [ArqState.BIND_STARTED, ArqState.BOUND].includes(arq.state as never);
    if (repeat) return false;
    if (!canTransition(arq.state, ArqState.BIND_STARTED)) {
      throw new DomainError('conflict', `Accelerator request ${arq.uuid} is in state ${arq.state}; bind needs Initial or Unbound.`);
    }
    return true;
  });
  if (!fresh.length) return undefined;
  const instances = [...new Set(fresh.map(({ req }) => req.instanceUuid))];
  const requestUuids = arqs.map(({ arq }) => arq.uuid);
  const already = await db
    .select({ uuid: acceleratorRequests.uuid })
    .from(acceleratorRequests)
    .where(and(inArray(acceleratorRequests.instanceUuid, instances), notInArray(acceleratorRequests.uuid, requestUuids)))
    .get();
  if (already) {
    throw new DomainError('conflict', `Instance ${instances[0]} already has accelerator requests. Cannot bind additional ARQs.`);
  }
  for (const { arq, req } of fresh) await checkDeviceProvider(db, req, JSON.parse(arq.deviceProfileGroup) as ProfileGroup);
  for (const { arq, req } of fresh) {
    const changed = await db
      .update(acceleratorRequests)
      .set({
        state: ArqState.BIND_STARTED,
        hostname: req.hostname,
        deviceRpUuid: req.deviceRpUuid,
        instanceUuid: req.instanceUuid,
        projectId: req.projectId ?? arq.projectId,
        bindStartedAt: now,
        updatedAt: now,
      })
      .where(and(eq(acceleratorRequests.id, arq.id), eq(acceleratorRequests.state, arq.state)))
      .returning({ id: acceleratorRequests.id });
    if (!changed.length) throw new DomainError('conflict', `Accelerator request ${arq.uuid} changed state concurrently.`);
  }
  return addOutbox(db, 'bind', { arqIds: fresh.map(({ arq }) => arq.id) }, nowMs);
}

/** Frees the handle and clears the binding: Unbound from any state (as upstream). */
async function unbindRow(db: Db, arq: ArqRow, now: string): Promise<void> {
  await db.update(attachHandles).set({ arqId: null, updatedAt: now }).where(eq(attachHandles.arqId, arq.id));
  await db
    .update(acceleratorRequests)
    .set({
      state: ArqState.UNBOUND,
      hostname: null,
      deviceRpUuid: null,
      instanceUuid: null,
      deployableId: null,
      attachHandleId: null,
      bindStartedAt: null,
      updatedAt: now,
    })
    .where(eq(acceleratorRequests.id, arq.id));
}

export async function unbindArqs(db: Db, uuids: string[], project: string | null | undefined, now: string): Promise<void> {
  const rows: ArqRow[] = [];
  for (const uuid of uuids) {
    const found = await findArq(db, uuid, project);
    if (!found) throw arqNotFound(uuid);
    rows.push(found.arq);
  }
  for (const arq of rows) await unbindRow(db, arq, now);
}

async function deleteRows(db: Db, rows: ArqRow[], now: string): Promise<void> {
  for (const arq of rows) {
    if (arq.state !== ArqState.INITIAL) await unbindRow(db, arq, now);
  }
  if (rows.length)
    await db.delete(acceleratorRequests).where(
      inArray(
        acceleratorRequests.id,
        rows.map((r) => r.id),
      ),
    );
}

/**
 * DELETE ?arqs=: deletes those found, then 404 for the missing (not idempotent, as upstream).
 * `refuseBound` is thrown, before anything is deleted, when one of them is bound to an instance.
 */
export async function deleteArqsByUuid(
  db: Db,
  uuids: string[],
  project: string | null | undefined,
  now: string,
  refuseBound?: () => Error,
): Promise<string[]> {
  const rows: ArqRow[] = [];
  const missing: string[] = [];
  for (const uuid of uuids) {
    const found = await findArq(db, uuid, project);
    if (found) rows.push(found.arq);
    else missing.push(uuid);
  }
  if (refuseBound && rows.some((arq) => arq.instanceUuid !== null)) throw refuseBound();
  await deleteRows(db, rows, now);
  return missing;
}

export async function deleteArqsByInstance(db: Db, instance: string, project: string | null | undefined, now: string): Promise<void> {
  const rows = (await listArqs(db, { instance, project })).map((r) => r.arq);
  await deleteRows(db, rows, now);
}
