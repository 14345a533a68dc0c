// Accelerator requests: creation from a profile, reads with their attach
// handle, the synchronous half of bind (validate, BindStarted, outbox row in
// the same write batch), unbind and delete. Writes follow the write model of
// db/write-batch.ts: one read batch, one guarded write batch. Placement's
// providers are read through placement's own readProviderFacts.
import type { InValue, ResultSet } from '@libsql/client';
import { and, eq, inArray, isNull, type SQL } from 'drizzle-orm';
import type { DataStore, Db } from '../../db/client.js';
import { rowOf } from '../../db/rows.js';
import { acceleratorRequests, attachHandles, deviceProfiles } from '../../db/schema/cyborg.js';
import { commitGuarded, guard, inList, stmt, type WriteStatement } from '../../db/write-batch.js';
import { DomainError } from '../../errors.js';
import type { JobMessage } from '../../jobs/messages.js';
import { newOutboxRow } from '../../jobs/outbox.js';
import { type ProviderFacts, providerUnchanged, readProviderFacts } from '../../placement/repo/provider-facts.js';
import { ArqState, canTransition } from '../arq-state.js';
import { arqCountForGroup, readGroup, type ProfileGroup } from '../schemas/device-profiles.js';
import { profileGroups } from './device-profiles.js';
import { cyborgWrite } from './write.js';
import { ARQ, ATTACH_HANDLE, DEVICE_PROFILE } from '../../db/columns.js';

export type ArqRow = typeof acceleratorRequests.$inferSelect;
export type HandleRow = typeof attachHandles.$inferSelect;
export interface ArqWithHandle {
  arq: ArqRow;
  handle: HandleRow | null;
}

/**
 * A profile may ask for up to 2^31-1 units (what Cyborg's schema allows), but
 * one POST creates one ARQ per unit: without a bound a single request could
 * write billions of rows. No host offers more accelerators than this.
 */
export const MAX_ARQS_PER_REQUEST = 256;

/**
 * POST /accelerator_requests: the ARQs of the profile named (of one group when
 * `onlyGroup` is given). Undefined when there is no such profile. One read
 * batch, one write batch that goes ahead only if the profile is still there.
 */
export async function createArqs(
  store: DataStore,
  profileName: string,
  projectId: string | null,
  newId: () => string,
  now: string,
  onlyGroup?: number,
): Promise<ArqRow[] | undefined> {
  return cyborgWrite(async () => {
    const [found] = await store.readBatch([{ sql: `SELECT * FROM device_profiles WHERE ${DEVICE_PROFILE.name} = ?`, args: [profileName] }]);
    if (!found!.rows[0]) return undefined;
    const profile = rowOf(deviceProfiles, found!.rows[0]);
    const groups = profileGroups(profile);
    if (onlyGroup !== undefined && !groups[onlyGroup]) {
      throw new DomainError('invalid', `Device profile ${profile.name} has no group ${onlyGroup}.`);
    }
    const wanted = groups.reduce(
      (sum, group, index) => sum + (onlyGroup === undefined || index === onlyGroup ? arqCountForGroup(group) : 0),
      0,
    );
    if (wanted > MAX_ARQS_PER_REQUEST) {
      throw new DomainError(
        'invalid',
        `Device profile ${profile.name} would create ${wanted} accelerator requests; at most ${MAX_ARQS_PER_REQUEST} can be created by one request.`,
      );
    }
    const rows: InValue[][] = [];
    groups.forEach((group, index) => {
      if (onlyGroup !== undefined && index !== onlyGroup) return;
      for (let i = 0; i < arqCountForGroup(group); i++) {
        rows.push([newId(), ArqState.INITIAL, profile.id, profile.name, index, JSON.stringify(group), projectId, now]);
      }
    });
    if (!rows.length) throw new DomainError('invalid', `Device profile ${profile.name} requests no resources.`);
    const [, inserted] = await commitGuarded(store, [
      guard(`EXISTS (SELECT 1 FROM device_profiles WHERE ${DEVICE_PROFILE.id} = ?)`, [profile.id]),
      stmt(
        `INSERT INTO accelerator_requests (${ARQ.uuid}, ${ARQ.state}, ${ARQ.deviceProfileId}, ${ARQ.deviceProfileName}, ${ARQ.deviceProfileGroupId},
          ${ARQ.deviceProfileGroup}, ${ARQ.projectId}, ${ARQ.createdAt}) VALUES ${rows.map(() => '(?, ?, ?, ?, ?, ?, ?, ?)').join(', ')} RETURNING *`,
        rows.flat(),
      ),
    ]);
    return inserted!.rows.map((r) => rowOf(acceleratorRequests, r)).sort((a, b) => a.id - b.id);
  });
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
function checkDeviceProvider(facts: ProviderFacts | undefined, req: BindRequest, group: ProfileGroup): void {
  if (!facts) throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} does not exist.`);
  if (facts.rootName !== req.hostname) {
    throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} is not in the tree of host ${req.hostname}.`);
  }
  const want = readGroup(group);
  for (const rc of want.resources.keys()) {
    if (!facts.resourceClasses.has(rc)) {
      throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} has no ${rc} inventory.`);
    }
  }
  for (const t of want.required) {
    if (!facts.traits.has(t)) throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} lacks required trait ${t}.`);
  }
  for (const t of want.forbidden) {
    if (facts.traits.has(t)) throw new DomainError('invalid', `Device resource provider ${req.deviceRpUuid} has forbidden trait ${t}.`);
  }
}

