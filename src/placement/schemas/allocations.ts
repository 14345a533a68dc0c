// Request bodies of PUT /allocations/{consumer_uuid} and POST /allocations,
// one schema per microversion range as placement/schemas/allocation.py.
// Messages follow jsonschema's wording because clients and tests match them.
import * as z from 'zod';
import { pyRepr } from '../../shared/validation-messages.js';
import type { Microversion } from '../../microversion.js';
import { UUID_PATTERN } from '../../shared/uuid.js';
import { MV } from '../versions.js';

export const RC_PATTERN = /^[A-Z0-9_]+$/;
export const CONSUMER_TYPE_PATTERN = /^[A-Z0-9_]+$/;
const GROUP_SUFFIX_PATTERN = /^([a-zA-Z0-9_-]{1,64})?$/;

/** A provider uuid in an allocation body: the canonical form only (unlike provider bodies, see providers.ts). */
const canonicalUuidString = z.string().superRefine((value, ctx) => {
  if (!UUID_PATTERN.test(value)) {
    ctx.addIssue({ code: 'custom', message: `${pyRepr(value)} is not a 'uuid'`, params: { keyword: 'format' } });
  }
});

/**
 * An object whose keys must all match `pattern` (jsonschema patternProperties
 * with additionalProperties false) and that has at least `minProperties` keys.
 */
export function patternRecord<V extends z.ZodType>(pattern: RegExp, value: V, minProperties = 0) {
  return z
    .record(z.string(), value)
    .superRefine((record, ctx) => {
      const keys = Object.keys(record);
      if (keys.length < minProperties) {
        ctx.addIssue({
          code: 'custom',
          message: `${pyRepr(record)} does not have enough properties`,
          params: { keyword: 'minProperties' },
        });
        return;
      }
      const extras = keys.filter((k) => !pattern.test(k)).sort();
      if (extras.length > 0) {
        const verb = extras.length === 1 ? 'does' : 'do';
        ctx.addIssue({
          code: 'custom',
          message: `${extras.map((k) => pyRepr(k)).join(', ')} ${verb} not match any of the regexes: ${pyRepr(pattern.source)}`,
          params: { keyword: 'additionalProperties' },
        });
      }
      // The same rules as JSON Schema, for GET /openapi.json (the refinement above is what validates).
    })
    .meta({ propertyNames: { pattern: pattern.source }, ...(minProperties > 0 ? { minProperties } : {}) });
}

const externalId = z.string().min(1).max(255);
const amount = z.int().min(1);
/** {RESOURCE_CLASS: amount, ...}, at least one class. */
export const resourceAmounts = patternRecord(RC_PATTERN, amount, 1);

// --- PUT /allocations/{consumer_uuid} ---------------------------------------

const listAllocation = z
  .object({
    resource_provider: z.object({ uuid: canonicalUuidString }).strict(),
    resources: resourceAmounts,
  })
  .strict();
const listAllocations = z.array(listAllocation).min(1);

export const putAllocationsV1_0 = z.object({ allocations: listAllocations }).strict();
export const putAllocationsV1_8 = putAllocationsV1_0.extend({ project_id: externalId, user_id: externalId }).strict();

/** The GET shape: {rp_uuid: {resources: {...}, generation?}}; generation is ignored. */
const providerAllocation = z.object({ generation: z.int().optional(), resources: resourceAmounts }).strict();
const dictAllocations = (minProperties: number) => patternRecord(UUID_PATTERN, providerAllocation, minProperties);
const consumerGeneration = z.int().nullable();
const mappings = patternRecord(GROUP_SUFFIX_PATTERN, z.array(canonicalUuidString).min(1), 1);
const consumerType = z.string().regex(CONSUMER_TYPE_PATTERN).min(1).max(255);

export const putAllocationsV1_12 = z
  .object({
    allocations: dictAllocations(1),
    project_id: externalId,
    user_id: externalId,
  })
  .strict();
export const putAllocationsV1_28 = putAllocationsV1_12
  .extend({
    allocations: dictAllocations(0),
    consumer_generation: consumerGeneration,
  })
  .strict();
