// POST /reshaper body (1.30; mappings 1.34; consumer_type 1.38), as
// placement/schemas/reshaper.py: inventories keyed by provider (each a
// PUT /inventories body), allocations keyed by consumer (POST /allocations
// form, possibly empty).
import * as z from 'zod';
import type { Microversion } from '../../microversion.js';
import { UUID_PATTERN } from '../../shared/uuid.js';
import { patternRecord, reshaperAllocationsSchema } from './allocations.js';
import { putInventoriesSchema } from './inventories.js';

// At least one provider: otherwise there is nothing to reshape.
const inventories = patternRecord(UUID_PATTERN, putInventoriesSchema, 1);
const byAllocations = new Map<z.ZodType, z.ZodType>();

/** The body schema for a microversion; one object per shape, so it can be compared and described. */
export function reshaperSchema(mv: Microversion) {
  const allocations = reshaperAllocationsSchema(mv);
  let schema = byAllocations.get(allocations) as ReturnType<typeof shape> | undefined;
  if (!schema) {
    schema = shape(allocations);
    byAllocations.set(allocations, schema);
  }
  return schema;
}

const shape = (allocations: ReturnType<typeof reshaperAllocationsSchema>) => z.object({ inventories, allocations }).strict();
