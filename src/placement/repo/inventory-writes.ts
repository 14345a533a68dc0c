// Inventory writes of one provider (PUT/DELETE the collection, POST a class,
// PUT/DELETE one class) in the write model of db/write-batch.ts: one read
// batch (the provider, its inventories with usage, the resource classes),
// the decision, one write batch guarded by the provider generation's
// compare-and-swap. The caller's `decide` runs on the snapshot, so its
// checks (body validation, the client's generation) keep their place in
// upstream's order of errors: 404 for a missing provider comes first.
import type { DataStore } from '../../db/client.js';
import { commitGuarded, placeholders, stmt, withRaceRetries, type WriteStatement } from '../../db/write-batch.js';
import { capacityOf } from '../capacity.js';
import { InvalidInventoryInput, InventoryExists, InventoryNotFound, ProviderNotFound } from '../write-errors.js';
import { assertInventoryNotInUse, GenerationPlan, readSnapshot, upsertInventory, type ProviderState } from './claims.js';
import type { InventoryInput } from './inventories.js';

export type InventoryChange =
  | { kind: 'replace'; records: Record<string, InventoryInput> }
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
 * Applies the change `decide` returns for the provider as read. Throws
 * ProviderNotFound, InvalidInventoryInput (unknown class, updating a class
 * the provider lacks), InventoryExists, InventoryNotFound, InventoryInUse,
 * or whatever `decide` throws.
 */
export async function writeProviderInventory(
  store: DataStore,
  uuid: string,
  decide: (provider: ProviderState) => InventoryChange,
  now: string,
): Promise<InventoryWriteResult> {
  return withRaceRetries(async () => {
    const snap = await readSnapshot(store, [uuid], [], null);
    const provider = snap.providers.get(uuid);
    if (!provider) throw new ProviderNotFound(uuid);
    const change = decide(provider);
    const current = new Map(snap.inventories.map((i) => [i.classId, i]));
    const statements: WriteStatement[] = [];
    const overCapacity: string[] = [];
    const classId = (rc: string) => snap.classIds.get(rc);

    if (change.kind === 'replace') {
      const wanted = Object.keys(change.records);
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
        removed.filter((i) => i.used > 0),
      );
      if (removed.length > 0) {
        const ids = removed.map((i) => i.classId);
        statements.push(
          stmt(`DELETE FROM inventories WHERE resource_provider_id = ? AND resource_class_id IN (${placeholders(ids.length)})`, [
            provider.id,
            ...ids,
          ]),
        );
      }
      for (const rc of wanted) {
        const id = classId(rc)!;
        const input = change.records[rc]!;
        const existing = current.get(id);
        if (existing && existing.used > capacityOf(input)) overCapacity.push(rc);
        statements.push(upsertInventory(provider.id, id, input, now));
      }
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
      statements.push(upsertInventory(provider.id, id, change.input, now));
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
      statements.push(upsertInventory(provider.id, existing.classId, change.input, now));
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
        [existing].filter((i) => i.used > 0),
      );
      statements.push(
        stmt('DELETE FROM inventories WHERE resource_provider_id = ? AND resource_class_id = ?', [provider.id, existing.classId]),
      );
    }
    // Usage on this provider only grows with a generation bump, so the
    // compare-and-swap also proves the in-use and over-capacity checks still hold.
    const gens = new GenerationPlan();
    gens.bump(provider);
    await commitGuarded(store, [...statements, ...gens.statements(now)]);
    return { generation: provider.generation + 1, overCapacity };
  });
}
