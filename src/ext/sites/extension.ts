// Edge sites (docs/sites.md): a site's capacity slice, held on the primary
// for the site alone (an open-ended hold owned by the site), and site mode:
// an instance started with PLACEMENT_SITE claims within that slice from its
// local file while cut off from the primary, and replays its journal when the
// primary answers again (site-mode.ts). Routes: http/routes.ts; the cut-off
// site's claims: http/site-mode.ts; settings: settings.ts; the escrow model: model.ts.
import type { Extension } from '../../extension.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { limitsConfigOf } from '../limits/service.js';
import { siteModeMiddleware } from './http/site-mode.js';
import { siteLimitSlicesWrites } from './limit-slices.js';
import { siteLimitSlicesAudit } from './audit.js';
import { SITE_LIMIT_SLICES } from './declaration.js';
import { appHolds } from '../holds/installed.js';
import { siteRoutesOf } from './http/routes.js';
import { siteGauges, startSiteMode } from './runtime.js';
import { SITES_SETTINGS, siteSettings, sitesSettingsProblem } from './settings.js';

/**
 * The extension enforcing `declaration` (the sites' own; a test declares another), its capacity
 * slices admitted as holds by the declaration of the holds the app installs.
 */
export const sitesExtension = (declaration: SetAsideConstraint): Extension => ({
  name: 'sites',
  requires: ['limits', 'holds'],
  settings: { shape: SITES_SETTINGS, problem: sitesSettingsProblem },
  routes: [siteRoutesOf(declaration)],
  audit: siteLimitSlicesAudit(declaration),
  setUp: ({ store, config, log, metrics, state }) => {
    // With project limits on, every instance guards the sites' limit slices (an empty table costs one empty read).
    const limits = limitsConfigOf(config);
    const writes =
      limits.PLACEMENT_LIMITS === 'off'
        ? undefined
        : siteLimitSlicesWrites(
            { types: limits.PLACEMENT_LIMITS_CONSUMER_TYPES, untyped: limits.PLACEMENT_LIMITS_COUNT_UNTYPED },
            declaration,
          );
    const settings = siteSettings(config);
    if (!settings) return writes ? { writes } : null;
    const runtime = startSiteMode(settings, store, appHolds({ state }).declaration, log, siteGauges(metrics.registry));
    return {
      writes,
      state: runtime,
      middleware: siteModeMiddleware(runtime.mode),
      start: (deps) => runtime.start(deps),
    };
  },
});

export const sites = sitesExtension(SITE_LIMIT_SLICES);
