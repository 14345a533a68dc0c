// The answers of POST /ext/simulate and GET /ext/defrag as zod schemas (GET /openapi.json describes them from here).
import * as z from 'zod';

const Allocations = z.record(z.string(), z.object({ resources: z.record(z.string(), z.int()) }));
const Headroom = z.object({
  total: z.int().min(0),
  trees: z.int().min(0).describe('trees with room for at least one'),
  domains: z
    .array(z.object({ domain: z.string().nullable(), gangs: z.int().min(1) }))
    .optional()
    .describe('with count=N: gangs per domain'),
  per_tree: z
    .array(z.object({ root_provider_uuid: z.string(), count: z.int().min(1) }))
    .optional()
    .describe('with per_tree: true, every tree with room'),
});
const OverCapacity = z.object({ resource_provider_uuid: z.string(), resource_class: z.string(), capacity: z.number(), used: z.number() });
const Dashboard = z.object({
  total_providers: z.int(),
  total_trees: z.int(),
  attention_total: z.int(),
  resource_classes: z.record(
    z.string(),
    z.object({
      providers: z.int(),
      capacity: z.number(),
      used: z.number(),
      free: z.number(),
      over_threshold: z.int(),
      over_capacity: z.int(),
    }),
  ),
});

export const SimulationResponse = z.object({
  changes: z.array(
    z.object({
      op: z.string(),
      matched: z.int(),
      copies: z.array(z.record(z.string(), z.string())).optional().describe('add_copies: per copy, source provider uuid -> new uuid'),
      skipped: z.array(z.string()).optional(),
      hold: z
        .object({ uuid: z.string(), allocations: Allocations })
        .optional()
        .describe("add_hold: the simulated hold's uuid and what it holds (a query's pick pinned)"),
      gang: z
        .object({ consumers: z.array(z.string()), expires_at: z.string().optional() })
        .optional()
        .describe("add_gang: the members claimed, and the lease's expiry"),
    }),
  ),
  queries: z.array(z.object({ name: z.string(), query: z.string(), before: Headroom, after: Headroom })),
  displaced: z.array(
    z.object({
      consumer_uuid: z.string(),
      reason: z.enum(['over_capacity', 'tree_removed']),
      from: Allocations,
      could_go: Allocations.nullable(),
    }),
  ),
  displaced_not_placed: z.int().optional(),
  removed_consumers: z.array(z.string()),
  over_capacity: z.object({ before: z.array(OverCapacity), after: z.array(OverCapacity) }),
  dashboard: z.object({ before: Dashboard, after: Dashboard }),
});

export const DefragResponse = z.object({
  count: z.int(),
  max_moves: z.int(),
  candidates_before: z.int(),
  candidates_after: z.int(),
  feasible: z.boolean(),
  moves: z.array(
    z.object({
      consumer_uuid: z.string(),
      project_id: z.string(),
      user_id: z.string(),
      consumer_type: z.string().nullable(),
      consumer_generation: z.int(),
      from: Allocations,
      to: Allocations,
    }),
  ),
  resources_moved: z.record(z.string(), z.int()).describe('units moved per class, over every move'),
});
