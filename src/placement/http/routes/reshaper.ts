import { readBody } from '../../../http/validate.js';
import { atLeast, authorize } from '../middleware.js';
import { isoNow } from '../../repo/lookups.js';
import { reshape, type ProviderInventoryChange } from '../../writes/reshape.js';
import { toInventoryInputs } from '../../schemas/inventories.js';
import { reshaperSchema } from '../../schemas/reshaper.js';
import { claimFromBody } from '../claim-requests.js';
import { MV } from '../../versions.js';
import { RouteTable } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const reshaperRoutes = new RouteTable('placement', placementHttp);

reshaperRoutes.resource('/reshaper', {
  POST: {
    summary: 'Move inventories and allocations atomically',
    since: MV.RESHAPER,
    body: reshaperSchema,
    bodyName: 'Reshape',
    responses: { 204: 'Reshaped' },
    handler: async (c) => {
      authorize(c, 'placement:reshaper:reshape');
      const body = await readBody(c, reshaperSchema(c.get('mv')));
      const inventories: ProviderInventoryChange[] = Object.entries(body.inventories).map(([providerUuid, part]) => ({
        providerUuid,
        generation: part.resource_provider_generation,
        records: toInventoryInputs(part.inventories),
      }));
      const claims = Object.entries(body.allocations).map(([uuid, part]) => claimFromBody(c, uuid, part));
      const deps = c.get('deps');
      await reshape(
        deps,
        { inventories, claims },
        {
          requireGeneration: atLeast(c, 'CONSUMER_GENERATION'),
          reservedMayEqualTotal: atLeast(c, 'RESERVED_EQUALS_TOTAL'),
          now: isoNow(deps.clock),
        },
      );
      return c.body(null, 204);
    },
  },
});
