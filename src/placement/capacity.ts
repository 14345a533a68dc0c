// Placement's capacity rule, used by allocations, the `resources` provider
// filter and allocation candidates alike, so the three can never disagree.
import { ALLOC, INV } from '../db/columns.js';

export interface InventoryLimits {
  total: number;
  reserved: number;
  minUnit: number;
  maxUnit: number;
  stepSize: number;
  allocationRatio: number;
}

/**
 * Capacities are held within ±(2^53 - 1): an allocation_ratio may be as large
 * as 3.4e38 (or as negative), and a capacity beyond JavaScript's exact
 * integers cannot be read back from SQLite (libSQL throws on it). No sum of
 * amounts (each under 2^31) ever comes near the bound, so no decision changes.
 */
export const CAPACITY_BOUND = Number.MAX_SAFE_INTEGER;

/** Usable capacity: (total - reserved) * allocation_ratio, floored as placement's integer column. */
export function capacityOf(inv: InventoryLimits): number {
  const capacity = Math.floor((inv.total - inv.reserved) * inv.allocationRatio);
  return Math.max(-CAPACITY_BOUND, Math.min(CAPACITY_BOUND, capacity));
}

/**
 * `capacityOf` in SQL over an inventories row aliased `alias`, for queries
 * that filter or summarise in the database (CAST truncates like the floor of
 * a non-negative value, and reserved never exceeds total).
 */
export const capacitySql = (alias: string): string =>
  `MAX(-${CAPACITY_BOUND}, MIN(${CAPACITY_BOUND}, CAST((${alias}.${INV.total} - ${alias}.${INV.reserved}) * ${alias}.${INV.allocationRatio} AS INTEGER)))`;

/** Current usage of the inventories row aliased `alias`, summed through the (provider, class, used) index. */
export const usedSql = (alias: string): string => `COALESCE((SELECT SUM(a.${ALLOC.used}) FROM allocations a
  WHERE a.${ALLOC.resourceProviderId} = ${alias}.${INV.resourceProviderId} AND a.${ALLOC.resourceClassId} = ${alias}.${INV.resourceClassId}), 0)`;

/** Whether one request of `amount` respects min_unit, max_unit and step_size. */
export function amountFitsUnits(inv: InventoryLimits, amount: number): boolean {
  return amount >= inv.minUnit && amount <= inv.maxUnit && amount % inv.stepSize === 0;
}

/** Whether `amount` more fits on top of `used`. */
export function fits(inv: InventoryLimits, used: number, amount: number): boolean {
  return amountFitsUnits(inv, amount) && used + amount <= capacityOf(inv);
}