export const putAllocationsV1_34 = putAllocationsV1_28.extend({ mappings: mappings.optional() }).strict();
export const putAllocationsV1_38 = putAllocationsV1_34.extend({ consumer_type: consumerType }).strict();

// --- POST /allocations (and the allocations half of POST /reshaper) ----------

const consumerAllocationsV1_13 = z
  .object({
    allocations: dictAllocations(0),
    project_id: externalId,
    user_id: externalId,
  })
  .strict();
const consumerAllocationsV1_28 = consumerAllocationsV1_13.extend({ consumer_generation: consumerGeneration }).strict();
const consumerAllocationsV1_34 = consumerAllocationsV1_28.extend({ mappings: mappings.optional() }).strict();
const consumerAllocationsV1_38 = consumerAllocationsV1_34.extend({ consumer_type: consumerType }).strict();

export const postAllocationsV1_13 = patternRecord(UUID_PATTERN, consumerAllocationsV1_13, 1);
export const postAllocationsV1_28 = patternRecord(UUID_PATTERN, consumerAllocationsV1_28, 1);
export const postAllocationsV1_34 = patternRecord(UUID_PATTERN, consumerAllocationsV1_34, 1);
export const postAllocationsV1_38 = patternRecord(UUID_PATTERN, consumerAllocationsV1_38, 1);

/** One consumer's part of a POST /allocations or /reshaper body, in its widest shape. */
export interface ConsumerAllocationsBody {
  allocations: Record<string, { resources: Record<string, number> }>;
  project_id: string;
  user_id: string;
  consumer_generation?: number | null;
  consumer_type?: string;
}

// Each *Schema(mv) below is the one place a body's shape is chosen by
// microversion: the handler validates with it and GET /openapi.json
// describes it, so the two cannot disagree.

/** The PUT /allocations/{consumer_uuid} body schema for a microversion (a list before 1.12). */
export function putAllocationsSchema(mv: Microversion) {
  if (mv.atLeast(MV.CONSUMER_TYPES)) return putAllocationsV1_38;
  if (mv.atLeast(MV.MAPPINGS)) return putAllocationsV1_34;
  if (mv.atLeast(MV.CONSUMER_GENERATION)) return putAllocationsV1_28;
  if (mv.atLeast(MV.ALLOC_DICT)) return putAllocationsV1_12;
  if (mv.atLeast(MV.ALLOC_PROJECT_USER_REQUIRED)) return putAllocationsV1_8;
  return putAllocationsV1_0;
}
export type PutAllocationsListBody = z.infer<typeof putAllocationsV1_0> | z.infer<typeof putAllocationsV1_8>;
export type PutAllocationsBody = z.infer<ReturnType<typeof putAllocationsSchema>>;
export const isListForm = (body: PutAllocationsBody): body is PutAllocationsListBody => Array.isArray(body.allocations);

/** The POST /allocations body schema for a microversion. */
export function postAllocationsSchema(mv: Microversion) {
  if (mv.atLeast(MV.CONSUMER_TYPES)) return postAllocationsV1_38;
  if (mv.atLeast(MV.MAPPINGS)) return postAllocationsV1_34;
  if (mv.atLeast(MV.CONSUMER_GENERATION)) return postAllocationsV1_28;
  return postAllocationsV1_13;
}

const RESHAPER_CONSUMER = {
  [MV.CONSUMER_TYPES]: patternRecord(UUID_PATTERN, consumerAllocationsV1_38, 0),
  [MV.MAPPINGS]: patternRecord(UUID_PATTERN, consumerAllocationsV1_34, 0),
  [MV.CONSUMER_GENERATION]: patternRecord(UUID_PATTERN, consumerAllocationsV1_28, 0),
};

/** Consumer allocations as the reshaper takes them: like POST /allocations, possibly empty. */
export function reshaperAllocationsSchema(mv: Microversion) {
  return mv.atLeast(MV.CONSUMER_TYPES)
    ? RESHAPER_CONSUMER[MV.CONSUMER_TYPES]
    : mv.atLeast(MV.MAPPINGS)
      ? RESHAPER_CONSUMER[MV.MAPPINGS]
      : RESHAPER_CONSUMER[MV.CONSUMER_GENERATION];
}
