// Bodies of the /ext/ resources (docs/extensions.md), checked with zod at the edge.
import { z } from 'zod';
import { TAINT_KEY } from '../placement/candidates/ext-params.js';
import { EXCLUDING_EFFECTS } from './taints/filter.js';

export const TAINT_EFFECTS = EXCLUDING_EFFECTS;

export const taintSchema = z
  .object({
    key: z.string().regex(TAINT_KEY).max(316),
    value: z.string().max(255).default(''),
    effect: z.enum(TAINT_EFFECTS),
    reason: z.string().max(1024).default(''),
  })
  .strict();
export type Taint = z.infer<typeof taintSchema>;

export const putTaintsSchema = z
  .object({
    resource_provider_generation: z.int().min(0),
    taints: z.array(taintSchema).max(64),
  })
  .strict();

/** Longest lease: 7 days (a lease is for the gap between claim and build, not for parking capacity). */
export const MAX_LEASE_SECONDS = 7 * 24 * 3600;

export const putLeaseSchema = z.object({ seconds: z.int().min(1).max(MAX_LEASE_SECONDS) }).strict();

// Shared counters of partitionable devices (docs/extensions-gpu.md): PUT /ext/resource_providers/{uuid}/counters.

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
