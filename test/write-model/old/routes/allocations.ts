// /allocations/{consumer_uuid} (GET, PUT, DELETE), POST /allocations (1.13)
// and GET /resource_providers/{uuid}/allocations.
import { Hono } from 'hono';
import { ApiError, webobDetail } from '../../../../src/http/api-error.js';
import type { AppContext, AppEnv } from '../../../../src/http/env.js';
import { readBody } from '../../../../src/http/validate.js';
import { atLeast, authorize, setCacheHeaders } from '../../../../src/placement/http/middleware.js';
import { requireVersion } from './require-version.js';
import { resource } from '../../../../src/placement/http/profile.js';
import { pathParam } from './path-param.js';
import {
  allocationsLastModified,
  presentConsumerAllocations,
  presentProviderAllocations,
} from '../../../../src/placement/present/allocations.js';
import {
  AllocationFailure,
  allocationsForConsumer,
  allocationsForProvider,
  deleteConsumerAllocations,
  replaceAllocations,
  type ConsumerClaim,
} from '../repo/allocations.js';
import { consumerViews } from '../repo/consumers.js';
import { findProvider, isoNow } from '../repo/lookups.js';
import {
  postAllocationsSchema,
  putAllocationsV1_0,
  putAllocationsV1_12,
  putAllocationsV1_28,
  putAllocationsV1_34,
  putAllocationsV1_38,
  putAllocationsV1_8,
  type ConsumerAllocationsBody,
} from '../../../../src/placement/schemas/allocations.js';

export const allocationRoutes = new Hono<AppEnv>();


