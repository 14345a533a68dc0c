// Response bodies of every Placement operation, per microversion: the one
// description of the wire shapes. The presenters (../present/, the candidate
// engine's present/) return the types inferred from these schemas, and
// GET /openapi.json is generated from them; the OpenAPI test validates live
// answers at several microversions against the document, so neither the code
// nor the document can drift from what is sent.
import * as z from 'zod';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';

const uuid = z.string();
const link = z.object({ rel: z.string(), href: z.string() });
const links = z.array(link);
const generation = z.number().int();
/** Amounts per resource class name. */
const amounts = z.record(z.string(), z.number().int());

// --- Errors -----------------------------------------------------------------
/** Placement's error envelope, as ../errors.ts renders it. */
export const PlacementErrorEnvelope = z.object({
  errors: z
    .array(
      z.object({
        status: z.number().int(),
        title: z.string(),
        detail: z.string(),
        request_id: z.string(),
        code: z.string().optional().describe('from microversion 1.23, e.g. placement.concurrent_update'),
        min_version: z.string().optional().describe('406 only'),
        max_version: z.string().optional().describe('406 only'),
      }),
    )
    .min(1),
});
export type PlacementErrorJson = z.infer<typeof PlacementErrorEnvelope>;

// --- GET / ------------------------------------------------------------------
export const versionDocumentSchema = z.object({
  versions: z.array(z.object({ id: z.string(), max_version: z.string(), min_version: z.string(), status: z.string(), links })),
});
export type VersionDocumentJson = z.infer<typeof versionDocumentSchema>;

// --- Resource providers -------------------------------------------------------
const providerV1_0 = z.object({ uuid, name: z.string(), generation, links });
export const providerV1_14 = providerV1_0.extend({ parent_provider_uuid: uuid.nullable(), root_provider_uuid: uuid });
export type ProviderJson = z.infer<typeof providerV1_0> & Partial<z.infer<typeof providerV1_14>>;
export type ProviderLink = z.infer<typeof link>;

/** One resource provider (GET/PUT /resource_providers/{uuid}, POST from 1.20). */
export const providerResponseSchema = (mv: Microversion) => (mv.atLeast(MV.NESTED) ? providerV1_14 : providerV1_0);

const providerListV1_0 = z.object({ resource_providers: z.array(providerV1_0) });
export const providerListV1_14 = z.object({ resource_providers: z.array(providerV1_14) });
export const providerListResponseSchema = (mv: Microversion) => (mv.atLeast(MV.NESTED) ? providerListV1_14 : providerListV1_0);

// --- Aggregates (1.1+) --------------------------------------------------------
const aggregatesV1_1 = z.object({ aggregates: z.array(uuid) });
export const aggregatesV1_19 = aggregatesV1_1.extend({ resource_provider_generation: generation });
export type AggregatesJson = z.infer<typeof aggregatesV1_1> & Partial<z.infer<typeof aggregatesV1_19>>;
/** GET/PUT /resource_providers/{uuid}/aggregates: the provider generation beside the list from 1.19. */
export const aggregatesResponseSchema = (mv: Microversion) => (mv.atLeast(MV.AGGREGATE_GENERATION) ? aggregatesV1_19 : aggregatesV1_1);

// --- Traits (1.6+) ------------------------------------------------------------
export const traitListResponseSchema = z.object({ traits: z.array(z.string()) });
export type TraitListJson = z.infer<typeof traitListResponseSchema>;
export const providerTraitsResponseSchema = z.object({ traits: z.array(z.string()), resource_provider_generation: generation });
export type ProviderTraitsJson = z.infer<typeof providerTraitsResponseSchema>;

// --- Inventories --------------------------------------------------------------
export const inventorySchema = z.object({
  total: z.number().int(),
  reserved: z.number().int(),
  min_unit: z.number().int(),
  max_unit: z.number().int(),
  step_size: z.number().int(),
  allocation_ratio: z.number(),
});
export type InventoryJson = z.infer<typeof inventorySchema>;
/** One inventory (GET/PUT/POST .../inventories[/{class}]): the record with the provider generation. */
export const inventoryResponseSchema = inventorySchema.extend({ resource_provider_generation: generation });
export type InventoryWithGenerationJson = z.infer<typeof inventoryResponseSchema>;
export const inventoriesSchema = z.object({ resource_provider_generation: generation, inventories: z.record(z.string(), inventorySchema) });
export type InventoriesJson = z.infer<typeof inventoriesSchema>;

// --- Allocations --------------------------------------------------------------
const consumerAllocationsV1_0 = z.object({
  allocations: z.record(uuid, z.object({ generation, resources: amounts })),
});
// Owner fields appear only while the consumer has allocations, as upstream.
const consumerAllocationsV1_12 = consumerAllocationsV1_0.extend({ project_id: z.string().optional(), user_id: z.string().optional() });
const consumerAllocationsV1_28 = consumerAllocationsV1_12.extend({ consumer_generation: generation.optional() });
const consumerAllocationsV1_38 = consumerAllocationsV1_28.extend({ consumer_type: z.string().optional() });
export type ConsumerAllocationsJson = z.infer<typeof consumerAllocationsV1_38>;
/** GET /allocations/{consumer_uuid}. */
export function consumerAllocationsResponseSchema(mv: Microversion) {
  if (mv.atLeast(MV.CONSUMER_TYPES)) return consumerAllocationsV1_38;
  if (mv.atLeast(MV.CONSUMER_GENERATION)) return consumerAllocationsV1_28;
  if (mv.atLeast(MV.ALLOC_DICT)) return consumerAllocationsV1_12;
  return consumerAllocationsV1_0;
}

