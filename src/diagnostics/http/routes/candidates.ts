import { badQuery, queryParams } from '../../../http/validate.js';
import { parseCandidateRequestWithExt } from '../../../placement/candidates/ext-params.js';
import { authorize, requireVersion, setCacheHeaders } from '../../../placement/http/middleware.js';
import { DIAGNOSTICS_RULE } from '../../policy.js';
import { diagnoseCandidates } from '../../why-no-host.js';
import { Diagnosis } from '../../why-no-host.js';
import { MV } from '../../../placement/versions.js';
import { RouteTable } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';

export const candidateDiagnosisRoutes = new RouteTable('diagnostics', placementHttp);

/** How many trees one request may ask about: each costs a small query. */
const MAX_HOSTS = 50;

candidateDiagnosisRoutes.resource('/allocation_candidates', {
  GET: {
    since: MV.ALLOCATION_CANDIDATES,
    summary: 'Why no host: the funnel of an allocation-candidates query, and why each named host fails',
    query: (mv) => [
      ...candidateQuery(mv),
      { name: 'host', description: 'a provider name or uuid whose tree to explain (repeatable, at most 50)' },
    ],
    responses: { 200: 'Counts after each constraint, and a verdict per host' },
    responseSchema: Diagnosis,
    responseName: 'Diagnosis',
    handler: async (c) => {
      requireVersion(c, 'ALLOCATION_CANDIDATES');
      authorize(c, DIAGNOSTICS_RULE);
      const { host: hosts = [], ...query } = queryParams(c);
      if (hosts.length > MAX_HOSTS) throw badQuery(`at most ${MAX_HOSTS} host parameters`);
      if (hosts.some((h) => !h.trim() || h.length > 255)) throw badQuery('host must be a provider name or uuid (1-255 characters)');
      const request = parseCandidateRequestWithExt(query, c.var.mv);
      const { store, candidates } = c.var.deps;
      const diagnosis = await diagnoseCandidates(
        {
          store,
          options: candidates.options({ randomize: false }),
        },
        request,
        c.var.mv,
        hosts,
      );
      setCacheHeaders(c);
      return c.json(diagnosis);
    },
  },
});
