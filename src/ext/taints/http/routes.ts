// Device taints: GET/PUT /ext/resource_providers/{uuid}/taints (generation
// checked, bumps the generation, as a provider's traits) and GET /ext/taints
// (the drain list). Logic in ../writes.ts.
import { DrainListResponse, ProviderTaintsResponse, putTaintsSchema } from '../schemas.js';
import { drainList, providerTaints, replaceProviderTaints } from '../writes.js';
import { RouteTable } from '../../../http/route-table.js';
import { adminJson } from '../../http/admin-only.js';
import { placementHttp } from '../../../placement/http/profile.js';

export const taintRoutes = new RouteTable('extensions', placementHttp);

const TAINTS_ANSWER = { name: 'ProviderTaints', schema: ProviderTaintsResponse };

taintRoutes.resource('/resource_providers/:uuid/taints', {
  GET: adminJson({
    summary: "Extension: a provider's device taints",
    answer: { description: 'Taints and the provider generation', ...TAINTS_ANSWER },
    fresh: true,
    missing: (c) => `No resource provider with uuid ${c.req.param('uuid')} found`,
    run: (c) => providerTaints(c.var.deps.store, c.req.param('uuid')),
  }),
  PUT: adminJson({
    summary: "Extension: replace a provider's taints (generation-checked; bumps the generation)",
    body: { name: 'PutProviderTaints', schema: putTaintsSchema },
    answer: { description: 'Taints and the new provider generation', ...TAINTS_ANSWER },
    run: (c, body) => {
      const { deps } = c.var;
      const now = deps.clock().toISOString();
      return replaceProviderTaints(deps.store, c.req.param('uuid'), body.resource_provider_generation, body.taints, now);
    },
  }),
});

taintRoutes.resource('/taints', {
  GET: adminJson({
    summary: 'Extension: every taint with the consumers allocated on its provider (the drain list)',
    answer: { description: 'The drain list', name: 'DrainList', schema: DrainListResponse },
    fresh: true,
    run: async (c) => ({ taints: await drainList(c.var.deps.store) }),
  }),
});
