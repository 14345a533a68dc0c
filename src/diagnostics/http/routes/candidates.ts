import { badQuery, queryParams } from '../../../http/validate.js';
import { authorize, setCacheHeaders } from '../../../placement/http/middleware.js';
import { DIAGNOSTICS_RULE } from '../../policy.js';
import { Diagnosis, type DiagnosisPart, diagnoseCandidates } from '../../why-no-host.js';
import { MV } from '../../../placement/versions.js';
import { RouteTable, answers } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';

/** How many trees one request may ask about: each costs a small query. */
const MAX_HOSTS = 50;

/** Why no host, with the installed extensions' verdicts (a gate's: project limits) and own questions (a gang: count=N). */
export function candidateDiagnosisRoutes(parts: readonly DiagnosisPart[]): RouteTable {
  const routes = new RouteTable('diagnostics', placementHttp);
  const questions = parts.flatMap((part) => (part.question ? [part.question] : []));
  const answer = Diagnosis.extend(Object.fromEntries(parts.map((part) => [part.key, part.schema])));
  routes.resource('/allocation_candidates', {
    GET: {
      since: MV.ALLOCATION_CANDIDATES,
      summary: 'Why no host: the funnel of an allocation-candidates query, and why each named host fails',
      query: (mv) => [
        ...candidateQuery(mv),
        { name: 'host', description: 'a provider name or uuid whose tree to explain (repeatable, at most 50)' },
        ...questions.flatMap((question) => question.query),
      ],
      ...answers(
        200,
        ['Counts after each constraint, a verdict per host', ...questions.map((question) => question.answers)].join(', '),
        'Diagnosis',
        answer,
      ),
      handler: async (c) => {
        authorize(c, DIAGNOSTICS_RULE);
        const { host: hosts = [], ...query } = queryParams(c);
        if (hosts.length > MAX_HOSTS) throw badQuery(`at most ${MAX_HOSTS} host parameters`);
        if (hosts.some((h) => !h.trim() || h.length > 255)) throw badQuery('host must be a provider name or uuid (1-255 characters)');
        const { store, candidates } = c.var.deps;
        const ctx = { store, options: candidates.options({ randomize: false }) };
        const question = questions.find((q) => q.takes(query));
        if (question) {
          const diagnose = question.ask(query, c.var.mv, (plain) => candidates.parse(plain, c.var.mv));
          setCacheHeaders(c);
          return c.json(await diagnose(ctx, hosts));
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
  return routes;
}
