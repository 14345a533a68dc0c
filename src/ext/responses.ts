// The answers of the /ext/ resources, as zod schemas: GET /openapi.json
// describes them from here, and the OpenAPI tests validate live answers.
import { z } from 'zod';
import { TAINT_EFFECTS } from './schemas.js';

export const HeadroomResponse = z.object({
  total: z.int().min(0),
  trees: z.array(z.object({ root_provider_uuid: z.string(), count: z.int().min(1) })),
  incomplete: z.literal(true).optional().describe('only when the search ran out of its time budget: counts are lower bounds'),
  count: z.int().min(1).optional().describe('with count=N (gangs, docs/gangs.md): the gang size asked'),
  domains: z
    .array(z.object({ domain: z.string().nullable(), gangs: z.int().min(1) }))
    .optional()
    .describe('with count=N: per domain (aggregate), how many more gangs of N distinct hosts fit'),
});

const StoredTaint = z.object({
  key: z.string(),
  value: z.string(),
  effect: z.enum(TAINT_EFFECTS),
  reason: z.string(),
  created_at: z.string(),
});

export const ProviderTaintsResponse = z.object({ resource_provider_generation: z.int(), taints: z.array(StoredTaint) });

export const DrainListResponse = z.object({
  taints: z.array(
    z.object({
      resource_provider_uuid: z.string(),
      resource_provider_name: z.string(),
      root_provider_uuid: z.string(),
      taint: StoredTaint,
      consumers: z.array(z.string()).describe('consumers allocated on the provider (a tainted root: anywhere in its tree)'),
    }),
  ),
});

export const LeaseResponse = z.object({
  consumer_uuid: z.string(),
  seconds: z.int(),
  expires_at: z.string(),
  consumer_generation: z.int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const LeaseListResponse = z.object({ leases: z.array(LeaseResponse) });
