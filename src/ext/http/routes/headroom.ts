import { queryParams } from '../../../http/validate.js';
import { parseCandidateRequestWithExt } from '../../../placement/candidates/ext-params.js';
import { authorize, requireVersion } from '../../../placement/http/middleware.js';
import { findHeadroom } from '../../headroom.js';
import { findGangHeadroom } from '../../gangs/headroom.js';
import { EXT_RULE } from '../../policy.js';
import { MV } from '../../../placement/versions.js';
import { HeadroomResponse } from '../../responses.js';
import { RouteTable } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';

export const headroomRoutes = new RouteTable('diagnostics', placementHttp);

headroomRoutes.resource('/headroom', {
  GET: {
    summary: 'Extension: per tree, how many first-candidate claims of this request fit now (any allocation-candidates query)',
    since: MV.ALLOCATION_CANDIDATES,
    query: (mv) => [
      { name: 'count', description: 'extension (docs/gangs.md): gangs of N hosts - also count per domain how many more fit' },
      { name: 'ext_domain', description: "with count: 'aggregate' (default) or 'any'" },
      { name: 'ext_domain_member_of', description: 'with count: in:AGG1,AGG2 - only these aggregates' },
      ...candidateQuery(mv),
    ],
    responses: { 200: 'Counts per tree and their total' },
    responseSchema: HeadroomResponse,
    responseName: 'Headroom',
    handler: async (c) => {
      requireVersion(c, 'ALLOCATION_CANDIDATES');
      authorize(c, EXT_RULE);
      const { config, store, clock } = c.var.deps;
      const query = queryParams(c);
      const options = {
        randomize: false,
        maxCandidates: 0,
        timeBudgetMs: config.PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS,
        treeCacheProviders: config.PLACEMENT_CANDIDATE_TREE_CACHE,
        now: clock().getTime(),
      };
      c.header('cache-control', 'no-cache');
      // count=N (gangs, docs/gangs.md): how many more gangs of N fit per domain, beside the per-tree counts.
      if (query.count) return c.json(await findGangHeadroom(store.nearby, query, c.var.mv, options));
      const headroom = await findHeadroom(store.nearby, parseCandidateRequestWithExt(query, c.var.mv), c.var.mv, options);
      return c.json(headroom);
    },
  },
});
