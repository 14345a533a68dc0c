// Device taints: GET/PUT /ext/resource_providers/{uuid}/taints (generation
// checked, bumps the generation, as a provider's traits) and GET /ext/taints
// (the drain list). Logic in ../taints.ts.
import { notFound } from '../../../errors.js';
import { readBody } from '../../../http/validate.js';
import { authorize } from '../../../placement/http/middleware.js';
import { putTaintsSchema } from '../../schemas.js';
import { EXT_RULE } from '../../policy.js';
import { drainList, providerTaints, replaceProviderTaints } from '../../taints/writes.js';
import { DrainListResponse, ProviderTaintsResponse } from '../../responses.js';
import { RouteTable } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';

export const taintRoutes = new RouteTable('extensions', placementHttp);

taintRoutes.resource('/resource_providers/:uuid/taints', {
  GET: {
    summary: "Extension: a provider's device taints",
    responses: { 200: 'Taints and the provider generation' },
    responseSchema: ProviderTaintsResponse,
    responseName: 'ProviderTaints',
    handler: async (c) => {
      authorize(c, EXT_RULE);
      const uuid = c.req.param('uuid');
      const view = await providerTaints(c.var.deps.store, uuid);
      if (!view) throw notFound(`No resource provider with uuid ${uuid} found`);
      c.header('cache-control', 'no-cache');
      return c.json(view);
    },
  },
  PUT: {
    summary: "Extension: replace a provider's taints (generation-checked; bumps the generation)",
    body: () => putTaintsSchema,
    bodyName: 'PutProviderTaints',
    responses: { 200: 'Taints and the new provider generation' },
    responseSchema: ProviderTaintsResponse,
    responseName: 'ProviderTaints',
    handler: async (c) => {
      authorize(c, EXT_RULE);
      const body = await readBody(c, putTaintsSchema);
      const { deps } = c.var;
      const view = await replaceProviderTaints(
        deps.store,
        c.req.param('uuid'),
        body.resource_provider_generation,
        body.taints,
        deps.clock().toISOString(),
      );
      return c.json(view);
    },
  },
});

taintRoutes.resource('/taints', {
  GET: {
    summary: 'Extension: every taint with the consumers allocated on its provider (the drain list)',
    responses: { 200: 'The drain list' },
    responseSchema: DrainListResponse,
    responseName: 'DrainList',
    handler: async (c) => {
      authorize(c, EXT_RULE);
      c.header('cache-control', 'no-cache');
      return c.json({ taints: await drainList(c.var.deps.store) });
    },
  },
});
