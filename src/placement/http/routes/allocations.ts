// /allocations/{consumer_uuid} (GET, PUT, DELETE), POST /allocations (1.13)
// and GET /resource_providers/{uuid}/allocations.
import { invalid, notFound } from '../../../errors.js';
import { readBody } from '../../../http/validate.js';
import { consumerOfPath, parseUuidLike } from '../../../shared/uuid.js';
import { atLeast, authorize, setCacheHeaders } from '../middleware.js';
import { allocationsLastModified, presentConsumerAllocations, presentProviderAllocations } from '../../present/allocations.js';
import { allocationsForConsumer, allocationsForProvider } from '../../repo/allocations.js';
import { deleteConsumerAllocations } from '../../writes/claims.js';
import { consumerViews } from '../../repo/consumers.js';
import { claimFromBody, putClaim, writeClaims } from '../claim-requests.js';
import { findProvider } from '../../repo/lookups.js';
import { postAllocationsSchema, putAllocationsSchema } from '../../schemas/allocations.js';
import { consumerAllocationsResponseSchema, providerAllocationsResponseSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const allocationRoutes = new RouteTable('placement', placementHttp);

allocationRoutes.resource('/allocations', {
  POST: {
    summary: 'Claim for several consumers at once',
    since: MV.POST_ALLOCATIONS,
    body: postAllocationsSchema,
    bodyName: 'PostAllocations',
    responses: { 204: 'Claimed' },
    handler: async (c) => {
      authorize(c, 'placement:allocations:manage');
      const body = await readBody(c, postAllocationsSchema(c.get('mv')));
      const claims = Object.entries(body).map(([uuid, part]) => claimFromBody(c, uuid, part));
      await writeClaims(c, claims, 'allocations');
      return c.body(null, 204);
    },
  },
});

allocationRoutes.resource('/allocations/:consumer_uuid', {
  GET: {
    summary: "A consumer's allocations",
    ...answers(200, 'Allocations', 'ConsumerAllocations', consumerAllocationsResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:allocations:list');
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      const { db } = c.get('deps').store;
      const rows = await allocationsForConsumer(db, uuid);
      const consumer = rows.length > 0 ? (await consumerViews(db, [uuid])).get(uuid) : undefined;
      setCacheHeaders(c, allocationsLastModified(rows));
      return c.json(
        presentConsumerAllocations(rows, consumer, {
          withOwner: atLeast(c, 'ALLOC_DICT'),
          withGeneration: atLeast(c, 'CONSUMER_GENERATION'),
          withType: atLeast(c, 'CONSUMER_TYPES'),
        }),
      );
    },
  },
  PUT: {
    summary: "Replace a consumer's allocations",
    body: putAllocationsSchema,
    bodyName: 'PutAllocations',
    responses: { 204: 'Claimed' },
    handler: async (c) => {
      authorize(c, 'placement:allocations:update');
      const raw = c.req.param('consumer_uuid');
      const uuid = parseUuidLike(raw.trim());
      if (!uuid) throw invalid(`Malformed consumer_uuid: ${raw}`);
      const claim = await putClaim(c, uuid);
      await writeClaims(c, [claim], 'consumer_allocations');
      return c.body(null, 204);
    },
  },
  DELETE: {
    summary: "Delete a consumer's allocations",
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, 'placement:allocations:delete');
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      const removed = await deleteConsumerAllocations(c.get('deps').store, uuid);
      if (!removed) throw notFound(`No allocations for consumer '${uuid}'`);
      return c.body(null, 204);
    },
  },
});

allocationRoutes.resource('/resource_providers/:uuid/allocations', {
  GET: {
    summary: 'Allocations against a provider',
    ...answers(200, 'Allocations', 'ProviderAllocations', providerAllocationsResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:allocations:list');
      const uuid = c.req.param('uuid');
      const { db } = c.get('deps').store;
      const provider = await findProvider(db, uuid);
      if (!provider) {
        throw notFound(`Resource provider '${uuid}' not found: No resource provider with uuid ${uuid} found`);
      }
      const rows = await allocationsForProvider(db, provider.id);
      setCacheHeaders(c, allocationsLastModified(rows));
      return c.json(presentProviderAllocations(rows, provider.generation, atLeast(c, 'CONSUMER_GENERATION')));
    },
  },
});
