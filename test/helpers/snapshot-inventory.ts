// An inventory record of an import snapshot (admin/placement-reader.ts) as
// placement answers it, with placement's defaults for what is not given.
import type { InventorySnap } from '../../src/admin/placement-reader.js';

export const snapshotInventory = (total: number, more: Partial<InventorySnap> = {}): InventorySnap => ({
  total,
  reserved: 0,
  min_unit: 1,
  max_unit: total,
  step_size: 1,
  allocation_ratio: 1,
  ...more,
});
