// Inventories of one provider as read, and the input checks every inventory
// write shares. The writes themselves are writes/inventories.ts (and the
// reshaper in writes/claims.ts).
import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { inventories, resourceClasses } from '../../db/schema/index.js';
import type { InventoryLimits } from '../capacity.js';
import { inventoryLimitColumns, type ProviderRow } from './lookups.js';

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

const inventoryColumns = {
  resourceClass: resourceClasses.name,
  resourceClassId: inventories.resourceClassId,
  ...inventoryLimitColumns,
  createdAt: inventories.createdAt,
  updatedAt: inventories.updatedAt,
};

export async function listInventories(db: Db, providerId: number): Promise<InventoryRecord[]> {
  return db
    .select(inventoryColumns)
    .from(inventories)
    .innerJoin(resourceClasses, eq(resourceClasses.id, inventories.resourceClassId))
    .where(eq(inventories.resourceProviderId, providerId))
    .orderBy(resourceClasses.name);
}

export async function findInventory(db: Db, providerId: number, resourceClass: string): Promise<InventoryRecord | undefined> {
  const rows = await db
    .select(inventoryColumns)
    .from(inventories)
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
  provider: Pick<ProviderRow, 'uuid'>,
  records: Record<string, InventoryInput>,
  reservedMayEqualTotal: boolean,
): string | null {
  for (const [rc, inv] of Object.entries(records)) {
    const bad = reservedMayEqualTotal ? inv.reserved > inv.total : inv.reserved >= inv.total;
    if (bad) {
      return (
        `Invalid inventory for '${rc}' on resource provider '${provider.uuid}'. ` +
        `The reserved value is greater than ${reservedMayEqualTotal ? '' : 'or equal to '}total.`
      );
    }
  }
  return null;
}
