import { queryParams } from '../../../http/validate.js';
import { findAllocationCandidatesJson } from '../../candidates/index.js';
import { authorize, setCacheHeaders } from '../middleware.js';
import { allocationCandidatesResponseSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';
import { candidateQuery } from '../candidate-query.js';

export const allocationCandidateRoutes = new RouteTable('placement', placementHttp);

allocationCandidateRoutes.resource('/allocation_candidates', {
  GET: {
    summary: 'Where a request fits',
    since: MV.ALLOCATION_CANDIDATES,
    query: candidateQuery,
    ...answers(200, 'Allocation requests and provider summaries', 'AllocationCandidates', allocationCandidatesResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:allocation_candidates:list');
      const { store, candidates } = c.get('deps');
      // The engine throws DomainError('invalid') for a bad request: onError renders placement's 400.
      // Read near this instance (a replica where one is configured, never older than our own writes):
      // a candidate a replica's lag made stale is refused by the claim, which is checked on the primary.
      const url = c.req.url;
      const query = url.indexOf('?');
      const request = candidates.parseRepeated(query < 0 ? '' : url.slice(query + 1), c.get('mv'), () => queryParams(c));
      // An installed extension may answer none before any search (project limits: the request alone crosses the caller's limit).
      if (await candidates.refusal(request, { projectId: c.get('credentials').projectId })) {
        setCacheHeaders(c);
        return c.json({ allocation_requests: [], provider_summaries: {} });
      }
      const json = await findAllocationCandidatesJson(store.nearby, request, c.get('mv'), candidates.options());
      // Candidates reflect usage right now, so they are never cacheable.
      setCacheHeaders(c);
      // Written as JSON bytes by the engine (present/json.ts): the same bytes c.json() would send.
      return c.body(json, 200, { 'content-type': 'application/json' });
    },
  },
});