const sameBinding = (arq: ArqRow, req: BindRequest) =>
  arq.hostname === req.hostname && arq.deviceRpUuid === req.deviceRpUuid && arq.instanceUuid === req.instanceUuid;

/** The ARQs named by `uuids` that `project` may see (undefined: all), by uuid. */
function visible(rows: ResultSet, project: string | null | undefined): Map<string, ArqRow> {
  const arqs = rows.rows.map((r) => rowOf(acceleratorRequests, r)).filter((a) => project === undefined || a.projectId === project);
  return new Map(arqs.map((a) => [a.uuid, a]));
}

/**
 * The synchronous half of bind: every ARQ is validated before any is changed;
 * then they become BindStarted and one outbox row carries the bind work.
 * A repeat of a bind already under way or done is a no-op (no new work).
 * One read batch (the ARQs, other ARQs of the instances, and the device
 * providers through placement's readProviderFacts), one write batch whose
 * compare-and-swap on each ARQ's state lets only one of two racing binds of
 * the same ARQ through, guarded by the instance still having no other ARQ and
 * the device providers being unchanged.
 */
export async function startBind(
  store: DataStore,
  reqs: BindRequest[],
  project: string | null | undefined,
  now: string,
  nowMs: number,
): Promise<JobMessage | undefined> {
  const uuids = reqs.map((r) => r.uuid);
  const instances = [...new Set(reqs.map((r) => r.instanceUuid))];
  const providers = readProviderFacts([...new Set(reqs.map((r) => r.deviceRpUuid))]);
  return cyborgWrite(async () => {
    const [arqRows, otherRows, ...facts] = await store.readBatch([
      { sql: `SELECT * FROM accelerator_requests WHERE ${ARQ.uuid} IN (${inList(uuids)})`, args: uuids },
      {
        sql: `SELECT ${ARQ.uuid}, ${ARQ.instanceUuid} FROM accelerator_requests
          WHERE ${ARQ.instanceUuid} IN (${inList(instances)}) AND ${ARQ.uuid} NOT IN (${inList(uuids)}) ORDER BY ${ARQ.id}`,
        args: [...instances, ...uuids],
      },
      ...providers.statements,
    ]);
    const found = visible(arqRows!, project);
    const arqs = reqs.map((req) => {
      const arq = found.get(req.uuid);
      if (!arq) throw arqNotFound(req.uuid);
      return { arq, req };
    });
    const fresh = arqs.filter(({ arq, req }) => {
      const repeat = sameBinding(arq, req) && [ArqState.BIND_STARTED, ArqState.BOUND].includes(arq.state as never);
      if (repeat) return false;
      if (!canTransition(arq.state, ArqState.BIND_STARTED)) {
        throw new DomainError('conflict', `Accelerator request ${arq.uuid} is in state ${arq.state}; bind needs Initial or Unbound.`);
      }
      return true;
    });
    if (!fresh.length) return undefined;
    const freshInstances = [...new Set(fresh.map(({ req }) => req.instanceUuid))];
    if (otherRows!.rows.some((r) => freshInstances.includes(String(r.instance_uuid)))) {
      throw new DomainError('conflict', `Instance ${freshInstances[0]} already has accelerator requests. Cannot bind additional ARQs.`);
    }
    const providerFacts = providers.parse(facts);
    for (const { arq, req } of fresh) {
      checkDeviceProvider(providerFacts.get(req.deviceRpUuid), req, JSON.parse(arq.deviceProfileGroup) as ProfileGroup);
    }
    const unchanged = [...new Set(fresh.map(({ req }) => req.deviceRpUuid))].map((rp) => providerUnchanged(providerFacts.get(rp)!));
    const stillFree = guard(
      [
        `NOT EXISTS (SELECT 1 FROM accelerator_requests WHERE ${ARQ.instanceUuid} IN (${inList(freshInstances)}) AND ${ARQ.uuid} NOT IN (${inList(uuids)}))`,
        ...unchanged.map((u) => u.sql),
      ].join(' AND '),
      [...freshInstances, ...uuids, ...unchanged.flatMap((u) => u.args)],
    );
    const job = newOutboxRow('bind', { arqIds: fresh.map(({ arq }) => arq.id) }, nowMs);
    const results = await commitGuarded(store, [
      stillFree,
      ...fresh.map(({ arq, req }) =>
        stmt(
          `UPDATE accelerator_requests SET ${ARQ.state} = ?, ${ARQ.hostname} = ?, ${ARQ.deviceRpUuid} = ?, ${ARQ.instanceUuid} = ?, ${ARQ.projectId} = ?,
            ${ARQ.bindStartedAt} = ?, ${ARQ.updatedAt} = ? WHERE ${ARQ.id} = ? AND ${ARQ.state} = ?`,
          [
            ArqState.BIND_STARTED,
            req.hostname,
            req.deviceRpUuid,
            req.instanceUuid,
            req.projectId ?? arq.projectId,
            now,
            now,
            arq.id,
            arq.state,
          ],
          { mustChange: true },
        ),
      ),
      job.statement,
    ]);
    return job.message(results.at(-1)!);
  });
}