const providerAllocationsV1_0 = z.object({
  allocations: z.record(uuid, z.object({ resources: amounts })),
  resource_provider_generation: generation,
});
const providerAllocationsV1_28 = z.object({
  allocations: z.record(uuid, z.object({ resources: amounts, consumer_generation: generation.nullable() })),
  resource_provider_generation: generation,
});
export type ProviderAllocationsJson = z.infer<typeof providerAllocationsV1_0> | z.infer<typeof providerAllocationsV1_28>;
/** GET /resource_providers/{uuid}/allocations: each consumer's generation from 1.28. */
export const providerAllocationsResponseSchema = (mv: Microversion) =>
  mv.atLeast(MV.CONSUMER_GENERATION) ? providerAllocationsV1_28 : providerAllocationsV1_0;

// --- Resource classes (1.2+) --------------------------------------------------
export const resourceClassSchema = z.object({ name: z.string(), links });
export type ResourceClassJson = z.infer<typeof resourceClassSchema>;
export const resourceClassListSchema = z.object({ resource_classes: z.array(resourceClassSchema) });
export type ResourceClassListJson = z.infer<typeof resourceClassListSchema>;

// --- Usages -------------------------------------------------------------------
export const providerUsagesSchema = z.object({ resource_provider_generation: generation, usages: amounts });
export type ProviderUsagesJson = z.infer<typeof providerUsagesSchema>;

const usagesV1_9 = z.object({ usages: amounts });
export type UsagesJson = z.infer<typeof usagesV1_9>;
const usagesV1_38 = z
  .object({
    usages: z.record(z.string(), amounts.describe('per-class sums and consumer_count')),
  })
  .describe('usages keyed by consumer type ("all", "unknown", ...)');
export type TypedUsagesJson = z.infer<typeof usagesV1_38>;
/** GET /usages: totals before 1.38, per consumer type from 1.38. */
export const usagesResponseSchema = (mv: Microversion) => (mv.atLeast(MV.CONSUMER_TYPES) ? usagesV1_38 : usagesV1_9);

// --- Allocation candidates (1.10+) --------------------------------------------
const listAllocation = z.object({ resource_provider: z.object({ uuid }), resources: amounts });
const dictAllocations = z.record(uuid, z.object({ resources: amounts }));
const summaryV1_10 = z.object({ resources: z.record(z.string(), z.object({ capacity: z.number().int(), used: z.number().int() })) });
const summaryV1_17 = summaryV1_10.extend({ traits: z.array(z.string()) });
const summaryV1_29 = summaryV1_17.extend({ parent_provider_uuid: uuid.nullable(), root_provider_uuid: uuid });
const listRequest = z.object({ allocations: z.array(listAllocation) });
const dictRequest = z.object({ allocations: dictAllocations });
const mappedRequest = dictRequest.extend({ mappings: z.record(z.string(), z.array(uuid)) });
const candidates = (request: z.ZodType, summary: z.ZodType) =>
  z.object({ allocation_requests: z.array(request), provider_summaries: z.record(uuid, summary) });
const CANDIDATES = {
  v1_10: candidates(listRequest, summaryV1_10),
  v1_12: candidates(dictRequest, summaryV1_10),
  v1_17: candidates(dictRequest, summaryV1_17),
  v1_29: candidates(dictRequest, summaryV1_29),
  v1_34: candidates(mappedRequest, summaryV1_29),
};
/** GET /allocation_candidates. */
export function allocationCandidatesResponseSchema(mv: Microversion) {
  if (mv.atLeast(MV.MAPPINGS)) return CANDIDATES.v1_34;
  if (mv.atLeast(MV.AC_NESTED)) return CANDIDATES.v1_29;
  if (mv.atLeast(MV.AC_REQUIRED)) return CANDIDATES.v1_17;
  if (mv.atLeast(MV.ALLOC_DICT)) return CANDIDATES.v1_12;
  return CANDIDATES.v1_10;
}
/** The pieces of a candidates body, every microversion's fields optional where they come and go. */
export type ListAllocationJson = z.infer<typeof listAllocation>;
export type DictAllocationRequestJson = z.infer<typeof dictRequest> & Partial<z.infer<typeof mappedRequest>>;
export type ProviderSummaryJson = z.infer<typeof summaryV1_10> & Partial<z.infer<typeof summaryV1_29>>;
export interface CandidatesJson {
  allocation_requests: (z.infer<typeof listRequest> | DictAllocationRequestJson)[];
  provider_summaries: Record<string, ProviderSummaryJson>;
}
