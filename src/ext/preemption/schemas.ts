// The bodies and answers of /ext/consumers/{uuid}/priority, /ext/priorities
// and /ext/preemption_candidates, checked with zod at the edge; GET
// /openapi.json describes them from here.
import * as z from 'zod';

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

const uuid = z.string().regex(/^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/, 'a uuid');

/** Longest grace: a day (a victim's owner is told to stop; the sweep ends it after this at the latest). */
export const MAX_GRACE_SECONDS = 24 * 3600;

export const postPreemptionSchema = z
  .object({
    preemptor: z
      .object({
        consumer_uuid: uuid,
        project_id: z.string().min(1).max(255),
        /** Without it, the project's default priority. */
        priority: priorityValue.optional(),
        allocations: z
          .record(uuid, z.object({ resources: z.record(z.string().regex(/^[A-Z0-9_]+$/), z.int().min(1)) }).strict())
          .refine((a) => Object.keys(a).length > 0 && Object.values(a).every((r) => Object.keys(r.resources).length > 0), 'some resources'),
      })
      .strict(),
    victims: z.array(uuid).min(1).max(256),
    grace_seconds: z.int().min(0).max(MAX_GRACE_SECONDS),
  })
  .strict();
export type PostPreemptionBody = z.infer<typeof postPreemptionSchema>;

export const PreemptionResponse = z.object({
  id: z.string(),
  preemptor: z.object({ consumer_uuid: z.string(), project_id: z.string(), priority: z.int() }),
  hold_uuid: z.string(),
  grace_seconds: z.int(),
  victims_leased_until: z.string(),
  nomination_until: z.string(),
  victims: z.array(z.object({ consumer_uuid: z.string(), consumer_generation: z.int(), priority: z.int(), frees: Resources })),
  created_at: z.string(),
});
