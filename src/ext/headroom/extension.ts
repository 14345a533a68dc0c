// Headroom (docs/extensions.md): how many more of a request fit, tree by
// tree, from the candidates engine's search (headroom.ts) and its route;
// with count=N, how many gangs of N per domain (gangs.ts, on the gangs' query
// and domains: it requires gangs). The shared counters' loads it reads through
// the contract (a constraint read hook among the installed ones), when present.
import type { Extension } from '../../extension.js';
import { headroomPanel } from './dashboard.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { headroomRoutes } from './http/routes.js';

export const headroom: Extension = {
  name: 'headroom',
  requires: ['gangs'],
  routes: [headroomRoutes],
  dashboard: { panels: [headroomPanel], assets: DASHBOARD_ASSETS },
};
