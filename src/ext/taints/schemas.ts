// The bodies and answers of the taints' routes, checked with zod at the edge;
// GET /openapi.json describes them from here.
import * as z from 'zod';
import { EXCLUDING_EFFECTS } from './filter.js';
import { TAINT_KEY } from './params.js';

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
