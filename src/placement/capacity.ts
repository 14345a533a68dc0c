// Placement's capacity rule, used by allocations, the `resources` provider
// filter and allocation candidates alike, so the three can never disagree.
export interface InventoryLimits {
  total: number;
  reserved: number;
  minUnit: number;
  maxUnit: number;
  stepSize: number;
  allocationRatio: number;
}

/** Usable capacity: (total - reserved) * allocation_ratio, floored as placement's integer column. */
export function capacityOf(inv: InventoryLimits): number {
  return Math.floor((inv.total - inv.reserved) * inv.allocationRatio);
}

/**
 * `capacityOf` in SQL over an inventories row aliased `alias`, for queries
 * that filter or summarise in the database (CAST truncates like the floor of
 * a non-negative value, and reserved never exceeds total).
 */
export const capacitySql = (alias: string): string => `CAST((${alias}.total - ${alias}.reserved) * ${alias}.allocation_ratio AS INTEGER)`;

/** Current usage of the inventories row aliased `alias`, summed through the (provider, class, used) index. */
export const usedSql = (alias: string): string => `COALESCE((SELECT SUM(a.used) FROM allocations a
  WHERE a.resource_provider_id = ${alias}.resource_provider_id AND a.resource_class_id = ${alias}.resource_class_id), 0)`;

/** Whether one request of `amount` respects min_unit, max_unit and step_size. */
export function amountFitsUnits(inv: InventoryLimits, amount: number): boolean {
  return amount >= inv.minUnit && amount <= inv.maxUnit && amount % inv.stepSize === 0;
}

/** Whether `amount` more fits on top of `used`. */
export function fits(inv: InventoryLimits, used: number, amount: number): boolean {
  return amountFitsUnits(inv, amount) && used + amount <= capacityOf(inv);
}
