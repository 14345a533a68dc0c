// Project limits: GET /ext/limits[?project_id=P] and POST /ext/limits/refresh.
// Logic in ../service.ts.
import { notFound } from '../../../errors.js';
import type { Deps } from '../../../deps.js';
import { badQuery } from '../../../http/validate.js';
import { RouteTable, zodQuery } from '../../../http/route-table.js';
import { PLACEMENT_API, placementHttp } from '../../../placement/http/profile.js';
import { LimitsAccessRefused, LimitsMisconfigured, LimitsUnavailable } from '../keystone.js';
import { LimitedProjectsResponse, LimitsQuery, LimitsRefreshResponse, ProjectLimitsResponse } from '../responses.js';
import { LIMITS, type ProjectLimits } from '../service.js';
import { adminJson } from '../../http/admin-only.js';

export const limitRoutes = new RouteTable('extensions', placementHttp);

function limitsOf(deps: Deps): ProjectLimits {
  const limits = deps.extensions.state(LIMITS);
  if (!limits) throw notFound('Project limits are off (PLACEMENT_LIMITS=off).');
  return limits;
}

limitRoutes.resource('/limits', {
  GET: adminJson({
    summary: "Extension: the projects at or over a limit; with project_id, that project's limits, usage and what remains",
    query: () => zodQuery(LimitsQuery),
    answer: {
      description: 'The projects at or over a limit, or one project',
      name: 'ProjectLimits',
      schema: ProjectLimitsResponse.or(LimitedProjectsResponse),
    },
    fresh: true,
    run: async (c) => {
      const query = LimitsQuery.safeParse(c.req.query());
      if (!query.success) throw badQuery(`Invalid query string parameters: ${query.error.issues[0]!.message}`);
      const limits = limitsOf(c.var.deps);
      if (query.data.project_id !== undefined) return limits.projectReport(query.data.project_id);
      const [projects, read] = await Promise.all([limits.atOrOverLimit(), limits.provenance()]);
      // The source the limits in force came from (before any read, the one they will be read from).
      return { source: read?.source ?? limits.describe(), read_at: read?.readAt ?? null, projects };
    },
  }),
});

limitRoutes.resource('/limits/refresh', {
  POST: adminJson({
    summary: 'Extension: read the project limits again now (Keystone or PLACEMENT_LIMITS_JSON) and put them in force',
    answer: { description: 'The limits now in force', name: 'LimitsRefresh', schema: LimitsRefreshResponse },
    run: async (c) => {
      const limits = limitsOf(c.var.deps);
      const read = await limits.refresh().catch((err: unknown) => {
        // The source did not give the limits: the last ones read stay in force.
        if (err instanceof LimitsUnavailable || err instanceof LimitsAccessRefused || err instanceof LimitsMisconfigured) {
          throw PLACEMENT_API.error(503, `The project limits were not read again; the last ones read stay in force: ${err.message}`);
        }
        throw err;
      });
      return {
        source: limits.describe(),
        read_at: c.var.deps.clock().toISOString(),
        registered: Object.fromEntries(read.registered),
        projects: read.projects.size,
      };
    },
  }),
});
