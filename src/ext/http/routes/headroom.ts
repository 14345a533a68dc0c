// GET /ext/headroom?<any GET /allocation_candidates query>: per tree, how many
// first-candidate claims in a row fit now (../headroom.ts). Same microversions,
// parser and errors as /allocation_candidates.
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { queryParams } from '../../../http/validate.js';
import { parseCandidateRequestWithExt } from '../../../placement/candidates/ext-params.js';
import { authorize, requireVersion, resource } from '../../../placement/http/middleware.js';
import { findHeadroom } from '../../headroom.js';
import { EXT_RULE } from '../../policy.js';

export const headroomRoutes = new Hono<AppEnv>();

resource(headroomRoutes, '/headroom', {
  GET: async (c) => {
    requireVersion(c, 'ALLOCATION_CANDIDATES');
    authorize(c, EXT_RULE);
    const { config, store, clock } = c.var.deps;
    const headroom = await findHeadroom(store.nearby, parseCandidateRequestWithExt(queryParams(c), c.var.mv), c.var.mv, {
      randomize: false,
      maxCandidates: 0,
      timeBudgetMs: config.PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS,
      treeCacheProviders: config.PLACEMENT_CANDIDATE_TREE_CACHE,
      now: clock().getTime(),
    });
    c.header('cache-control', 'no-cache');
    return c.json(headroom);
  },
});
