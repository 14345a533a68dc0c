// /resource_providers/{uuid}/aggregates (1.1+): a provider's aggregate
// membership. From 1.19 both directions carry the provider generation and a
// PUT is a compare-and-swap that bumps it; before, it is a bare list.
import { Hono } from 'hono';
import type { AppEnv } from '../../../../src/http/env.js';
import { readBody } from '../../../../src/http/validate.js';
import { atLeast, authorize, newest, setCacheHeaders } from '../../../../src/placement/http/middleware.js';
import { requireVersion } from './require-version.js';
import { resource } from '../../../../src/placement/http/profile.js';
import { pathParam } from './path-param.js';
import { normalizeUuid } from '../../../oracle-rules/uuid.js';
import { providerAggregates, setProviderAggregates } from '../repo/aggregates.js';
import { bumpGeneration, generationConflict, isoNow, requireProvider } from '../repo/lookups.js';
import { putAggregatesV1_1, putAggregatesV1_19 } from '../../../../src/placement/schemas/aggregates.js';

export const aggregateRoutes = new Hono<AppEnv>();

resource(aggregateRoutes, '/resource_providers/:uuid/aggregates', {
  GET: async (c) => {
    requireVersion(c, 'AGGREGATES');
    authorize(c, 'placement:resource_providers:aggregates:list');
    const { db } = c.var.deps.store;
    const rp = await requireProvider(db, pathParam(c, 'uuid'));
    const rows = await providerAggregates(db, rp.id);
    setCacheHeaders(c, newest(rp.updatedAt, ...rows.map((r) => r.createdAt)));
    const body: Record<string, unknown> = { aggregates: rows.map((r) => r.uuid) };
    if (atLeast(c, 'AGGREGATE_GENERATION')) body.resource_provider_generation = rp.generation;
    return c.json(body);
  },

  PUT: async (c) => {
    requireVersion(c, 'AGGREGATES');
    authorize(c, 'placement:resource_providers:aggregates:update');
    const { deps } = c.var;
    // Upstream looks the provider up before it reads the body.
    await requireProvider(deps.store.db, pathParam(c, 'uuid'));
    const withGeneration = atLeast(c, 'AGGREGATE_GENERATION');
    let aggregates: string[];
    let expected: number | undefined;
    if (withGeneration) {
      const body = await readBody(c, putAggregatesV1_19);
      aggregates = body.aggregates;
      expected = body.resource_provider_generation;
    } else {
      aggregates = await readBody(c, putAggregatesV1_1);
    }
    const uuids = [...new Set(aggregates.map(normalizeUuid))];
    const now = isoNow(deps.clock);
    const generation = await deps.store.writeTx(async (tx) => {
      const rp = await requireProvider(tx, pathParam(c, 'uuid'));
      if (expected !== undefined && expected !== rp.generation) {
        throw generationConflict(
          "Resource provider's generation already changed. Please update the generation and try again.");
      }
      await setProviderAggregates(tx, rp.id, uuids, now);
      return expected !== undefined ? bumpGeneration(tx, rp.id, rp.generation, now) : rp.generation;
    });
    setCacheHeaders(c, now);
    const body: Record<string, unknown> = { aggregates: uuids };
    if (withGeneration) body.resource_provider_generation = generation;
    return c.json(body);
  },
});
