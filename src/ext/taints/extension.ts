// Device taints (docs/extensions.md): a provider tainted NoSchedule or
// NoExecute takes part in no allocation candidate (a tainted root: its whole
// tree) unless the request tolerates the key (ext_tolerate). The whole
// extension: its parameter (params.ts), its read hook (filter.ts), its table
// and cascades (drizzle/, src/db/schema/ext.ts), its routes (http/routes.ts).
import type { Extension } from '../../extension.js';
import { taintsAudit } from './audit.js';
import { taintsPanel } from './dashboard.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { taintFilter } from './filter.js';
import { taintRoutes } from './http/routes.js';
import { tolerateParam } from './params.js';

export const taints: Extension = {
  name: 'taints',
  params: [tolerateParam],
  read: [taintFilter],
  routes: [taintRoutes],
  audit: taintsAudit,
  dashboard: { panels: [taintsPanel], assets: DASHBOARD_ASSETS },
};