/** uuidutils.is_uuid_like + str(uuid.UUID(x)): dashless/braced/upper-case forms normalised, else null. */
export function normaliseUuid(text: string): string | null {
  const hex = text.trim().toLowerCase().replace(/^urn:/, '').replace(/^uuid:/, '').replace(/[{}-]/g, '');
  if (!/^[0-9a-f]{32}$/.test(hex)) return null;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Words a claim failure as the endpoint does upstream: unknown classes are
 * 400 with `notFoundPrefix`, inventory and capacity problems 409
 * "Unable to allocate inventory: ...". Anything else is returned unchanged.
 */
export function claimFailureToHttp(err: unknown, notFoundPrefix: string): unknown {
  if (!(err instanceof AllocationFailure)) return err;
  if (err.kind === 'unknown_class') return new ApiError(400, webobDetail(400, `${notFoundPrefix}${err.message}`));
  return new ApiError(409, webobDetail(409, `Unable to allocate inventory: ${err.message}`));
}

/** Writes claims in one transaction (see replaceAllocations). */
export async function writeClaims(c: AppContext, claims: ConsumerClaim[], notFoundPrefix: string): Promise<void> {
  const { deps } = c.var;
  try {
    await deps.store.writeTx((tx) => replaceAllocations(tx, claims, {
      requireGeneration: atLeast(c, 'CONSUMER_GENERATION'),
      now: isoNow(deps.clock),
    }));
  } catch (err) {
    throw claimFailureToHttp(err, notFoundPrefix);
  }
}

/** A consumer's part of a dict-form body as a claim, with the fields this microversion knows. */
export function claimFromBody(c: AppContext, uuid: string, body: ConsumerAllocationsBody): ConsumerClaim {
  const allocations: ConsumerClaim['allocations'] = {};
  for (const [rp, entry] of Object.entries(body.allocations)) allocations[rp] = entry.resources;
  return {
    uuid,
    allocations,
    projectId: body.project_id,
    userId: body.user_id,
    generation: atLeast(c, 'CONSUMER_GENERATION') ? body.consumer_generation ?? null : undefined,
    consumerType: atLeast(c, 'CONSUMER_TYPES') ? body.consumer_type : undefined,
  };
}

async function putClaim(c: AppContext, uuid: string): Promise<ConsumerClaim> {
  if (!atLeast(c, 'ALLOC_DICT')) {
    // 1.0-1.11: a list of {resource_provider: {uuid}, resources}.
    const body = atLeast(c, 'ALLOC_PROJECT_USER_REQUIRED')
      ? await readBody(c, putAllocationsV1_8)
      : { ...(await readBody(c, putAllocationsV1_0)), project_id: undefined, user_id: undefined };
    const allocations: ConsumerClaim['allocations'] = {};
    for (const item of body.allocations) allocations[item.resource_provider.uuid] = item.resources;
    return { uuid, allocations, projectId: body.project_id, userId: body.user_id };
  }
  const schema = atLeast(c, 'CONSUMER_TYPES') ? putAllocationsV1_38
    : atLeast(c, 'MAPPINGS') ? putAllocationsV1_34
      : atLeast(c, 'CONSUMER_GENERATION') ? putAllocationsV1_28 : putAllocationsV1_12;
  return claimFromBody(c, uuid, await readBody(c, schema));
}

resource(allocationRoutes, '/allocations', {
  POST: async (c) => {
    requireVersion(c, 'POST_ALLOCATIONS');
    authorize(c, 'placement:allocations:manage');
    const body = await readBody(c, postAllocationsSchema(c.var.mv));
    const claims = Object.entries(body).map(([uuid, part]) => claimFromBody(c, uuid, part));
    await writeClaims(c, claims, 'Unable to allocate inventory ');
    return c.body(null, 204);
  },
});

resource(allocationRoutes, '/allocations/:consumer_uuid', {
  GET: async (c) => {
    authorize(c, 'placement:allocations:list');
    const uuid = pathParam(c, 'consumer_uuid');
    const { db } = c.var.deps.store;
    const rows = await allocationsForConsumer(db, uuid);
    const consumer = rows.length > 0 ? (await consumerViews(db, [uuid])).get(uuid) : undefined;
    setCacheHeaders(c, allocationsLastModified(rows));
    return c.json(presentConsumerAllocations(rows, consumer, {
      withOwner: atLeast(c, 'ALLOC_DICT'),
      withGeneration: atLeast(c, 'CONSUMER_GENERATION'),
      withType: atLeast(c, 'CONSUMER_TYPES'),
    }));
  },
  PUT: async (c) => {
    authorize(c, 'placement:allocations:update');
    const raw = pathParam(c, 'consumer_uuid');
    const uuid = normaliseUuid(raw);
    if (!uuid) throw new ApiError(400, webobDetail(400, `Malformed consumer_uuid: ${raw}`));
    const claim = await putClaim(c, uuid);
    await writeClaims(c, [claim], `Unable to allocate inventory for consumer ${uuid}: `);
    return c.body(null, 204);
  },
  DELETE: async (c) => {
    authorize(c, 'placement:allocations:delete');
    const uuid = pathParam(c, 'consumer_uuid');
    const removed = await c.var.deps.store.writeTx((tx) => deleteConsumerAllocations(tx, uuid));
    if (!removed) throw new ApiError(404, webobDetail(404, `No allocations for consumer '${uuid}'`));
    return c.body(null, 204);
  },
});

resource(allocationRoutes, '/resource_providers/:uuid/allocations', {
  GET: async (c) => {
    authorize(c, 'placement:resource_providers:allocations:list');
    const uuid = pathParam(c, 'uuid');
    const { db } = c.var.deps.store;
    const provider = await findProvider(db, uuid);
    if (!provider) {
      throw new ApiError(404, webobDetail(404, `Resource provider '${uuid}' not found: No resource provider with uuid ${uuid} found`));
    }
    const rows = await allocationsForProvider(db, provider.id);
    setCacheHeaders(c, allocationsLastModified(rows));
    return c.json(presentProviderAllocations(rows, provider.generation, atLeast(c, 'CONSUMER_GENERATION')));
  },
});
