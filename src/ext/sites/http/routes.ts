// Edge sites on the primary (docs/sites.md): PUT/GET /ext/sites/{site}. Logic in ../service.ts.
import { invalid } from '../../../errors.js';
import { RouteTable } from '../../../http/route-table.js';
import type { AppContext } from '../../../http/env.js';
import { placementHttp } from '../../../placement/http/profile.js';
import type { HoldDeps } from '../../holds/service.js';
import { adminJson } from '../../http/admin-only.js';
import { putSiteSchema, SITE_ID, SiteResponse } from '../schemas.js';
import { getSite, presentSite, putSite } from '../service.js';

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

const SITE = { description: 'The site', name: 'Site', schema: SiteResponse };

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
      "Extension: set an edge site's capacity slice on providers of its aggregate (409 placement.ext.hold_unsatisfiable when it does not fit)",
    body: { name: 'PutSite', schema: putSiteSchema },
    answer: SITE,
    run: async (c, body) => {
      const site = siteOf(c);
      return presentSite(site, await putSite(holdDeps(c), site, body));
    },
  }),
});
