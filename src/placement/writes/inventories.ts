// Inventory writes of one provider (PUT/DELETE the collection, POST a class,
// PUT/DELETE one class) in the write model of db/write-batch.ts: one read
// batch (the provider, its inventories with usage, the resource classes),
// the decision, one write batch guarded by the provider generation's
// compare-and-swap. The caller's `decide` runs on the snapshot, so its
// checks (body validation, the client's generation) keep their place in
// upstream's order of errors: 404 for a missing provider comes first.
//
// Replacing the whole inventory (PUT and DELETE the collection) first tries
// ONE write batch with nothing read (kernel.ts), when the caller can tell
// what `decide` would return without the provider (the body is valid): the
// generation's compare-and-swap, class names resolved in SQL, guards that
// refuse whatever the ordinary path would answer with an error (unknown
// class, a class still in use removed), the current inventories with their
// usage read inside the transaction (for the over-capacity warning), and the
// new generation returned. Refused, the ordinary path decides and words it.
import type { DataStore } from '../../db/client.js';
import type { ResultSet } from '@libsql/client';
import { commitGuarded, guard, placeholders, stmt, type WriteStatement } from '../../db/write-batch.js';
import { capacityOf, usedSql } from '../capacity.js';
import { InvalidInventoryInput, InventoryExists, InventoryInUse, InventoryNotFound, ProviderNotFound } from './refusals.js';
import {
  bumpedGeneration,
  bumpProviderGeneration,
  GenerationPlan,
  placementWrite,
  PROVIDER_ID_BY_UUID,
  readSnapshot,
  tryOneBatch,
  type ProviderState,
} from './kernel.js';
import type { InventoryInput } from '../repo/inventories.js';
import { stillInUse, stillInUseSql } from './rules.js';
import { INV, RC } from '../../db/columns.js';

/** What a write does to the inventory: `replace` (PUT the collection), `clear` (DELETE it), one class added, updated or deleted. */
export type InventoryChange =
  | { kind: 'replace'; records: Record<string, InventoryInput> }
  | { kind: 'clear' }
  | { kind: 'add'; resourceClass: string; input: InventoryInput }
  | { kind: 'update'; resourceClass: string; input: InventoryInput }
  | { kind: 'delete'; resourceClass: string };

export interface InventoryWriteResult {
  /** The provider generation after the write. */
  generation: number;
  /** Classes whose usage now exceeds their capacity (allowed, as upstream: only warned about). */
  overCapacity: string[];
}

/**
 * What `decide` returns for the provider when its generation is
 * `generation` (undefined: whatever it is), known before any read: the
 * whole inventory replaced by `records`.
 */
export interface InventoryReplacement {
  generation: number | undefined;
  records: Record<string, InventoryInput>;
}

/**
 * Replaces (or clears) the whole inventory: `replacement` (what `decide`
 * would return, when the body alone says so) is first tried as one write
 * batch; refused, the ordinary path decides and words it.
 */
export async function replaceProviderInventory(
  store: DataStore,
  uuid: string,
  decide: (provider: ProviderState) => InventoryChange,
  now: string,
  replacement: InventoryReplacement | undefined,
): Promise<InventoryWriteResult> {
  if (replacement) {
    const granted = await tryOneBatch(store, oneBatchReplaceStatements(uuid, replacement, now));
    if (granted) return oneBatchResult(replacement, granted);
  }
  return writeProviderInventory(store, uuid, decide, now);
}

/**
 * Applies the change `decide` returns for the provider as read, and returns
 * it with the outcome. Throws ProviderNotFound, InvalidInventoryInput
 * (unknown class, updating a class the provider lacks), InventoryExists,
 * InventoryNotFound, InventoryInUse, or whatever `decide` throws.
 */
