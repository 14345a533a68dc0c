// POST /reshaper (1.30): atomically move inventories and allocations.
import { Hono } from 'hono';
import { ApiError, webobDetail } from '../../../../src/http/api-error.js';
import type { AppEnv } from '../../../../src/http/env.js';
import { readBody } from '../../../../src/http/validate.js';
import { atLeast, authorize } from '../../../../src/placement/http/middleware.js';
import { requireVersion } from './require-version.js';
import { resource } from '../../../../src/placement/http/profile.js';
import { InventoryInUseError } from '../repo/inventories.js';
import { isoNow } from '../repo/lookups.js';
import { reshape, UnknownResourceClass, type ProviderInventoryChange } from '../repo/reshaper.js';
import { toInventoryInputs } from '../../../../src/placement/schemas/inventories.js';
import { reshaperSchema } from '../../../../src/placement/schemas/reshaper.js';
import { claimFailureToHttp, claimFromBody } from './allocations.js';

export const reshaperRoutes = new Hono<AppEnv>();

resource(reshaperRoutes, '/reshaper', {
  POST: async (c) => {
    requireVersion(c, 'RESHAPER');
    authorize(c, 'placement:reshaper:reshape');
    const body = await readBody(c, reshaperSchema(c.var.mv));
    const inventories: ProviderInventoryChange[] = Object.entries(body.inventories).map(([providerUuid, part]) => ({
      providerUuid,
      generation: part.resource_provider_generation,
      records: toInventoryInputs(part.inventories),
    }));
    const claims = Object.entries(body.allocations).map(([uuid, part]) => claimFromBody(c, uuid, part));
    const { deps } = c.var;
    try {
      await deps.store.writeTx((tx) => reshape(tx, { inventories, claims }, {
        requireGeneration: atLeast(c, 'CONSUMER_GENERATION'),
        reservedMayEqualTotal: atLeast(c, 'RESERVED_EQUALS_TOTAL'),
        now: isoNow(deps.clock),
      }));
    } catch (err) {
      if (err instanceof UnknownResourceClass) throw new ApiError(400, webobDetail(400, `malformed reshaper data: ${err.message}`));
      if (err instanceof InventoryInUseError) throw err.prefixed('update conflict');
      throw claimFailureToHttp(err, 'malformed reshaper data: ');
    }
    return c.body(null, 204);
  },
});
