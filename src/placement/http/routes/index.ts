// Every Placement endpoint, by resource. Find a path here, then open its file:
//   /                                              root.ts
//   /resource_providers[/{uuid}]                   resource-providers.ts
//   /resource_providers/{uuid}/aggregates          aggregates.ts
//   /traits[/{name}], /resource_providers/{uuid}/traits        traits.ts
//   /resource_providers/{uuid}/inventories[/{rc}]  inventories.ts
//   /resource_classes[/{name}]                     resource-classes.ts
//   /resource_providers/{uuid}/usages, /usages     usages.ts
//   /allocations[/{consumer}], /resource_providers/{uuid}/allocations   allocations.ts
//   /allocation_candidates                         allocation-candidates.ts
//   /reshaper                                      reshaper.ts
// The accelerator (Cyborg v2) API is src/cyborg/http/routes/, mounted in src/app.ts.
// Each file declares its routes in a RouteTable (src/http/route-table.ts); the
// router and GET /openapi.json both read PLACEMENT_ROUTES, in this order.
import { joinRoutes, type RouteTable } from '../../../http/route-table.js';
import { aggregateRoutes } from './aggregates.js';
import { allocationCandidateRoutes } from './allocation-candidates.js';
import { allocationRoutes } from './allocations.js';
import { inventoryRoutes } from './inventories.js';
import { reshaperRoutes } from './reshaper.js';
import { resourceClassRoutes } from './resource-classes.js';
import { resourceProviderRoutes } from './resource-providers.js';
import { usageRoutes } from './usages.js';
import { rootRoutes } from './root.js';
import { traitRoutes } from './traits.js';

export const PLACEMENT_ROUTES: RouteTable[] = [
  rootRoutes,
  resourceProviderRoutes,
  aggregateRoutes,
  traitRoutes,
  allocationRoutes,
  allocationCandidateRoutes,
  inventoryRoutes,
  reshaperRoutes,
  resourceClassRoutes,
  usageRoutes,
];

export const placementRoutes = joinRoutes(PLACEMENT_ROUTES);
