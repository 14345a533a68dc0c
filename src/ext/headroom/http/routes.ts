import { queryParams } from '../../../http/validate.js';
import { findHeadroom } from '../headroom.js';
import { findGangHeadroom } from '../gangs.js';
import { adminJson } from '../../http/admin-only.js';
import { MV } from '../../../placement/versions.js';
import { HeadroomResponse } from '../schemas.js';
import { RouteTable } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';

export const headroomRoutes = new RouteTable('extensions', placementHttp);

headroomRoutes.resource('/headroom', {
  GET: adminJson({
    summary: 'Extension: per tree, how many first-candidate claims of this request fit now (any allocation-candidates query)',
    since: MV.ALLOCATION_CANDIDATES,
    query: (mv) => [
      { name: 'count', description: 'extension (docs/gangs.md): gangs of N hosts - also count per domain how many more fit' },
      { name: 'ext_domain', description: "with count: 'aggregate' (default) or 'any'" },
      { name: 'ext_domain_member_of', description: 'with count: in:AGG1,AGG2 - only these aggregates' },
      ...candidateQuery(mv),
    ],
    answer: { description: 'Counts per tree and their total', name: 'Headroom', schema: HeadroomResponse },
    fresh: true,
    run: async (c) => {
      const { store, candidates } = c.var.deps;
      const query = queryParams(c);
      // Every viable tree, whatever the candidate cap, in stable order.
      const options = candidates.options({ randomize: false, maxCandidates: 0 });
      // count=N (gangs, docs/gangs.md): how many more gangs of N fit per domain, beside the per-tree counts.
      if (query.count) return findGangHeadroom(store.nearby, query, c.var.mv, options);
      return findHeadroom(store.nearby, candidates.parse(query, c.var.mv), c.var.mv, options);
    },
  }),
});
