// Edge sites (docs/sites.md): a site's capacity slice, held on the primary
// for the site alone (an open-ended hold owned by the site), and the escrow
// model a cut-off site spends it by (model.ts). Routes: http/routes.ts; its
// site-mode settings, refused at start while site mode is not built: settings.ts.
import type { Extension } from '../../extension.js';
import { siteRoutes } from './http/routes.js';
import { SITES_SETTINGS, sitesSettingsProblem } from './settings.js';

export const sites: Extension = {
  name: 'sites',
  settings: { shape: SITES_SETTINGS, problem: sitesSettingsProblem },
  routes: [siteRoutes],
};
