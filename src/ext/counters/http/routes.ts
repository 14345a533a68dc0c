// /ext/resource_providers/{uuid}/counters (docs/extensions-gpu.md): a partitionable
// device's shared counters and what each resource class consumes of them
// (logic in ../). Any microversion. Unlike the other /ext routes
// it passes the inventory policies, not EXT_RULE: the agent that reports a
// GPU's inventory reports its counters with the same credentials.
import { always, RouteTable, answers } from '../../../http/route-table.js';
import { readBody } from '../../../http/validate.js';
import { authorize, setCacheHeaders } from '../../../placement/http/middleware.js';
import { placementHttp } from '../../../placement/http/profile.js';
import { isoNow } from '../../../placement/repo/lookups.js';
import { getCounters, putCounters } from '../repo.js';
import { countersResponseSchema, putCountersSchema } from '../schemas.js';

export const counterRoutes = new RouteTable('extensions', placementHttp);

// Shared counters of partitionable devices (docs/extensions-gpu.md); the inventory policies guard them.
counterRoutes.resource('/resource_providers/:uuid/counters', {
  GET: {
    summary: "Extension: a partitionable device's shared counters, what each class consumes of them, and their load",
    ...answers(200, 'Counters', 'ExtCounters', countersResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:inventories:list');
      const view = await getCounters(c.var.deps.store, c.req.param('uuid'));
      setCacheHeaders(c);
      return c.json(view);
    },
  },
  PUT: {
    summary: "Extension: replace a provider's shared counters (generation-checked; classes must have inventory there)",
    body: always(putCountersSchema),
    bodyName: 'PutExtCounters',
    ...answers(200, 'Counters', 'ExtCounters', countersResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:inventories:update');
      const body = await readBody(c, putCountersSchema);
      const now = isoNow(c.var.deps.clock);
      const view = await putCounters(c.var.deps.store, c.req.param('uuid'), body, now);
      setCacheHeaders(c, now);
      return c.json(view);
    },
  },
});
