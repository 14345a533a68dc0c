// Gangs (docs/gangs.md): N hosts inside one domain, found together and
// claimed in one write batch with their lease. Its routes (http/routes.ts)
// and its domains on the dashboard (dashboard.ts).
import type { Extension } from '../../extension.js';
import { gangsDashboard } from './dashboard.js';
import { gangRoutes } from './http/routes.js';

export const gangs: Extension = { name: 'gangs', routes: [gangRoutes], dashboard: gangsDashboard };
