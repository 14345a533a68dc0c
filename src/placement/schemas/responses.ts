// Response bodies of the most used Placement reads, per microversion, for
// GET /openapi.json. The presenters (../present/) build these shapes; the
// OpenAPI test validates live responses at each range against them, so a
// presenter change that is not reflected here fails there.
import { z } from 'zod';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';

const uuid = z.string();
const link = z.object({ rel: z.string(), href: z.string() });

const providerV1_0 = z.object({ uuid, name: z.string(), generation: z.number().int(), links: z.array(link) });
const providerV1_14 = providerV1_0.extend({ parent_provider_uuid: uuid.nullable(), root_provider_uuid: uuid });

/** One resource provider (GET/PUT /resource_providers/{uuid}, POST from 1.20). */
export const providerResponseSchema = (mv: Microversion) => (mv.atLeast(MV.NESTED) ? providerV1_14 : providerV1_0);

const providerListV1_0 = z.object({ resource_providers: z.array(providerV1_0) });
const providerListV1_14 = z.object({ resource_providers: z.array(providerV1_14) });
export const providerListResponseSchema = (mv: Microversion) => (mv.atLeast(MV.NESTED) ? providerListV1_14 : providerListV1_0);

const inventory = z.object({
  total: z.number().int(),
  reserved: z.number().int(),
  min_unit: z.number().int(),
  max_unit: z.number().int(),
  step_size: z.number().int(),
  allocation_ratio: z.number(),
});
const inventories = z.object({ resource_provider_generation: z.number().int(), inventories: z.record(z.string(), inventory) });
export const inventoriesResponseSchema = (_mv: Microversion) => inventories;

const usageAmounts = z.record(z.string(), z.number().int());
const usagesV1_9 = z.object({ usages: usageAmounts });
const usagesV1_38 = z
  .object({
    usages: z.record(z.string(), usageAmounts.describe('per-class sums and consumer_count')),
  })
  .describe('usages keyed by consumer type ("all", "unknown", ...)');
/** GET /usages: totals before 1.38, per consumer type from 1.38. */
export const usagesResponseSchema = (mv: Microversion) => (mv.atLeast(MV.CONSUMER_TYPES) ? usagesV1_38 : usagesV1_9);

const amounts = z.record(z.string(), z.number().int());
const listAllocation = z.object({ resource_provider: z.object({ uuid }), resources: amounts });
const dictAllocations = z.record(uuid, z.object({ resources: amounts }));
const summaryV1_10 = z.object({ resources: z.record(z.string(), z.object({ capacity: z.number().int(), used: z.number().int() })) });
const summaryV1_17 = summaryV1_10.extend({ traits: z.array(z.string()) });
const summaryV1_29 = summaryV1_17.extend({ parent_provider_uuid: uuid.nullable(), root_provider_uuid: uuid });
const candidates = (request: z.ZodType, summary: z.ZodType) =>
  z.object({ allocation_requests: z.array(request), provider_summaries: z.record(uuid, summary) });
const CANDIDATES = {
  v1_10: candidates(z.object({ allocations: z.array(listAllocation) }), summaryV1_10),
  v1_12: candidates(z.object({ allocations: dictAllocations }), summaryV1_10),
  v1_17: candidates(z.object({ allocations: dictAllocations }), summaryV1_17),
  v1_29: candidates(z.object({ allocations: dictAllocations }), summaryV1_29),
  v1_34: candidates(z.object({ allocations: dictAllocations, mappings: z.record(z.string(), z.array(uuid)) }), summaryV1_29),
};
/** GET /allocation_candidates. */
export function allocationCandidatesResponseSchema(mv: Microversion) {
  if (mv.atLeast(MV.MAPPINGS)) return CANDIDATES.v1_34;
  if (mv.atLeast(MV.AC_NESTED)) return CANDIDATES.v1_29;
  if (mv.atLeast(MV.AC_REQUIRED)) return CANDIDATES.v1_17;
  if (mv.atLeast(MV.ALLOC_DICT)) return CANDIDATES.v1_12;
  return CANDIDATES.v1_10;
}
