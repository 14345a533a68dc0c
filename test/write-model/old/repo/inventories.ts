// Inventories of one provider: read, add, update, delete, and replace-all.
// Generation bumps are the caller's job (handlers and the reshaper compose
// several repo calls in one write transaction, then bump once).
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { allocations, inventories, resourceClasses } from '../../../../src/db/schema/index.js';
import { ApiError, ErrorCode, webobDetail } from '../../../../src/http/api-error.js';
import { capacityOf, type InventoryLimits } from '../../../oracle-rules/capacity.js';
import { inventoryLimitColumns, resourceClassIdsByName, type ProviderRow } from './lookups.js';

/** One inventory record as callers supply it, defaults already applied. */
export type InventoryInput = InventoryLimits;

export interface InventoryRecord extends InventoryInput {
  resourceClass: string;
  resourceClassId: number;
  createdAt: string;
  updatedAt: string | null;
}

/** upstream INVENTORY_DEFAULTS: everything but total is optional on the wire. */
export const MAX_INT = 2147483647;
export const INVENTORY_DEFAULTS = {
  reserved: 0,
  minUnit: 1,
  maxUnit: MAX_INT,
  stepSize: 1,
  allocationRatio: 1.0,
} as const;

/**
 * 409 placement.inventory.inuse. `reason` is upstream's InventoryInUse text;
 * handlers that word the conflict differently re-wrap it with `prefixed`.
 */
export class InventoryInUseError extends ApiError {
  constructor(readonly reason: string, prefix?: string) {
    super(409, webobDetail(409, prefix ? `${prefix}: ${reason}` : reason), { code: ErrorCode.INVENTORY_INUSE });
  }
  prefixed(prefix: string): InventoryInUseError {
    return new InventoryInUseError(this.reason, prefix);
  }
}

const inventoryColumns = {
  resourceClass: resourceClasses.name,
  resourceClassId: inventories.resourceClassId,
  ...inventoryLimitColumns,
  createdAt: inventories.createdAt,
  updatedAt: inventories.updatedAt,
};

export async function listInventories(db: Db, providerId: number): Promise<InventoryRecord[]> {
  return db.select(inventoryColumns).from(inventories)
    .innerJoin(resourceClasses, eq(resourceClasses.id, inventories.resourceClassId))
    .where(eq(inventories.resourceProviderId, providerId))
    .orderBy(resourceClasses.name);
}

export async function findInventory(db: Db, providerId: number, resourceClass: string): Promise<InventoryRecord | undefined> {
  const rows = await db.select(inventoryColumns).from(inventories)
    .innerJoin(resourceClasses, eq(resourceClasses.id, inventories.resourceClassId))
    .where(and(eq(inventories.resourceProviderId, providerId), eq(resourceClasses.name, resourceClass)))
    .limit(1);
  return rows[0];
}

/**
 * Upstream's capacity check on input (not on usage): reserved must stay below
 * total, or may equal it from 1.26. Returns the InvalidInventoryCapacity text
 * for the first offending class, or null.
 */
export function reservedCapacityProblem(
  provider: ProviderRow,
  records: Record<string, InventoryInput>,
  reservedMayEqualTotal: boolean,
): string | null {
  for (const [rc, inv] of Object.entries(records)) {
    const bad = reservedMayEqualTotal ? inv.reserved > inv.total : inv.reserved >= inv.total;
    if (bad) {
      return `Invalid inventory for '${rc}' on resource provider '${provider.uuid}'. ` +
        `The reserved value is greater than ${reservedMayEqualTotal ? '' : 'or equal to '}total.`;
    }
  }
  return null;
}

function values(input: InventoryInput) {
  return {
    total: input.total,
    reserved: input.reserved,
    minUnit: input.minUnit,
    maxUnit: input.maxUnit,
    stepSize: input.stepSize,
    allocationRatio: input.allocationRatio,
  };
}

async function usageByClass(db: Db, providerId: number, classIds: number[]): Promise<Map<number, number>> {
  if (classIds.length === 0) return new Map();
  const rows = await db.select({ classId: allocations.resourceClassId, used: sql<number>`sum(${allocations.used})` })
    .from(allocations)
    .where(and(eq(allocations.resourceProviderId, providerId), inArray(allocations.resourceClassId, classIds)))
    .groupBy(allocations.resourceClassId);
  return new Map(rows.map((r) => [r.classId, Number(r.used)]));
}

/** Refuses to drop classes that still have allocations on the provider. */
async function assertNotInUse(db: Db, provider: ProviderRow, classIds: number[], names: Map<number, string>): Promise<void> {
  const used = await usageByClass(db, provider.id, classIds);
  if (used.size === 0) return;
  // Listed in class-id order, as upstream's GROUP BY resource_class_id returns them.
  const inUse = [...used.keys()].sort((a, b) => a - b).map((id) => names.get(id) ?? String(id)).join(', ');
  throw new InventoryInUseError(`Inventory for '${inUse}' on resource provider '${provider.uuid}' in use.`);
}

export interface ReplaceResult {
  /** Classes whose existing usage now exceeds the new capacity (allowed, as upstream: only warned about). */
  overCapacity: string[];
}

/**
 * Replaces the provider's whole inventory with `records` (rc name → input):
 * adds new classes, updates kept ones, deletes the rest. 400 for unknown
 * classes, 409 placement.inventory.inuse when a removed class has
 * allocations. Shrinking below current usage is allowed, as upstream allows
 * it (Nova relies on it, e.g. reserved=total on an occupied Ironic node);
 * such classes are reported back. Does not bump the generation.
 */
