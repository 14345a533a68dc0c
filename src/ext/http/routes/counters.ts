// /ext/resource_providers/{uuid}/counters (issue 25): a partitionable
// device's shared counters and what each resource class consumes of them
// (logic in ../../counters/). Any microversion. Unlike the other /ext routes
// it passes the inventory policies, not EXT_RULE: the agent that reports a
// GPU's inventory reports its counters with the same credentials.
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { readBody } from '../../../http/validate.js';
import { authorize, pathParam, resource, setCacheHeaders } from '../../../placement/http/middleware.js';
import { isoNow } from '../../../placement/repo/lookups.js';
import { getCounters, putCounters } from '../../counters/repo.js';
import { putCountersSchema } from '../../schemas.js';

export const counterRoutes = new Hono<AppEnv>();

resource(counterRoutes, '/resource_providers/:uuid/counters', {
  GET: async (c) => {
    authorize(c, 'placement:resource_providers:inventories:list');
    const view = await getCounters(c.var.deps.store, pathParam(c, 'uuid'));
    setCacheHeaders(c);
    return c.json(view);
  },

  PUT: async (c) => {
    authorize(c, 'placement:resource_providers:inventories:update');
    const body = await readBody(c, putCountersSchema);
    const now = isoNow(c.var.deps.clock);
    const view = await putCounters(c.var.deps.store, pathParam(c, 'uuid'), body, now);
    setCacheHeaders(c, now);
    return c.json(view);
  },
});
