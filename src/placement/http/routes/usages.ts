// GET /resource_providers/{uuid}/usages and GET /usages (1.9+; grouped by
// consumer type from 1.38). Usage changes with every allocation, so the
// last-modified header is always "now", as upstream.
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { queryParams } from '../../../http/validate.js';
import { atLeast, authorize, pathParam, requireVersion, resource, setCacheHeaders } from '../middleware.js';
import { presentProviderUsages, presentTypedUsages } from '../../present/usages.js';
import { requireProvider } from '../../repo/lookups.js';
import { providerUsages, totalUsages, usagesByConsumerType } from '../../repo/usages.js';
import type { UsagesJson } from '../../schemas/responses.js';
import { parseUsagesQuery } from '../../schemas/usages.js';

export const usageRoutes = new Hono<AppEnv>();

resource(usageRoutes, '/resource_providers/:uuid/usages', {
  GET: async (c) => {
    authorize(c, 'placement:resource_providers:usages');
    const { db } = c.var.deps.store;
    const provider = await requireProvider(db, pathParam(c, 'uuid'));
    const usages = await providerUsages(db, provider.id);
    setCacheHeaders(c);
    return c.json(presentProviderUsages(usages, provider.generation));
  },
});

resource(usageRoutes, '/usages', {
  GET: async (c) => {
    requireVersion(c, 'USAGES');
    const query = parseUsagesQuery(queryParams(c), c.var.mv);
    // A project reader may see its own project's usage: the target is the queried project.
    authorize(c, 'placement:usages', { project_id: query.projectId });
    const { db } = c.var.deps.store;
    setCacheHeaders(c);
    if (atLeast(c, 'CONSUMER_TYPES')) {
      return c.json(presentTypedUsages(await usagesByConsumerType(db, query)));
    }
    return c.json({ usages: await totalUsages(db, query) } satisfies UsagesJson);
  },
});