export async function writeProviderInventory<C extends InventoryChange>(
  store: DataStore,
  uuid: string,
  decide: (provider: ProviderState) => C,
  now: string,
): Promise<InventoryWriteResult & { change: C }> {
  return placementWrite(async () => {
    const snap = await readSnapshot(store, [uuid], [], null, null);
    const provider = snap.providers.get(uuid);
    if (!provider) throw new ProviderNotFound(uuid);
    const change = decide(provider);
    const current = new Map(snap.inventories.map((i) => [i.classId, i]));
    const statements: WriteStatement[] = [];
    const overCapacity: string[] = [];
    const classId = (rc: string) => snap.classIds.get(rc);

    if (change.kind === 'replace' || change.kind === 'clear') {
      const wantedRecords = change.kind === 'replace' ? change.records : {};
      const wanted = Object.keys(wantedRecords);
      const unknown = wanted.find((rc) => classId(rc) === undefined);
      if (unknown !== undefined) {
        throw new InvalidInventoryInput(
          `Unknown resource class in inventory for resource provider ${uuid}: No such resource class ${unknown}.`,
        );
      }
      const wantedIds = new Set(wanted.map((rc) => classId(rc)!));
      const removed = snap.inventories.filter((i) => !wantedIds.has(i.classId));
      assertInventoryNotInUse(
        provider.uuid,
        removed.filter((i) => stillInUse(i.used)),
        change.kind === 'replace' ? 'update conflict' : undefined,
      );
      const records = wanted.map((rc) => ({ classId: classId(rc)!, input: wantedRecords[rc]! }));
      for (const [i, rc] of wanted.entries()) {
        const existing = current.get(records[i]!.classId);
        if (existing && existing.used > capacityOf(records[i]!.input)) overCapacity.push(rc);
      }
      statements.push(...replaceInventoryStatements(provider.id, removed, records, now));
    } else if (change.kind === 'add') {
      const id = classId(change.resourceClass);
      if (id === undefined) {
        throw new InvalidInventoryInput(
          `Unable to create inventory for resource provider ${uuid}: No such resource class ${change.resourceClass}.`,
        );
      }
      if (current.has(id)) {
        throw new InventoryExists(
          `Update conflict: Inventory for '${change.resourceClass}' on resource provider '${uuid}' already exists.`,
        );
      }
      statements.push(upsertInventory({ providerId: provider.id, classId: id }, change.input, now));
    } else if (change.kind === 'update') {
      const id = classId(change.resourceClass);
      const existing = id === undefined ? undefined : current.get(id);
      if (!existing) {
        throw new InvalidInventoryInput(
          `No inventory record with resource class for resource provider ${uuid}: ` +
            `No inventory of class ${change.resourceClass} found for resource provider ${uuid}.`,
        );
      }
      if (existing.used > capacityOf(change.input)) overCapacity.push(change.resourceClass);
      statements.push(upsertInventory({ providerId: provider.id, classId: existing.classId }, change.input, now));
    } else {
      const id = classId(change.resourceClass);
      const existing = id === undefined ? undefined : current.get(id);
      if (!existing) {
        throw new InventoryNotFound(
          `No inventory of class ${change.resourceClass} found for delete: ` +
            `No inventory of class ${change.resourceClass} found for delete`,
        );
      }
      assertInventoryNotInUse(
        provider.uuid,
        [existing].filter((i) => stillInUse(i.used)),
        `Unable to delete inventory of class ${change.resourceClass}`,
      );
      statements.push(deleteInventoryClasses(provider.id, [existing.classId]));
    }
    // Usage on this provider only grows with a generation bump, so the
    // compare-and-swap also proves the in-use and over-capacity checks still hold.
    const gens = new GenerationPlan();
    gens.bump(provider);
    await commitGuarded(store, [...statements, ...gens.statements(now)]);
    return { generation: provider.generation + 1, overCapacity, change };
  });
}

/** Classes of the provider's inventory that exist (an SQL condition on `alias`, taking the provider uuid). */
const ownInventory = (alias: string) =>
  `${alias}.${INV.resourceProviderId} = ${PROVIDER_ID_BY_UUID} AND ${alias}.${INV.resourceClassId} IN (SELECT ${RC.id} FROM resource_classes)`;

/**
 * The whole inventory of provider `uuid` replaced in one write batch, as the
 * ordinary path writes it (removed classes deleted, then each record
 * upserted in body order, the generation bumped), refused when the ordinary
 * path would answer with an error: provider missing or at another
 * generation, an unknown class, a class with allocations removed.
 */
function oneBatchReplaceStatements(uuid: string, replacement: InventoryReplacement, now: string): WriteStatement[] {
  const names = Object.keys(replacement.records);
  // Inventories whose class is not among `names` (all of them when there are none).
  const unwanted = (alias: string) =>
    names.length > 0
      ? `${alias}.${INV.resourceClassId} NOT IN (SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} IN (${placeholders(names.length)}))`
      : 'true';
  const statements = [
    bumpProviderGeneration(uuid, replacement.generation, now),
    // The inventory as it is before this write, for the over-capacity warning.
    stmt(
      `SELECT rc.${RC.name}, ${usedSql('i')} AS used FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
      WHERE i.${INV.resourceProviderId} = ${PROVIDER_ID_BY_UUID}`,
      [uuid],
    ),
    // No class that still has allocations is removed (usage as of the write).
    guard(`NOT EXISTS (SELECT 1 FROM inventories i WHERE ${ownInventory('i')} AND ${unwanted('i')} AND ${stillInUseSql('i')})`, [
      uuid,
      ...names,
    ]),
    stmt(`DELETE FROM inventories WHERE ${ownInventory('inventories')} AND ${unwanted('inventories')}`, [uuid, ...names]),
  ];
  // Inserted from the class's row: an unknown class inserts nothing, and mustChange refuses the batch.
  for (const [name, input] of Object.entries(replacement.records)) {
    statements.push(upsertInventory({ providerUuid: uuid, className: name }, input, now));
  }
  return statements;
}

