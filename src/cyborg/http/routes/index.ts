// Every accelerator (Cyborg v2) endpoint, by resource, in the order the app
// mounts them and GET /openapi.json lists them:
//   /, /v2                                              root.ts
//   /v2/device_profiles[/{key}]                         device-profiles.ts
//   /v2/accelerator_requests[/{uuid}]                   arqs.ts
//   /v2/devices[/{uuid}[/enable|/disable]], /v2/deployables[/{uuid}]   devices.ts
//   /v2/attributes[/{uuid}]                             attributes.ts
//   /v2/hosts/{hostname}/devices, /v2/deployables/{uuid}/programmed, /v2/outbox   agent.ts
import type { RouteTable } from '../../../http/route-table.js';
import { agentRoutes } from './agent.js';
import { arqRoutes } from './arqs.js';
import { attributeRoutes } from './attributes.js';
import { deviceProfileRoutes } from './device-profiles.js';
import { deviceRoutes } from './devices.js';

export { rootRoutes } from './root.js';

/** The tables mounted at /v2. */
export const CYBORG_V2_ROUTES: RouteTable[] = [deviceProfileRoutes, arqRoutes, deviceRoutes, attributeRoutes, agentRoutes];
