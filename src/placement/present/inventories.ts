// Wire shapes of inventories: snake_case fields, and the provider generation
// alongside (a single record carries it; a collection wraps the records).
import type { InventoryInput } from '../repo/inventories.js';
import type { InventoriesJson, InventoryJson, InventoryWithGenerationJson } from '../schemas/responses.js';

export function presentInventory(inv: InventoryInput): InventoryJson {
  return {
    total: inv.total,
    reserved: inv.reserved,
    min_unit: inv.minUnit,
    max_unit: inv.maxUnit,
    step_size: inv.stepSize,
    allocation_ratio: inv.allocationRatio,
  };
}

export function presentInventoryWithGeneration(inv: InventoryInput, generation: number): InventoryWithGenerationJson {
  return { resource_provider_generation: generation, ...presentInventory(inv) };
}

export function presentInventories(records: Record<string, InventoryInput>, generation: number): InventoriesJson {
  const inventories: Record<string, InventoryJson> = {};
  for (const [rc, inv] of Object.entries(records)) inventories[rc] = presentInventory(inv);
  return { resource_provider_generation: generation, inventories };
}