export async function setInventories(
  tx: Db,
  provider: ProviderRow,
  records: Record<string, InventoryInput>,
  now: string,
): Promise<ReplaceResult> {
  const wanted = Object.keys(records);
  const ids = await resourceClassIdsByName(tx, wanted);
  const unknown = wanted.filter((name) => !ids.has(name));
  if (unknown.length > 0) {
    throw new ApiError(400, webobDetail(400,
      `Unknown resource class in inventory for resource provider ${provider.uuid}: No such resource class ${unknown[0]}.`));
  }
  const existing = await listInventories(tx, provider.id);
  const existingIds = new Set(existing.map((inv) => inv.resourceClassId));
  const wantedIds = new Set(ids.values());
  const removed = existing.filter((inv) => !wantedIds.has(inv.resourceClassId));
  if (removed.length > 0) {
    const names = new Map(removed.map((inv) => [inv.resourceClassId, inv.resourceClass]));
    await assertNotInUse(tx, provider, [...names.keys()], names);
    await tx.delete(inventories).where(and(
      eq(inventories.resourceProviderId, provider.id),
      inArray(inventories.resourceClassId, [...names.keys()]),
    ));
  }
  const kept = wanted.filter((name) => existingIds.has(ids.get(name)!));
  const usage = await usageByClass(tx, provider.id, kept.map((name) => ids.get(name)!));
  const overCapacity: string[] = [];
  for (const name of wanted) {
    const classId = ids.get(name)!;
    const input = records[name]!;
    if (existingIds.has(classId)) {
      if ((usage.get(classId) ?? 0) > capacityOf(input)) overCapacity.push(name);
      await tx.update(inventories).set({ ...values(input), updatedAt: now })
        .where(and(eq(inventories.resourceProviderId, provider.id), eq(inventories.resourceClassId, classId)));
    } else {
      await tx.insert(inventories).values({
        resourceProviderId: provider.id, resourceClassId: classId, ...values(input), createdAt: now,
      });
    }
  }
  return { overCapacity };
}

/**
 * The export the reshaper reuses: replaces the provider's whole inventory
 * (see setInventories). Throws 400 for unknown classes and 409
 * placement.inventory.inuse for removed classes with allocations. Does NOT
 * bump the generation; callers do.
 */
export async function replaceInventories(
  tx: Db,
  provider: ProviderRow,
  records: Record<string, InventoryInput>,
  now: string,
): Promise<void> {
  await setInventories(tx, provider, records, now);
}

/** POST one class: 400 unknown class, 409 when the provider already has it. */
export async function addInventory(tx: Db, provider: ProviderRow, resourceClass: string, input: InventoryInput, now: string): Promise<void> {
  const ids = await resourceClassIdsByName(tx, [resourceClass]);
  const classId = ids.get(resourceClass);
  if (classId === undefined) {
    throw new ApiError(400, webobDetail(400,
      `Unable to create inventory for resource provider ${provider.uuid}: No such resource class ${resourceClass}.`));
  }
  const inserted = await tx.insert(inventories)
    .values({ resourceProviderId: provider.id, resourceClassId: classId, ...values(input), createdAt: now })
    .onConflictDoNothing()
    .returning({ id: inventories.id });
  if (inserted.length === 0) {
    throw new ApiError(409, webobDetail(409,
      `Update conflict: Inventory for '${resourceClass}' on resource provider '${provider.uuid}' already exists.`),
    { code: ErrorCode.CONCURRENT_UPDATE });
  }
}

/** PUT one class: 400 when the provider has no inventory of it. Returns the over-capacity flag. */
export async function updateInventory(
  tx: Db, provider: ProviderRow, resourceClass: string, input: InventoryInput, now: string,
): Promise<ReplaceResult> {
  const current = await findInventory(tx, provider.id, resourceClass);
  if (!current) {
    throw new ApiError(400, webobDetail(400,
      `No inventory record with resource class for resource provider ${provider.uuid}: ` +
      `No inventory of class ${resourceClass} found for resource provider ${provider.uuid}.`));
  }
  const usage = await usageByClass(tx, provider.id, [current.resourceClassId]);
  await tx.update(inventories).set({ ...values(input), updatedAt: now })
    .where(and(eq(inventories.resourceProviderId, provider.id), eq(inventories.resourceClassId, current.resourceClassId)));
  return { overCapacity: (usage.get(current.resourceClassId) ?? 0) > capacityOf(input) ? [resourceClass] : [] };
}

/** DELETE one class: 404 when absent, 409 inuse when it has allocations. */
export async function deleteInventory(tx: Db, provider: ProviderRow, resourceClass: string): Promise<void> {
  const current = await findInventory(tx, provider.id, resourceClass);
  if (!current) {
    throw new ApiError(404, webobDetail(404,
      `No inventory of class ${resourceClass} found for delete: No inventory of class ${resourceClass} found for delete`));
  }
  try {
    await assertNotInUse(tx, provider, [current.resourceClassId], new Map([[current.resourceClassId, resourceClass]]));
  } catch (err) {
    if (err instanceof InventoryInUseError) throw err.prefixed(`Unable to delete inventory of class ${resourceClass}`);
    throw err;
  }
  await tx.delete(inventories)
    .where(and(eq(inventories.resourceProviderId, provider.id), eq(inventories.resourceClassId, current.resourceClassId)));
}
