// Leases (docs/extensions.md): an allocation held until confirmed or until
// its lease expires, when the sweep releases it. The whole extension: its
// rows (leases.ts), its routes (http/routes.ts), its audit and panel; the
// lease row and the sweep are the allocation ends gangs, holds and
// preemption write too (../allocation-ends.ts), so none of them needs this one.
import type { Extension } from '../../extension.js';
import { sweepLeases } from '../allocation-ends.js';
import { leasesAudit } from './audit.js';
import { leasesPanel } from './dashboard.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { leaseRoutes } from './http/routes.js';

export const leases: Extension = {
  name: 'leases',
  routes: [leaseRoutes],
  audit: leasesAudit,
  jobs: { handlers: {}, sweeps: [sweepLeases] },
  dashboard: { panels: [leasesPanel], assets: DASHBOARD_ASSETS },
};
