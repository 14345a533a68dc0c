// The bodies and answers of /ext/consumers/{uuid}/priority, /ext/priorities
// and /ext/preemption_candidates, checked with zod at the edge; GET
// /openapi.json describes them from here.
import { z } from 'zod';

/** Priorities are Kubernetes' range for user classes: 0 up to a billion (higher: more important). */
export const MIN_PRIORITY = 0;
export const MAX_PRIORITY = 1_000_000_000;

export const priorityValue = z.int().min(MIN_PRIORITY).max(MAX_PRIORITY);
export const putPrioritySchema = z.object({ priority: priorityValue }).strict();

export const ConsumerPriorityResponse = z.object({
  consumer_uuid: z.string(),
  priority: z.int(),
  source: z.enum(['consumer', 'project']),
});

export const ProjectPriorityResponse = z.object({
  project_id: z.string(),
  priority: z.int(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const ProjectPriorityListResponse = z.object({ priorities: z.array(ProjectPriorityResponse) });

/** ext_priority: the preemptor's priority, one integer in the priorities' range. */
export const preemptorPriorityParam = z.coerce.number().pipe(priorityValue);

const Resources = z.record(z.string(), z.object({ resources: z.record(z.string(), z.int()) }));

export const VictimResponse = z.object({
  consumer_uuid: z.string(),
  project_id: z.string(),
  priority: z.int(),
  consumer_generation: z.int(),
  frees: Resources,
});

export const VictimCostResponse = z.object({
  highest_priority: z.int(),
  priority_sum: z.int(),
  victims: z.int(),
  left_over: z.int(),
});

export const PreemptionCandidatesResponse = z.object({
  allocation_requests: z.array(
    z.looseObject({ victims: z.array(VictimResponse), cost: VictimCostResponse, method: z.enum(['exact', 'greedy']) }),
  ),
  provider_summaries: z.record(z.string(), z.unknown()),
  preemption: z.object({ priority: z.int(), exact_limit: z.int(), methods: z.array(z.enum(['exact', 'greedy'])) }),
});
