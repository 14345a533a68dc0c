// The answer of GET /ext/headroom; GET /openapi.json describes it from here.
import * as z from 'zod';

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
