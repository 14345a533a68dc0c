// POST /reshaper body (1.30; mappings 1.34; consumer_type 1.38), as
// placement/schemas/reshaper.py: inventories keyed by provider (each a
// PUT /inventories body), allocations keyed by consumer (POST /allocations
// form, possibly empty).
import { z } from 'zod';
import type { AppContext } from '../../http/env.js';
import { patternRecord, reshaperAllocationsSchema, UUID_PATTERN } from './allocations.js';
import { putInventoriesSchema } from './inventories.js';

export function reshaperSchema(c: AppContext) {
  return z.object({
    // At least one provider: otherwise there is nothing to reshape.
    inventories: patternRecord(UUID_PATTERN, putInventoriesSchema, 1),
    allocations: reshaperAllocationsSchema(c),
  }).strict();
}
