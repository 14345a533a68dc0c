// POST /reshaper (1.30): atomically move inventories and allocations.
import { Hono } from 'hono';
import { ApiError, ErrorCode, webobDetail } from '../../../http/api-error.js';
import type { AppEnv } from '../../../http/env.js';
import { readBody } from '../../../http/validate.js';
import { atLeast, authorize, requireVersion, resource } from '../middleware.js';
import { InventoryInUseError } from '../../repo/inventories.js';
import { isoNow } from '../../repo/lookups.js';
import { reshape, UnknownResourceClass, type ProviderInventoryChange } from '../../writes/reshape.js';
import { InvalidInventoryInput, InventoryInUse, InventoryProviderMissing, ProviderGenerationMismatch } from '../../writes/refusals.js';
import { toInventoryInputs } from '../../schemas/inventories.js';
import { reshaperSchema } from '../../schemas/reshaper.js';
import { claimFailureToHttp, claimFromBody } from '../claim-requests.js';

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
      await reshape(
        deps.store,
        { inventories, claims },
        {
          requireGeneration: atLeast(c, 'CONSUMER_GENERATION'),
          reservedMayEqualTotal: atLeast(c, 'RESERVED_EQUALS_TOTAL'),
          now: isoNow(deps.clock),
        },
      );
    } catch (err) {
      if (err instanceof InventoryProviderMissing) {
        throw new ApiError(400, webobDetail(400, err.message), { code: ErrorCode.PROVIDER_NOT_FOUND });
      }
      if (err instanceof ProviderGenerationMismatch) {
        throw new ApiError(409, webobDetail(409, err.message), { code: ErrorCode.CONCURRENT_UPDATE });
      }
      if (err instanceof InvalidInventoryInput) throw new ApiError(400, webobDetail(400, err.message));
      if (err instanceof UnknownResourceClass) throw new ApiError(400, webobDetail(400, `malformed reshaper data: ${err.message}`));
      if (err instanceof InventoryInUse) throw new InventoryInUseError(err.reason, 'update conflict');
      throw claimFailureToHttp(err, 'malformed reshaper data: ');
    }
    return c.body(null, 204);
  },
});
