// Gangs (docs/gangs.md): N hosts inside one domain, found together and
// claimed in one write batch with their lease. Its routes (http/routes.ts),
// its domains on the dashboard (dashboard.ts) and its question to why no host
// (count=N: diagnosis.ts).
import type { Extension } from '../../extension.js';
import { sweepLeases } from '../allocation-ends.js';
import { gangsDashboard } from './dashboard.js';
import { gangDiagnosis } from './diagnosis.js';
import { gangRoutes } from './http/routes.js';

export const gangs: Extension = {
  name: 'gangs',
  routes: [gangRoutes],
  // Its leases end through the allocation ends' sweep.
  jobs: { handlers: {}, sweeps: [sweepLeases] },
  dashboard: gangsDashboard,
  diagnosis: gangDiagnosis,
};
