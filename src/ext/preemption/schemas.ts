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
