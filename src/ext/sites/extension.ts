// Edge sites (docs/sites.md): a site's capacity slice, held on the primary
// for the site alone (an open-ended hold owned by the site), and site mode:
// an instance started with PLACEMENT_SITE claims within that slice from its
// local file while cut off from the primary, and replays its journal when the
// primary answers again (site-mode.ts). Routes: http/routes.ts; the cut-off
// site's claims: http/site-mode.ts; settings: settings.ts; the escrow model: model.ts.
import type { Extension } from '../../extension.js';
import { siteModeMiddleware } from './http/site-mode.js';
import { siteRoutes } from './http/routes.js';
import { siteGauges, startSiteMode } from './runtime.js';
import { SITES_SETTINGS, siteSettings, sitesSettingsProblem } from './settings.js';

export const sites: Extension = {
  name: 'sites',
  settings: { shape: SITES_SETTINGS, problem: sitesSettingsProblem },
  routes: [siteRoutes],
  setUp: ({ store, config, log, metrics }) => {
    const settings = siteSettings(config);
    if (!settings) return null;
    const runtime = startSiteMode(settings, store, log, siteGauges(metrics.registry));
    return {
      state: runtime,
      middleware: siteModeMiddleware(runtime.mode),
      start: (deps) => runtime.start(deps),
    };
  },
};
