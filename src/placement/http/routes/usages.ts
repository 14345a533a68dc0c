import { queryParams } from '../../../http/validate.js';
import { atLeast, authorize, setCacheHeaders } from '../middleware.js';
import { presentProviderUsages, presentTypedUsages } from '../../present/usages.js';
import { requireProvider } from '../../repo/lookups.js';
import { providerUsages, totalUsages, usagesByConsumerType } from '../../repo/usages.js';
import type { UsagesJson } from '../../schemas/responses.js';
import { parseUsagesQuery } from '../../schemas/usages.js';
import { providerUsagesSchema, usagesResponseSchema } from '../../schemas/responses.js';
import { usagesQuerySchema } from '../../schemas/usages.js';
import { MV } from '../../versions.js';
import { RouteTable, zodQuery, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const usageRoutes = new RouteTable('placement', placementHttp);

usageRoutes.resource('/resource_providers/:uuid/usages', {
  GET: {
    summary: "A provider's usage",
    ...answers(200, 'Usages', 'ProviderUsages', providerUsagesSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:usages');
      const { db } = c.get('deps').store;
      const provider = await requireProvider(db, c.req.param('uuid'));
      const usages = await providerUsages(db, provider.id);
      setCacheHeaders(c);
      return c.json(presentProviderUsages(usages, provider.generation));
    },
  },
});

usageRoutes.resource('/usages', {
  GET: {
    summary: "A project's usage",
    since: MV.USAGES,
    query: (mv) => zodQuery(usagesQuerySchema(mv)),
    ...answers(200, 'Usages', 'Usages', usagesResponseSchema),
    handler: async (c) => {
      const query = parseUsagesQuery(queryParams(c), c.get('mv'));
      // A project reader may see its own project's usage: the target is the queried project.
      authorize(c, 'placement:usages', { project_id: query.projectId });
      const { db } = c.get('deps').store;
      setCacheHeaders(c);
      if (atLeast(c, 'CONSUMER_TYPES')) {
        return c.json(presentTypedUsages(await usagesByConsumerType(db, query)));
      }
      return c.json({ usages: await totalUsages(db, query) } satisfies UsagesJson);
    },
  },
});