/** The answer of a granted one-batch replacement: the generation it returned, the classes now over capacity. */
function oneBatchResult(replacement: InventoryReplacement, results: ResultSet[]): InventoryWriteResult {
  const usedBefore = new Map(results[1]!.rows.map((r) => [String(r[RC.name]), Number(r.used)]));
  const overCapacity = Object.entries(replacement.records)
    .filter(([name, input]) => {
      const used = usedBefore.get(name);
      return used !== undefined && used > capacityOf(input);
    })
    .map(([name]) => name);
  return { generation: bumpedGeneration(results[0]!), overCapacity };
}

// Selected from the class's row: a class deleted since the read (DELETE
// /resource_classes/{name}), or unknown to a one-batch write, inserts nothing,
// and mustChange aborts the batch. The provider is named by id (read in the
// snapshot) or by uuid (found as of the write); built once per form.
const upsertInventorySql = (provider: string, classColumn: string) =>
  `INSERT INTO inventories (${INV.resourceProviderId}, ${INV.resourceClassId}, ${INV.total}, ${INV.reserved}, ${INV.minUnit}, ${INV.maxUnit},
    ${INV.stepSize}, ${INV.allocationRatio}, ${INV.createdAt}) SELECT ${provider}, ${RC.id}, ?, ?, ?, ?, ?, ?, ? FROM resource_classes WHERE ${classColumn} = ?
  ON CONFLICT (${INV.resourceProviderId}, ${INV.resourceClassId}) DO UPDATE SET ${INV.total} = excluded.${INV.total},
    ${INV.reserved} = excluded.${INV.reserved}, ${INV.minUnit} = excluded.${INV.minUnit}, ${INV.maxUnit} = excluded.${INV.maxUnit},
    ${INV.stepSize} = excluded.${INV.stepSize}, ${INV.allocationRatio} = excluded.${INV.allocationRatio}, ${INV.updatedAt} = ?`;
const UPSERT_BY_ID = upsertInventorySql('?', RC.id);
const UPSERT_BY_UUID_AND_NAME = upsertInventorySql(PROVIDER_ID_BY_UUID, RC.name);

/** Where an inventory record goes: ids read in a snapshot, or uuid and name resolved as of the write (one batch). */
export type InventoryTarget = { providerId: number; classId: number } | { providerUuid: string; className: string };

/** The write-batch statement for one inventory record: inserted, or updated in place. */
export function upsertInventory(target: InventoryTarget, input: InventoryInput, now: string): WriteStatement {
  const byId = 'providerId' in target;
  return stmt(
    byId ? UPSERT_BY_ID : UPSERT_BY_UUID_AND_NAME,
    [
      byId ? target.providerId : target.providerUuid,
      input.total,
      input.reserved,
      input.minUnit,
      input.maxUnit,
      input.stepSize,
      input.allocationRatio,
      now,
      byId ? target.classId : target.className,
      now,
    ],
    { mustChange: true },
  );
}

/** Removes the provider's inventory of these classes. */
export function deleteInventoryClasses(providerId: number, classIds: number[]): WriteStatement {
  return stmt(
    `DELETE FROM inventories WHERE ${INV.resourceProviderId} = ? AND ${INV.resourceClassId} IN (${placeholders(classIds.length)})`,
    [providerId, ...classIds],
  );
}

/**
 * A provider's whole inventory replaced, as decided from a snapshot (PUT
 * inventories, the reshaper's final inventory): the `removed` classes
 * deleted, then each record upserted in the order given.
 */
export function replaceInventoryStatements(
  providerId: number,
  removed: { classId: number }[],
  records: { classId: number; input: InventoryInput }[],
  now: string,
): WriteStatement[] {
  const statements =
    removed.length > 0
      ? [
          deleteInventoryClasses(
            providerId,
            removed.map((i) => i.classId),
          ),
        ]
      : [];
  for (const { classId, input } of records) statements.push(upsertInventory({ providerId, classId }, input, now));
  return statements;
}

/**
 * 409 inventory.inuse when classes to drop still have allocations; listed in
 * class-id order, as upstream's GROUP BY; `prefix` is the endpoint's
 * introduction of the conflict.
 */
export function assertInventoryNotInUse(providerUuid: string, inUse: { classId: number; resourceClass: string }[], prefix?: string): void {
  if (inUse.length === 0) return;
  const names = [...inUse].sort((a, b) => a.classId - b.classId).map((i) => i.resourceClass);
  throw new InventoryInUse(`Inventory for '${names.join(', ')}' on resource provider '${providerUuid}' in use.`, prefix);
}
