// The extensions (docs/extensions.md), mounted at /ext with Placement's
// middleware (microversion, auth, error envelope) by src/app.ts. Admin only:
// every route passes EXT_RULE (placement's `admin_api`; a policy file may override it).
//   /ext/headroom                                      headroom.ts
//   /ext/resource_providers/{uuid}/taints, /ext/taints taints.ts
//   /ext/leases[/{consumer_uuid}]                      leases.ts
//   /ext/resource_providers/{uuid}/counters            counters.ts (inventory policies: the agent writes them)
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { counterRoutes } from './counters.js';
import { headroomRoutes } from './headroom.js';
import { leaseRoutes } from './leases.js';
import { taintRoutes } from './taints.js';

export const extRoutes = new Hono<AppEnv>();
extRoutes.route('/', headroomRoutes);
extRoutes.route('/', taintRoutes);
extRoutes.route('/', leaseRoutes);
extRoutes.route('/', counterRoutes);
