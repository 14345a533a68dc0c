// Edge sites (docs/sites.md): PUT/GET /ext/sites/{site} on the primary (logic in ../service.ts);
// GET /ext/site on a site instance (site mode: ../site-mode.ts).
import { invalid, notFound } from '../../../errors.js';
import { readBody } from '../../../http/validate.js';
import { RouteTable } from '../../../http/route-table.js';
import type { AppContext } from '../../../http/env.js';
import { placementHttp } from '../../../placement/http/profile.js';
import type { HoldDeps } from '../../holds/service.js';
import { adminOnly } from '../../http/admin-only.js';
import { putSiteSchema, SITE_ID, SiteResponse, SiteStatusResponse } from '../schemas.js';
import { SITE_STATE } from '../runtime.js';
import { getSite, presentSite, putSite } from '../service.js';
import type { SiteStatus } from '../site-mode.js';

export const siteRoutes = new RouteTable('extensions', placementHttp);

const holdDeps = (c: AppContext): HoldDeps => {
  const { deps } = c.var;
  return { store: deps.store, nowMs: () => deps.clock().getTime(), newId: deps.newId };
};

function siteOf(c: AppContext): string {
  const site = c.req.param('site') ?? '';
  if (!SITE_ID.test(site)) throw invalid(`Invalid site '${site}': letters, digits, '_', '.', '-', at most 64`);
  return site;
}

siteRoutes.resource('/sites/:site', {
  GET: adminOnly({
    summary: "Extension: an edge site's capacity slice (the open-ended hold owned by the site)",
    responses: { 200: 'The site' },
    responseSchema: SiteResponse,
    responseName: 'Site',
    handler: async (c) => {
      const site = siteOf(c);
      c.header('cache-control', 'no-cache');
      return c.json(presentSite(site, await getSite(holdDeps(c), site)));
    },
  }),
  PUT: adminOnly({
    summary:
      "Extension: set an edge site's capacity slice on providers of its aggregate (409 placement.ext.hold_unsatisfiable when it does not fit)",
    body: () => putSiteSchema,
    bodyName: 'PutSite',
    responses: { 200: 'The site' },
    responseSchema: SiteResponse,
    responseName: 'Site',
    handler: async (c) => {
      const site = siteOf(c);
      const body = await readBody(c, putSiteSchema);
      return c.json(presentSite(site, await putSite(holdDeps(c), site, body)));
    },
  }),
});

/** GET /ext/site on the wire. */
const presentStatus = (s: SiteStatus) => ({
  site: s.site,
  link: s.link,
  since: s.since,
  primary_last_answered: s.primaryLastAnswered,
  slice: s.slice,
  slice_remaining: s.sliceRemaining,
  journal_depth: s.journalDepth,
  last_replayed_seq: s.lastReplayedSeq,
  replay_conflicts: s.replayConflicts,
  refreshed_at: s.refreshedAt,
});

siteRoutes.resource('/site', {
  GET: adminOnly({
    summary:
      "Extension: this site instance's link to the primary (connected or partitioned, since when), its slice and what is left of it, its journal's depth and last replayed entry",
    responses: { 200: 'The site' },
    responseSchema: SiteStatusResponse,
    responseName: 'SiteStatus',
    handler: async (c) => {
      const runtime = c.var.deps.extensions.state(SITE_STATE);
      if (!runtime) throw notFound('This instance is not a site (PLACEMENT_SITE is not set)');
      c.header('cache-control', 'no-cache');
      return c.json(presentStatus(await runtime.mode.status()));
    },
  }),
});