/** Frees the ARQ's handle and clears its binding: Unbound from any state (as upstream). The ARQ must still exist. */
function unbindStatements(arq: ArqRow, now: string): WriteStatement[] {
  return [
    stmt(`UPDATE attach_handles SET ${ATTACH_HANDLE.arqId} = NULL, ${ATTACH_HANDLE.updatedAt} = ? WHERE ${ATTACH_HANDLE.arqId} = ?`, [
      now,
      arq.id,
    ]),
    stmt(
      `UPDATE accelerator_requests SET ${ARQ.state} = ?, ${ARQ.hostname} = NULL, ${ARQ.deviceRpUuid} = NULL, ${ARQ.instanceUuid} = NULL, ${ARQ.deployableId} = NULL,
        ${ARQ.attachHandleId} = NULL, ${ARQ.bindStartedAt} = NULL, ${ARQ.updatedAt} = ? WHERE ${ARQ.id} = ?`,
      [ArqState.UNBOUND, now, arq.id],
      { mustChange: true },
    ),
  ];
}

/** PATCH remove: 404 for the first ARQ not found, before anything changes. */
export async function unbindArqs(store: DataStore, uuids: string[], project: string | null | undefined, now: string): Promise<void> {
  await cyborgWrite(async () => {
    const [rows] = await store.readBatch([
      { sql: `SELECT * FROM accelerator_requests WHERE ${ARQ.uuid} IN (${inList(uuids)})`, args: uuids },
    ]);
    const found = visible(rows!, project);
    const arqs = uuids.map((uuid) => {
      const arq = found.get(uuid);
      if (!arq) throw arqNotFound(uuid);
      return arq;
    });
    await commitGuarded(
      store,
      arqs.flatMap((arq) => unbindStatements(arq, now)),
    );
  });
}

/**
 * Deletes the ARQs, freeing their handles first. Each delete is a
 * compare-and-swap on the instance that was read, so an ARQ bound meanwhile
 * is decided again (a member without a service token may not delete it).
 */
function deleteStatements(rows: ArqRow[], now: string): WriteStatement[] {
  return [
    ...rows.map((arq) =>
      stmt(`UPDATE attach_handles SET ${ATTACH_HANDLE.arqId} = NULL, ${ATTACH_HANDLE.updatedAt} = ? WHERE ${ATTACH_HANDLE.arqId} = ?`, [
        now,
        arq.id,
      ]),
    ),
    ...rows.map((arq) =>
      stmt(`DELETE FROM accelerator_requests WHERE ${ARQ.id} = ? AND ${ARQ.instanceUuid} IS ?`, [arq.id, arq.instanceUuid], {
        mustChange: true,
      }),
    ),
  ];
}

/**
 * DELETE ?arqs=: deletes those found, then 404 for the missing (not idempotent, as upstream).
 * `refuseBound` is thrown, before anything is deleted, when one of them is bound to an instance.
 */
export async function deleteArqsByUuid(
  store: DataStore,
  uuids: string[],
  project: string | null | undefined,
  now: string,
  refuseBound?: () => Error,
): Promise<string[]> {
  return cyborgWrite(async () => {
    const [rows] = await store.readBatch([
      { sql: `SELECT * FROM accelerator_requests WHERE ${ARQ.uuid} IN (${inList(uuids)})`, args: uuids },
    ]);
    const found = visible(rows!, project);
    const arqs = [...new Set(uuids)].flatMap((uuid) => (found.has(uuid) ? [found.get(uuid)!] : []));
    const missing = uuids.filter((uuid) => !found.has(uuid));
    if (refuseBound && arqs.some((arq) => arq.instanceUuid !== null)) throw refuseBound();
    if (arqs.length) await commitGuarded(store, deleteStatements(arqs, now));
    return missing;
  });
}

export async function deleteArqsByInstance(
  store: DataStore,
  instance: string,
  project: string | null | undefined,
  now: string,
): Promise<void> {
  await cyborgWrite(async () => {
    const [rows] = await store.readBatch([
      { sql: `SELECT * FROM accelerator_requests WHERE ${ARQ.instanceUuid} = ? ORDER BY ${ARQ.id}`, args: [instance] },
    ]);
    const arqs = [...visible(rows!, project).values()];
    if (arqs.length) await commitGuarded(store, deleteStatements(arqs, now));
  });
}
