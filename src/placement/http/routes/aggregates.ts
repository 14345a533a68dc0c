import { readBody } from '../../../http/validate.js';
import { atLeast, authorize, newest, setCacheHeaders } from '../middleware.js';
import { normalizeUuid } from '../../../shared/uuid.js';
import { readProviderGeneration, replaceProviderAggregates } from '../../writes/aggregates.js';
import { providerAggregates } from '../../repo/aggregates.js';
import { isoNow, requireProvider } from '../../repo/lookups.js';
import { putAggregatesSchema } from '../../schemas/aggregates.js';
import type { AggregatesJson } from '../../schemas/responses.js';
import { aggregatesResponseSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const aggregateRoutes = new RouteTable('placement', placementHttp);

aggregateRoutes.resource('/resource_providers/:uuid/aggregates', {
  GET: {
    summary: "A provider's aggregates",
    since: MV.AGGREGATES,
    ...answers(200, 'Aggregates', 'Aggregates', aggregatesResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:aggregates:list');
      const { db } = c.get('deps').store;
      const rp = await requireProvider(db, c.req.param('uuid'));
      const rows = await providerAggregates(db, rp.id);
      setCacheHeaders(c, newest(rp.updatedAt, ...rows.map((r) => r.createdAt)));
      const body: AggregatesJson = { aggregates: rows.map((r) => r.uuid) };
      if (atLeast(c, 'AGGREGATE_GENERATION')) body.resource_provider_generation = rp.generation;
      return c.json(body);
    },
  },
  PUT: {
    summary: "Replace a provider's aggregates",
    since: MV.AGGREGATES,
    body: putAggregatesSchema,
    bodyName: 'PutAggregates',
    ...answers(200, 'Aggregates', 'Aggregates', aggregatesResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:aggregates:update');
      const deps = c.get('deps');
      const uuid = c.req.param('uuid');
      // Upstream looks the provider up before it reads the body.
      const read = await readProviderGeneration(deps.store, uuid);
      const request = await readBody(c, putAggregatesSchema(c.get('mv')));
      // A bare list before 1.19; an object with the provider generation from 1.19.
      const withGeneration = !Array.isArray(request);
      const aggregates = withGeneration ? request.aggregates : request;
      const expected = withGeneration ? request.resource_provider_generation : undefined;
      const uuids = [...new Set(aggregates.map(normalizeUuid))];
      const now = isoNow(deps.clock);
      const generation = await replaceProviderAggregates(deps.store, uuid, read, expected, uuids, now);
      setCacheHeaders(c, now);
      const body: AggregatesJson = { aggregates: uuids };
      if (withGeneration) body.resource_provider_generation = generation;
      return c.json(body);
    },
  },
});
