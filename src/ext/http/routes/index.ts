// The extensions (docs/extensions.md), served at /ext under Placement's
// middleware (microversion, auth, error envelope): src/openapi/mounts.ts. Admin only:
// every route but the counters' is wrapped in adminOnly (../admin-only.ts): EXT_RULE, placement's `admin_api` (a policy file may override it).
//   /ext/headroom                                      headroom.ts
//   /ext/resource_providers/{uuid}/taints, /ext/taints taints.ts
//   /ext/resource_providers/{uuid}/counters            counters.ts (inventory policies: the agent writes them)
//   /ext/leases[/{consumer_uuid}]                      leases.ts
//   /ext/limits, /ext/limits/refresh                   limits.ts (project limits, docs/limits.md)
//   /ext/gang_candidates, /ext/gangs                   gangs.ts (docs/gangs.md)
import type { RouteTable } from '../../../http/route-table.js';
import { counterRoutes } from './counters.js';
import { gangRoutes } from './gangs.js';
import { headroomRoutes } from './headroom.js';
import { leaseRoutes } from './leases.js';
import { limitRoutes } from './limits.js';
import { taintRoutes } from './taints.js';

/** Read by the router and by GET /openapi.json, in this order. */
export const EXT_ROUTES: RouteTable[] = [headroomRoutes, taintRoutes, counterRoutes, leaseRoutes, limitRoutes, gangRoutes];
