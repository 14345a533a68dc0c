// The body and answer of PUT/GET /ext/resource_providers/{uuid}/counters (shared
// counters of partitionable devices), checked with zod at the edge; GET
// /openapi.json describes them from here.
import * as z from 'zod';

/** Counter names as Kubernetes' DRA names counters (a DNS label), up to 63 characters. */
export const COUNTER_NAME = /^[a-z0-9]([a-z0-9_-]{0,61}[a-z0-9])?$/;
const RESOURCE_CLASS = /^([A-Z0-9_]+)$/;
const count = z
  .int()
  .min(0)
  .max(2 ** 31 - 1);

export const putCountersSchema = z
  .object({
    resource_provider_generation: z.int(),
    counters: z.record(z.string().regex(COUNTER_NAME), count),
    consumption: z.record(z.string().regex(RESOURCE_CLASS).max(255), z.record(z.string().regex(COUNTER_NAME), count)),
  })
  .strict();

/** What GET and PUT answer: the document as stored, plus each counter's load from current usage. */
export const countersResponseSchema = z.object({
  resource_provider_generation: z.int(),
  counters: z.record(z.string(), z.int()).describe('counter name -> total'),
  consumption: z.record(z.string(), z.record(z.string(), z.int())).describe('resource class -> counter -> units per unit of the class'),
  load: z.record(z.string(), z.int()).describe('counter -> sum over classes of usage x consumption, now'),
});
