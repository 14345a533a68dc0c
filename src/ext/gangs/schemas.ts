// The wire shapes of the gang routes, as zod schemas: the request body of
// POST /ext/gangs and the answer of GET /ext/gang_candidates (GET
// /openapi.json describes both from here).
import * as z from 'zod';
import type { Microversion } from '../../microversion.js';
import { postAllocationsV1_38 } from '../../placement/schemas/allocations.js';
import { allocationCandidatesResponseSchema } from '../../placement/schemas/responses.js';
import { MAX_LEASE_SECONDS } from '../allocation-ends.js';

/** POST /ext/gangs: every member as one consumer of POST /allocations at 1.38, all claimed or none. */
export const postGangSchema = z
  .object({
    domain: z
      .string()
      .min(1)
      .max(255)
      .nullable()
      .optional()
      .describe('the aggregate every member must be inside (400 otherwise); null or absent: no check'),
    members: postAllocationsV1_38,
    lease_seconds: z.int().min(1).max(MAX_LEASE_SECONDS).optional().describe('one allocation lease on every member, same expiry'),
  })
  .strict();
export type PostGangBody = z.infer<typeof postGangSchema>;

export function gangCandidatesResponseSchema(mv: Microversion) {
  return z.object({
    gangs: z.array(allocationCandidatesResponseSchema(mv).extend({ domain: z.string().nullable() })),
    incomplete: z.literal(true).optional().describe("only when the engine's candidate cap or time budget cut the search"),
  });
}

/** POST /ext/gangs with lease_seconds: the members leased and the lease's one expiry. */
export const GangLeaseResponse = z.object({
  consumers: z.array(z.string()),
  lease_seconds: z.int(),
  expires_at: z.string(),
});
