// POST /reshaper (1.30): atomically move inventories and allocations.
import { Hono } from 'hono';
import { ApiError, webobDetail } from '../../http/api-error.js';
import type { AppEnv } from '../../http/env.js';
import { readBody } from '../../http/validate.js';
import { atLeast, authorize, requireVersion, resource } from '../middleware.js';
import { AllocationFailure } from '../repo/allocations.js';
import { InventoryInUseError } from '../repo/inventories.js';
import { isoNow } from '../repo/lookups.js';
import { reshape, UnknownResourceClass, type ProviderInventoryChange } from '../repo/reshaper.js';
import type { ConsumerAllocationsBody } from '../schemas/allocations.js';
import { toInventoryInputs } from '../schemas/inventories.js';
import { reshaperSchema } from '../schemas/reshaper.js';
import { claimFromBody } from './allocations.js';

export const reshaperRoutes = new Hono<AppEnv>();

resource(reshaperRoutes, '/reshaper', {
  POST: async (c) => {
    requireVersion(c, 'RESHAPER');
    authorize(c, 'placement:reshaper:reshape');
    const body = await readBody(c, reshaperSchema(c));
    const inventories: ProviderInventoryChange[] = Object.entries(body.inventories).map(([providerUuid, part]) => ({
      providerUuid,
      generation: part.resource_provider_generation,
      records: toInventoryInputs(part.inventories),
    }));
    const claims = Object.entries(body.allocations).map(([uuid, part]) => claimFromBody(c, uuid, part as ConsumerAllocationsBody));
    const { deps } = c.var;
    try {
      await deps.store.writeTx((tx) => reshape(tx, { inventories, claims }, {
        requireGeneration: atLeast(c, 'CONSUMER_GENERATION'),
        reservedMayEqualTotal: atLeast(c, 'RESERVED_EQUALS_TOTAL'),
        now: isoNow(deps.clock),
      }));
    } catch (err) {
      if (err instanceof UnknownResourceClass) throw new ApiError(400, webobDetail(400, `malformed reshaper data: ${err.message}`));
      if (err instanceof AllocationFailure) {
        if (err.kind === 'unknown_class') throw new ApiError(400, webobDetail(400, `malformed reshaper data: ${err.message}`));
        throw new ApiError(409, webobDetail(409, `Unable to allocate inventory: ${err.message}`));
      }
      if (err instanceof InventoryInUseError) throw err.prefixed('update conflict');
      throw err;
    }
    return c.body(null, 204);
  },
});
