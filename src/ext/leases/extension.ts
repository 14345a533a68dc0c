// Leases (docs/extensions.md): an allocation held until confirmed or until
// its lease expires, when the sweep releases it. The whole extension: its
// rows and sweep (leases.ts, jobs.ts), its routes (http/routes.ts); a gang's
// claim writes its lease alongside (gangs/claim.ts).
import type { Extension } from '../../extension.js';
import { leasesAudit } from './audit.js';
import { leasesPanel } from './dashboard.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { leaseRoutes } from './http/routes.js';
import { sweepLeases } from './jobs.js';

export const leases: Extension = {
  name: 'leases',
  routes: [leaseRoutes],
  audit: leasesAudit,
  jobs: { handlers: {}, sweeps: [sweepLeases] },
  dashboard: { panels: [leasesPanel], assets: DASHBOARD_ASSETS },
};
