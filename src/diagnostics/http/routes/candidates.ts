import { badQuery, queryParams } from '../../../http/validate.js';
import { authorize, setCacheHeaders } from '../../../placement/http/middleware.js';
import { DIAGNOSTICS_RULE } from '../../policy.js';
import { diagnoseCandidates } from '../../why-no-host.js';
import { diagnoseGang, GangAwareDiagnosis } from '../../gang-diagnosis.js';
import { GANG_KEYS, parseGangQuery } from '../../../ext/gangs/index.js';
import { MV } from '../../../placement/versions.js';
import { RouteTable, answers } from '../../../http/route-table.js';
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
      { name: 'count', description: 'extension (1.25+): explain a gang of this many hosts, as GET /ext/gang_candidates searches it' },
      { name: 'ext_domain', description: "extension, with count: 'aggregate' (default) or 'any'" },
      { name: 'ext_domain_member_of', description: 'extension, with count: in:AGG1,AGG2 - only these aggregates may be domains' },
    ],
    ...answers(200, 'Counts after each constraint, a verdict per host, and with count the gang verdict', 'Diagnosis', GangAwareDiagnosis),
    handler: async (c) => {
      authorize(c, DIAGNOSTICS_RULE);
      const { host: hosts = [], ...query } = queryParams(c);
      if (hosts.length > MAX_HOSTS) throw badQuery(`at most ${MAX_HOSTS} host parameters`);
      if (hosts.some((h) => !h.trim() || h.length > 255)) throw badQuery('host must be a provider name or uuid (1-255 characters)');
      const { store, candidates } = c.var.deps;
      const ctx = { store, options: candidates.options({ randomize: false }) };
      if (GANG_KEYS.some((key) => key !== 'limit' && key in query)) {
        // A gang (docs/gangs.md): its parameters as GET /ext/gang_candidates takes them; `limit` counts gangs there.
        if (!c.var.mv.atLeast(MV.GRANULAR)) throw badQuery('count (a gang) needs microversion 1.25 or later');
        const { gang, rest } = parseGangQuery(query);
        const member = candidates.parse(rest, c.var.mv);
        setCacheHeaders(c);
        return c.json(await diagnoseGang(ctx, query, member, gang, c.var.mv, hosts));
      }
      const request = candidates.parse(query, c.var.mv);
      const diagnosis = await diagnoseCandidates(ctx, request, c.var.mv, hosts);
      // An installed gate answers none (project limits: the request alone crosses the caller's limit): said under the gate's key.
      const refused = await candidates.refusal(request, { projectId: c.var.credentials.projectId });
      setCacheHeaders(c);
      return c.json(refused ? { ...diagnosis, allocation_requests: 0, [refused.gate.diagnosisKey]: refused.reason } : diagnosis);
    },
  },
});
