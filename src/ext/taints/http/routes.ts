// Device taints: GET/PUT /ext/resource_providers/{uuid}/taints (generation
// checked, bumps the generation, as a provider's traits) and GET /ext/taints
// (the drain list). Logic in ../writes.ts.
import { notFound } from '../../../errors.js';
import { readBody } from '../../../http/validate.js';
import { DrainListResponse, ProviderTaintsResponse, putTaintsSchema } from '../schemas.js';
import { drainList, providerTaints, replaceProviderTaints } from '../writes.js';
import { RouteTable } from '../../../http/route-table.js';
import { adminOnly } from '../../http/admin-only.js';
import { placementHttp } from '../../../placement/http/profile.js';

export const taintRoutes = new RouteTable('extensions', placementHttp);

taintRoutes.resource('/resource_providers/:uuid/taints', {
  GET: adminOnly({
    summary: "Extension: a provider's device taints",
    responses: { 200: 'Taints and the provider generation' },
    responseSchema: ProviderTaintsResponse,
    responseName: 'ProviderTaints',
    handler: async (c) => {
      const uuid = c.req.param('uuid');
      const view = await providerTaints(c.var.deps.store, uuid);
      if (!view) throw notFound(`No resource provider with uuid ${uuid} found`);
      c.header('cache-control', 'no-cache');
      return c.json(view);
    },
  }),
  PUT: adminOnly({
    summary: "Extension: replace a provider's taints (generation-checked; bumps the generation)",
    body: () => putTaintsSchema,
    bodyName: 'PutProviderTaints',
    responses: { 200: 'Taints and the new provider generation' },
    responseSchema: ProviderTaintsResponse,
    responseName: 'ProviderTaints',
    handler: async (c) => {
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
  }),
});

taintRoutes.resource('/taints', {
  GET: adminOnly({
    summary: 'Extension: every taint with the consumers allocated on its provider (the drain list)',
    responses: { 200: 'The drain list' },
    responseSchema: DrainListResponse,
    responseName: 'DrainList',
    handler: async (c) => {
      c.header('cache-control', 'no-cache');
      return c.json({ taints: await drainList(c.var.deps.store) });
    },
  }),
});
