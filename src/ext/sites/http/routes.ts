// Edge sites (docs/sites.md): PUT/GET /ext/sites/{site} on the primary (logic in ../service.ts);
// GET /ext/site on a site instance (site mode: ../site-mode.ts).
import { invalid } from '../../../errors.js';
import { RouteTable } from '../../../http/route-table.js';
import type { AppContext } from '../../../http/env.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { LIMITS } from '../../limits/service.js';
import type { SetAsideConstraint } from '../../../placement/capacity.js';
import { adminJson } from '../../http/admin-only.js';
import { holdDepsOf } from '../../holds/http/routes.js';
import { appHolds } from '../../holds/installed.js';
import { putSiteSchema, SITE_ID, SiteResponse, SiteStatusResponse } from '../schemas.js';
import { SITE_STATE } from '../runtime.js';
import { getSite, presentSite, putSite } from '../service.js';
import type { SiteStatus } from '../site-mode.js';

function siteOf(c: AppContext): string {
  const site = c.req.param('site') ?? '';
  if (!SITE_ID.test(site)) throw invalid(`Invalid site '${site}': letters, digits, '_', '.', '-', at most 64`);
  return site;
}

const SITE = { description: 'The site', name: 'Site', schema: SiteResponse };

/**
 * The sites' routes, their limit slices admitted by `d` (the sites' own declaration; a test declares another),
 * their capacity slices, holds, by the declaration of the holds the app installs.
 */
export function siteRoutesOf(d: SetAsideConstraint): RouteTable {
  const siteRoutes = new RouteTable('extensions', placementHttp);
  const holdDeps = (c: AppContext) => holdDepsOf(c, appHolds(c.var.deps.extensions).declaration);
  siteRoutes.resource('/sites/:site', {
    GET: adminJson({
      summary: "Extension: an edge site's capacity slice (the open-ended hold owned by the site)",
      answer: SITE,
      fresh: true,
      run: async (c) => {
        const site = siteOf(c);
        return presentSite(site, await getSite(holdDeps(c), site));
      },
    }),
    PUT: adminJson({
      summary:
        "Extension: set an edge site's capacity slice on providers of its aggregate (409 placement.ext.hold_unsatisfiable when it does not fit) and, with project limits on, its per-project limit slices (409 placement.ext.limit_exceeded beyond what a limit has left)",
      body: { name: 'PutSite', schema: putSiteSchema },
      answer: SITE,
      run: async (c, body) => {
        const site = siteOf(c);
        const limitsOn = c.var.deps.extensions.state(LIMITS) !== undefined;
        return presentSite(site, await putSite(holdDeps(c), site, body, limitsOn, d));
      },
    }),
  });
  siteRoutes.resource('/site', { GET: siteStatus });
  return siteRoutes;
}

/** GET /ext/site on the wire. */
const presentStatus = (s: SiteStatus) => ({
  site: s.site,
  link: s.link,
  since: s.since,
  primary_last_answered: s.primaryLastAnswered,
  slice: s.slice,
  slice_remaining: s.sliceRemaining,
  limit_slices: s.limitSlices,
  limit_slices_remaining: s.limitSlicesRemaining,
  journal_depth: s.journalDepth,
  last_replayed_seq: s.lastReplayedSeq,
  replay_conflicts: s.replayConflicts,
  refreshed_at: s.refreshedAt,
});

const siteStatus = adminJson({
  summary:
    "Extension: this site instance's link to the primary (connected or partitioned, since when), its slice and what is left of it, its journal's depth and last replayed entry",
  answer: { description: 'The site', name: 'SiteStatus', schema: SiteStatusResponse },
  fresh: true,
  missing: () => 'This instance is not a site (PLACEMENT_SITE is not set)',
  run: async (c) => {
    const runtime = c.var.deps.extensions.state(SITE_STATE);
    return runtime ? presentStatus(await runtime.mode.status()) : undefined;
  },
});
