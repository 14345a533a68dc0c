import type { Deps } from '../../../deps.js';
import { queryParams } from '../../../http/validate.js';
import type { CandidateRequest } from '../../candidates/parse.js';
import { findAllocationCandidatesJson } from '../../candidates/index.js';
import { parseCandidateRequestWithExt } from '../../candidates/ext-params.js';
import { authorize, setCacheHeaders } from '../middleware.js';
import { allocationCandidatesResponseSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';
import { candidateQuery } from '../candidate-query.js';

export const allocationCandidateRoutes = new RouteTable('placement', placementHttp);

allocationCandidateRoutes.resource('/allocation_candidates', {
  GET: {
    summary: 'Where a request fits',
    since: MV.ALLOCATION_CANDIDATES,
    query: candidateQuery,
    responses: { 200: 'Allocation requests and provider summaries' },
    response: allocationCandidatesResponseSchema,
    responseName: 'AllocationCandidates',
    handler: async (c) => {
      authorize(c, 'placement:allocation_candidates:list');
      const { store, candidates } = c.var.deps;
      // The engine throws DomainError('invalid') for a bad request: onError renders placement's 400.
      // Read near this instance (a replica where one is configured, never older than our own writes):
      // a candidate a replica's lag made stale is refused by the claim, which is checked on the primary.
      const request = parseCandidateRequestWithExt(queryParams(c), c.var.mv);
      // ext_within_limits=true (project limits, docs/limits.md): none when the request alone would cross the caller's limit.
      if (request.withinLimits && (await crossesLimit(c.var.deps, c.var.credentials.projectId, request))) {
        setCacheHeaders(c);
        return c.json({ allocation_requests: [], provider_summaries: {} });
      }
      const json = await findAllocationCandidatesJson(store.nearby, request, c.var.mv, candidates.options());
      // Candidates reflect usage right now, so they are never cacheable.
      setCacheHeaders(c);
      // Written as JSON bytes by the engine (present/json.ts): the same bytes c.json() would send.
      return c.body(json, 200, { 'content-type': 'application/json' });
    },
  },
});

/** Whether the request alone would cross `project`'s limits (Deps.limits: the extension, installed by compose.ts). */
async function crossesLimit(deps: Deps, project: string | null, request: CandidateRequest): Promise<boolean> {
  if (!deps.limits || project === null) return false;
  return (
    (await deps.limits.crossing(
      project,
      request.groups.map((g) => g.resources),
    )) !== null
  );
}
