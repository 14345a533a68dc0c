// What if (docs/simulate.md): POST /ext/simulate (changes applied to a copy
// of the cloud, headroom and the dashboard's figures before and after) and
// GET /ext/defrag (a plan of moves after which a query has K candidates).
// Nothing is written. Logic in ../.
import { queryParams } from '../../../http/validate.js';
import { RouteTable } from '../../../http/route-table.js';
import { candidateQuery } from '../../../placement/http/candidate-query.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { MV } from '../../../placement/versions.js';
import { adminJson } from '../../http/admin-only.js';
import { defragPlan, simulate, simulateSchema } from '../index.js';
import { DefragResponse, SimulationResponse } from '../responses.js';

export const simulateRoutes = new RouteTable('extensions', placementHttp);

simulateRoutes.resource('/simulate', {
  POST: adminJson({
    summary:
      'Extension: what if - apply changes to a copy of the cloud; headroom, displaced consumers and dashboard figures before and after',
    since: MV.ALLOCATION_CANDIDATES,
    body: { name: 'Simulation', schema: simulateSchema },
    answer: { description: 'Before and after', name: 'Simulation', schema: SimulationResponse },
    fresh: true,
    run: (c, body) => {
      const { store, candidates, writeHooks, newId, clock } = c.var.deps;
      return simulate(store.nearby, body, c.var.mv, { engine: candidates, writeHooks, newId, nowMs: clock().getTime() });
    },
  }),
});

simulateRoutes.resource('/defrag', {
  GET: adminJson({
    summary: 'Extension: a plan of at most max_moves moves after which the query has at least `count` allocation candidates',
    since: MV.ALLOCATION_CANDIDATES,
    query: (mv) => [
      { name: 'count', description: 'extension: candidates the query must have after the plan (default 1)' },
      { name: 'max_moves', description: `extension: most moves in the plan (default 3, at most 64)` },
      {
        name: 'move_leased',
        description: 'extension: true - consumers with a lease or drawing from a hold may be moved too (default false)',
      },
      ...candidateQuery(mv),
    ],
    answer: { description: 'The plan (feasible: false and no moves when none was found)', name: 'DefragPlan', schema: DefragResponse },
    fresh: true,
    run: (c) => defragPlan(c.var.deps.store.nearby, queryParams(c), c.var.mv, c.var.deps.candidates),
  }),
});
