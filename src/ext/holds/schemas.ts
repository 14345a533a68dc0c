// The wire shapes of /ext/holds (docs/holds.md), as zod schemas: request
// bodies and query, and the answers (GET /openapi.json describes them from here).
import * as z from 'zod';

const RESOURCE_CLASS = /^[A-Z0-9_]+$/;
const UUID = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;
/** RFC 3339 with an offset or Z, as placement writes times. */
const instant = z.iso.datetime({ offset: true }).describe('RFC 3339 time');
const amount = z
  .int()
  .min(1)
  .max(2 ** 31 - 1);

export const heldAllocationsSchema = z
  .record(z.string().regex(UUID), z.object({ resources: z.record(z.string().regex(RESOURCE_CLASS), amount) }).strict())
  .refine(
    (a) => Object.keys(a).length > 0 && Object.values(a).every((p) => Object.keys(p.resources).length > 0),
    'hold at least one resource',
  );

export const postHoldSchema = z
  .object({
    project_id: z.string().min(1).max(255),
    start: instant,
    end: instant,
    allocations: heldAllocationsSchema,
    end_action: z.enum(['release', 'keep']).default('release'),
    ignore_allocations: z.boolean().default(false),
  })
  .strict();
export type PostHoldBody = z.infer<typeof postHoldSchema>;

/**
 * POST /ext/holds as sent: explicit `allocations`, or `query`, an
 * allocation-candidates query with `count` (as GET /ext/gang_candidates takes
 * it, ext_domain allowed) from which placement picks the providers.
 */
export const postHoldRequestSchema = postHoldSchema
  .extend({
    allocations: heldAllocationsSchema.optional(),
    query: z.string().min(1).max(4096).describe('an allocation-candidates query with count, e.g. resources=PGPU:8&count=4').optional(),
  })
  .strict()
  .refine((b) => (b.allocations === undefined) !== (b.query === undefined), 'give exactly one of allocations and query');

/** PATCH: the generation read, and what changes (the rest stays). */
export const patchHoldSchema = z
  .object({
    generation: z.int().min(1),
    start: instant.optional(),
    end: instant.optional(),
    allocations: heldAllocationsSchema.optional(),
    end_action: z.enum(['release', 'keep']).optional(),
    ignore_allocations: z.boolean().optional(),
  })
  .strict();
export type PatchHoldBody = z.infer<typeof patchHoldSchema>;

export const listHoldsQuery = z
  .object({
    project_id: z.string().min(1).max(255).optional(),
    active_at: instant.optional(),
  })
  .strict();

/** GET /ext/holds/availability's own parameters; every other key is an allocation-candidates query (with `count`: a gang's). */
export const availabilityTimes = z.object({
  duration: z.coerce
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600)
    .describe('extension: seconds the query must fit for, from the start answered'),
  after: instant.optional().describe('extension: the earliest start wanted (default and at the soonest: now)'),
});

export const HoldResponse = z.object({
  uuid: z.string(),
  project_id: z.string(),
  start: z.string(),
  end: z.string(),
  end_action: z.enum(['release', 'keep']),
  ignore_allocations: z.boolean(),
  generation: z.int(),
  allocations: z.record(z.string(), z.object({ resources: z.record(z.string(), z.int()) })),
  created_at: z.string(),
  updated_at: z.string(),
});
export const HoldListResponse = z.object({ holds: z.array(HoldResponse) });
export const AvailabilityResponse = z.object({
  start: z.string().nullable().describe('the earliest start, null when the query never fits'),
  end: z.string().nullable(),
  resource_provider_uuid: z.string().nullable().describe('the one provider the answer uses, when it uses one'),
  allocation_requests: z
    .array(
      z.object({
        allocations: z.record(z.string(), z.object({ resources: z.record(z.string(), z.int()) })),
        mappings: z.record(z.string(), z.array(z.string())).optional(),
      }),
    )
    .describe("what fits from start: one allocation request, or a gang's count members"),
  domain: z.string().nullable().optional().describe("a gang's domain (null with ext_domain=any)"),
});

const TimelineHoldResponse = z.object({
  uuid: z.string(),
  project_id: z.string(),
  start: z.string(),
  end: z.string(),
  end_action: z.string(),
  resources: z
    .record(z.string(), z.object({ held: z.int(), drawn: z.int() }))
    .describe('per class: held, and used by claims drawn from it now'),
});
export const HoldsTimelineResponse = z.object({
  now: z.string(),
  groups: z.array(
    z.object({
      aggregate_uuid: z.string().nullable().describe('null: providers in no aggregate'),
      providers: z.array(z.object({ uuid: z.string(), name: z.string(), holds: z.array(TimelineHoldResponse) })),
    }),
  ),
  truncated: z.literal(true).optional(),
});
