// The extensions (docs/extensions.md), mounted at /ext with Placement's
// middleware (microversion, auth, error envelope) by src/app.ts. Admin only:
// every route passes EXT_RULE (placement's `admin_api`; a policy file may override it).
//   /ext/headroom                                      headroom.ts
//   /ext/resource_providers/{uuid}/taints, /ext/taints taints.ts
//   /ext/resource_providers/{uuid}/counters            counters.ts (inventory policies: the agent writes them)
//   /ext/leases[/{consumer_uuid}]                      leases.ts
//   /ext/limits, /ext/limits/refresh                   limits.ts (project limits, docs/limits.md)
//   /ext/gang_candidates, /ext/gangs                   gangs.ts (docs/gangs.md)
//   /ext/simulate, /ext/defrag                         simulate.ts (docs/simulate.md)
import { joinRoutes, type RouteTable } from '../../../http/route-table.js';
import { counterRoutes } from './counters.js';
import { gangRoutes } from './gangs.js';
import { headroomRoutes } from './headroom.js';
import { leaseRoutes } from './leases.js';
import { simulateRoutes } from './simulate.js';
import { limitRoutes } from './limits.js';
import { taintRoutes } from './taints.js';

/** Read by the router and by GET /openapi.json, in this order. */
export const EXT_ROUTES: RouteTable[] = [headroomRoutes, taintRoutes, counterRoutes, leaseRoutes, limitRoutes, gangRoutes, simulateRoutes];

export const extRoutes = joinRoutes(EXT_ROUTES);
