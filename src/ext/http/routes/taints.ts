// Device taints: GET/PUT /ext/resource_providers/{uuid}/taints (generation
// checked, bumps the generation, as a provider's traits) and GET /ext/taints
// (the drain list). Logic in ../taints.ts.
import { Hono } from 'hono';
import { notFound } from '../../../errors.js';
import type { AppEnv } from '../../../http/env.js';
import { readBody } from '../../../http/validate.js';
import { authorize, pathParam, resource } from '../../../placement/http/middleware.js';
import { putTaintsSchema } from '../../schemas.js';
import { EXT_RULE } from '../../policy.js';
import { drainList, providerTaints, replaceProviderTaints } from '../../taints.js';

export const taintRoutes = new Hono<AppEnv>();

resource(taintRoutes, '/resource_providers/:uuid/taints', {
  GET: async (c) => {
    authorize(c, EXT_RULE);
    const uuid = pathParam(c, 'uuid');
    const view = await providerTaints(c.var.deps.store, uuid);
    if (!view) throw notFound(`No resource provider with uuid ${uuid} found`);
    c.header('cache-control', 'no-cache');
    return c.json(view);
  },
  PUT: async (c) => {
    authorize(c, EXT_RULE);
    const body = await readBody(c, putTaintsSchema);
    const { deps } = c.var;
    const view = await replaceProviderTaints(
      deps.store,
      pathParam(c, 'uuid'),
      body.resource_provider_generation,
      body.taints,
      deps.clock().toISOString(),
    );
    return c.json(view);
  },
});

resource(taintRoutes, '/taints', {
  GET: async (c) => {
    authorize(c, EXT_RULE);
    c.header('cache-control', 'no-cache');
    return c.json({ taints: await drainList(c.var.deps.store) });
  },
});
