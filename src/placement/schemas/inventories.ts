// Request bodies of the inventory endpoints, as placement/schemas/inventory.py:
// every field bounded by the database's integer range, unknown fields refused.
import * as z from 'zod';
import { pyRepr } from '../../shared/validation-messages.js';
import { INVENTORY_DEFAULTS, MAX_INT, type InventoryInput } from '../repo/inventories.js';

export const RC_NAME_PATTERN = /^[A-Z0-9_]+$/;
/** Largest single-precision float, the allocation_ratio column's range upstream. */
const SQL_SP_FLOAT_MAX = 3.40282e38;

const bounded = (minimum: number) => z.int().min(minimum).max(MAX_INT);

const inventoryFields = {
  total: bounded(1),
  reserved: bounded(0).optional(),
  min_unit: bounded(1).optional(),
  max_unit: bounded(1).optional(),
  step_size: bounded(1).optional(),
  allocation_ratio: z.number().max(SQL_SP_FLOAT_MAX).optional(),
};

/** PUT /resource_providers/{uuid}/inventories/{rc}. */
export const putInventorySchema = z
  .object({
    resource_provider_generation: z.int(),
    ...inventoryFields,
  })
  .strict();

/** POST /resource_providers/{uuid}/inventories (generation accepted but not required). */
export const postInventorySchema = z
  .object({
    resource_class: z.string().regex(RC_NAME_PATTERN).max(255),
    resource_provider_generation: z.int().optional(),
    ...inventoryFields,
  })
  .strict();

/** One record inside PUT /inventories and the reshaper's inventories. */
export const inventoryRecordSchema = z
  .object({
    resource_provider_generation: z.int().optional(),
    ...inventoryFields,
  })
  .strict();

/** {RC_NAME: record}: keys must look like resource class names. */
export const inventoriesByClassSchema = z.record(z.string(), inventoryRecordSchema).superRefine((record, ctx) => {
  const bad = Object.keys(record)
    .filter((k) => !RC_NAME_PATTERN.test(k))
    .sort();
  if (bad.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `${bad.map((k) => pyRepr(k)).join(', ')} ${bad.length === 1 ? 'does' : 'do'} not match any of the regexes: ${pyRepr(RC_NAME_PATTERN.source)}`,
      params: { keyword: 'additionalProperties' },
    });
  }
});

/** PUT /resource_providers/{uuid}/inventories. */
export const putInventoriesSchema = z
  .object({
    resource_provider_generation: z.int(),
    inventories: inventoriesByClassSchema,
  })
  .strict();

type WireInventory = z.infer<typeof inventoryRecordSchema>;

/** Wire record → repo input, filling upstream's INVENTORY_DEFAULTS. */
export function toInventoryInput(wire: WireInventory): InventoryInput {
  return {
    total: wire.total,
    reserved: wire.reserved ?? INVENTORY_DEFAULTS.reserved,
    minUnit: wire.min_unit ?? INVENTORY_DEFAULTS.minUnit,
    maxUnit: wire.max_unit ?? INVENTORY_DEFAULTS.maxUnit,
    stepSize: wire.step_size ?? INVENTORY_DEFAULTS.stepSize,
    allocationRatio: wire.allocation_ratio ?? INVENTORY_DEFAULTS.allocationRatio,
  };
}

export function toInventoryInputs(wire: Record<string, WireInventory>): Record<string, InventoryInput> {
  return Object.fromEntries(Object.entries(wire).map(([rc, inv]) => [rc, toInventoryInput(inv)]));
}
