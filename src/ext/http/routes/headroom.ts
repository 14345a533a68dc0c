import { queryParams } from '../../../http/validate.js';
import { parseCandidateRequestWithExt } from '../../../placement/candidates/ext-params.js';
import { authorize, requireVersion } from '../../../placement/http/middleware.js';
import { findHeadroom } from '../../headroom.js';
import { EXT_RULE } from '../../policy.js';
import { MV } from '../../../placement/versions.js';
import { HeadroomResponse } from '../../responses.js';
import { RouteTable } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';

export const headroomRoutes = new RouteTable('extensions', placementHttp);

headroomRoutes.resource('/headroom', {
  GET: {
    summary: 'Extension: per tree, how many first-candidate claims of this request fit now (any allocation-candidates query)',
    since: MV.ALLOCATION_CANDIDATES,
    query: candidateQuery,
    responses: { 200: 'Counts per tree and their total' },
    responseSchema: HeadroomResponse,
    responseName: 'Headroom',
    handler: async (c) => {
      requireVersion(c, 'ALLOCATION_CANDIDATES');
      authorize(c, EXT_RULE);
      const { store, candidates } = c.var.deps;
      // Every viable tree, whatever the candidate cap, in stable order.
      const options = candidates.options({ randomize: false, maxCandidates: 0 });
      const headroom = await findHeadroom(store.nearby, parseCandidateRequestWithExt(queryParams(c), c.var.mv), c.var.mv, options);
      c.header('cache-control', 'no-cache');
      return c.json(headroom);
    },
  },
});
