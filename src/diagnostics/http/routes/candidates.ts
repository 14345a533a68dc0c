// GET /diagnostics/allocation_candidates?<the query of GET /allocation_candidates>[&host=NAME_OR_UUID...]
// Parsed by the same parser, at the request's microversion; explained by
// ../why-no-host.ts on top of the candidate engine.
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { badQuery, queryParams } from '../../../http/validate.js';
import { parseCandidateRequestWithExt } from '../../../placement/candidates/ext-params.js';
import { authorize, requireVersion, resource, setCacheHeaders } from '../../../placement/http/middleware.js';
import { DIAGNOSTICS_RULE } from '../../policy.js';
import { diagnoseCandidates } from '../../why-no-host.js';

export const candidateDiagnosisRoutes = new Hono<AppEnv>();

/** How many trees one request may ask about: each costs a small query. */
const MAX_HOSTS = 50;

resource(candidateDiagnosisRoutes, '/allocation_candidates', {
  GET: async (c) => {
    requireVersion(c, 'ALLOCATION_CANDIDATES');
    authorize(c, DIAGNOSTICS_RULE);
    const { host: hosts = [], ...query } = queryParams(c);
    if (hosts.length > MAX_HOSTS) throw badQuery(`at most ${MAX_HOSTS} host parameters`);
    if (hosts.some((h) => !h.trim() || h.length > 255)) throw badQuery('host must be a provider name or uuid (1-255 characters)');
    const request = parseCandidateRequestWithExt(query, c.var.mv);
    const { config, store, clock } = c.var.deps;
    const diagnosis = await diagnoseCandidates(
      {
        store,
        options: {
          randomize: false,
          maxCandidates: config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
          timeBudgetMs: config.PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS,
          treeCacheProviders: config.PLACEMENT_CANDIDATE_TREE_CACHE,
          now: clock().getTime(),
          generationStrategy: config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
        },
      },
      request,
      c.var.mv,
      hosts,
    );
    setCacheHeaders(c);
    return c.json(diagnosis);
  },
});
