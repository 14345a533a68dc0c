// Bodies of the /ext/ resources (docs/extensions.md), checked with zod at the edge.
import { z } from 'zod';
import { TAINT_KEY } from '../placement/candidates/ext-params.js';
import { EXCLUDING_EFFECTS } from '../placement/candidates/taints.js';

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
