// The answers and queries of /ext/limits (extension, docs/limits.md), as zod
// schemas: GET /openapi.json describes them from here, and the handlers
// validate their queries with them.
import * as z from 'zod';

const ClassLimit = z.object({
  limit: z.int().min(0),
  usage: z.int().min(0).describe('the usage that counts: consumers of the counted types (PLACEMENT_LIMITS_CONSUMER_TYPES, untyped ones)'),
  remaining: z.int().describe('limit - usage; negative when a limit was lowered below the usage'),
});

export const ProjectLimitsResponse = z.object({
  project_id: z.string(),
  limits: z.record(z.string(), ClassLimit).describe('each limited resource class'),
});

export const LimitedProjectsResponse = z.object({
  source: z.string().describe('where the limits in force were read from (before the first read, where they will be)'),
  read_at: z.string().nullable().describe('when the limits in force were last read (null: never)'),
  projects: z.array(ProjectLimitsResponse).describe('the projects at or over a limit, with those classes only'),
});

export const LimitsRefreshResponse = z.object({
  source: z.string(),
  read_at: z.string(),
  registered: z.record(z.string(), z.int().min(0)).describe('the default limit of each class'),
  projects: z.int().min(0).describe('how many projects have limits of their own'),
});

export const LimitsQuery = z.strictObject({
  project_id: z.string().min(1).max(255).optional().describe("one project's limits, usage and what remains"),
});
