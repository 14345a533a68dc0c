// /resource_providers/{uuid}/inventories[/{resource_class}]: a provider's
// inventory, as a whole (GET, PUT replace-all, DELETE from 1.5) and per class
// (POST to add; GET, PUT, DELETE one). Every change bumps the provider
// generation in the same write transaction.
import { Hono } from 'hono';
import { ApiError, ErrorCode, webobDetail } from '../../../../src/http/api-error.js';
import type { AppContext, AppEnv } from '../../../../src/http/env.js';
import { readJson, validateBody } from '../../../../src/http/validate.js';
import { atLeast, authorize, newest, setCacheHeaders } from '../../../../src/placement/http/middleware.js';
import { requireVersion } from './require-version.js';
import { resource } from '../../../../src/placement/http/profile.js';
import { pathParam } from './path-param.js';
import {
  presentInventories, presentInventory, presentInventoryWithGeneration,
} from '../../../../src/placement/present/inventories.js';
import {
  addInventory, deleteInventory, findInventory, InventoryInUseError, listInventories,
  reservedCapacityProblem, setInventories, updateInventory, type InventoryInput,
} from '../repo/inventories.js';
import { bumpGeneration, isoNow, requireProvider, type ProviderRow } from '../repo/lookups.js';
import {
  postInventorySchema, putInventoriesSchema, putInventorySchema, toInventoryInput, toInventoryInputs,
} from '../../../../src/placement/schemas/inventories.js';

export const inventoryRoutes = new Hono<AppEnv>();

const RULE = 'placement:resource_providers:inventories';

/** Body generation must match the provider's, before anything else is tried. */
function checkGeneration(provider: ProviderRow, given: number): void {
  if (given !== provider.generation) {
    throw new ApiError(409, webobDetail(409, 'resource provider generation conflict'), { code: ErrorCode.CONCURRENT_UPDATE });
  }
}

/** reserved vs total, worded per microversion (equal is fine from 1.26). */
function checkCapacity(c: AppContext, provider: ProviderRow, records: Record<string, InventoryInput>, verb: 'create' | 'update'): void {
  const problem = reservedCapacityProblem(provider, records, atLeast(c, 'RESERVED_EQUALS_TOTAL'));
  if (problem) {
    throw new ApiError(400, webobDetail(400, `Unable to ${verb} inventory for resource provider ${provider.uuid}: ${problem}`));
  }
}

function warnOverCapacity(c: AppContext, provider: ProviderRow, classes: string[]): void {
  for (const rc of classes) {
    c.var.deps.log.warn('resource provider is now over-capacity', { provider: provider.uuid, resource_class: rc });
  }
}

resource(inventoryRoutes, '/resource_providers/:uuid/inventories', {
  GET: async (c) => {
    authorize(c, `${RULE}:list`);
    const { db } = c.var.deps.store;
    const provider = await requireProvider(db, pathParam(c, 'uuid'));
    const rows = await listInventories(db, provider.id);
    setCacheHeaders(c, newest(...rows.flatMap((r) => [r.createdAt, r.updatedAt])));
    return c.json(presentInventories(Object.fromEntries(rows.map((r) => [r.resourceClass, r])), provider.generation));
  },

  POST: async (c) => {
    const raw = await readJson(c);
    authorize(c, `${RULE}:create`);
    const { store } = c.var.deps;
    const provider = await requireProvider(store.db, pathParam(c, 'uuid'));
    const body = validateBody(postInventorySchema, raw);
    const input = toInventoryInput(body);
    checkCapacity(c, provider, { [body.resource_class]: input }, 'create');
    const now = isoNow(c.var.deps.clock);
    const generation = await store.writeTx(async (tx) => {
      await addInventory(tx, provider, body.resource_class, input, now);
      return bumpGeneration(tx, provider.id, provider.generation, now);
    });
    setCacheHeaders(c, now);
    const location = new URL(`/resource_providers/${provider.uuid}/inventories/${body.resource_class}`, c.req.url).toString();
    c.header('location', location);
    return c.json(presentInventoryWithGeneration(input, generation), 201);
  },

  PUT: async (c) => {
    const raw = await readJson(c);
    authorize(c, `${RULE}:update`);
    const { store } = c.var.deps;
    const provider = await requireProvider(store.db, pathParam(c, 'uuid'));
    const body = validateBody(putInventoriesSchema, raw);
    checkGeneration(provider, body.resource_provider_generation);
    const records = toInventoryInputs(body.inventories);
    checkCapacity(c, provider, records, 'update');
    const now = isoNow(c.var.deps.clock);
    const { generation, overCapacity } = await store.writeTx(async (tx) => {
      try {
        const result = await setInventories(tx, provider, records, now);
        return { ...result, generation: await bumpGeneration(tx, provider.id, provider.generation, now) };
      } catch (err) {
        if (err instanceof InventoryInUseError) throw err.prefixed('update conflict');
        throw err;
      }
    });
    warnOverCapacity(c, provider, overCapacity);
    setCacheHeaders(c, now);
    return c.json(presentInventories(records, generation));
  },

  DELETE: async (c) => {
    requireVersion(c, 'DELETE_ALL_INVENTORY', 405);
    authorize(c, `${RULE}:delete`);
    const { store } = c.var.deps;
    const provider = await requireProvider(store.db, pathParam(c, 'uuid'));
    const now = isoNow(c.var.deps.clock);
    await store.writeTx(async (tx) => {
      await setInventories(tx, provider, {}, now);
      await bumpGeneration(tx, provider.id, provider.generation, now);
    });
    return c.body(null, 204);
  },
});

resource(inventoryRoutes, '/resource_providers/:uuid/inventories/:resource_class', {
  GET: async (c) => {
    authorize(c, `${RULE}:show`);
    const { db } = c.var.deps.store;
    const provider = await requireProvider(db, pathParam(c, 'uuid'));
    const rc = pathParam(c, 'resource_class');
    const inv = await findInventory(db, provider.id, rc);
    if (!inv) throw new ApiError(404, webobDetail(404, `No inventory of class ${rc} for ${provider.uuid}`));
    setCacheHeaders(c, newest(inv.createdAt, inv.updatedAt));
    return c.json(presentInventoryWithGeneration(inv, provider.generation));
  },

  PUT: async (c) => {
    const raw = await readJson(c);
    authorize(c, `${RULE}:update`);
    const { store } = c.var.deps;
    const provider = await requireProvider(store.db, pathParam(c, 'uuid'));
    const rc = pathParam(c, 'resource_class');
    const body = validateBody(putInventorySchema, raw);
    checkGeneration(provider, body.resource_provider_generation);
    const input = toInventoryInput(body);
    checkCapacity(c, provider, { [rc]: input }, 'update');
    const now = isoNow(c.var.deps.clock);
    const { generation, overCapacity } = await store.writeTx(async (tx) => {
      const result = await updateInventory(tx, provider, rc, input, now);
      return { ...result, generation: await bumpGeneration(tx, provider.id, provider.generation, now) };
    });
    warnOverCapacity(c, provider, overCapacity);
    setCacheHeaders(c, now);
    return c.json({ resource_provider_generation: generation, ...presentInventory(input) });
  },

  DELETE: async (c) => {
    authorize(c, `${RULE}:delete`);
    const { store } = c.var.deps;
    const provider = await requireProvider(store.db, pathParam(c, 'uuid'));
    const rc = pathParam(c, 'resource_class');
    const now = isoNow(c.var.deps.clock);
    await store.writeTx(async (tx) => {
      await deleteInventory(tx, provider, rc);
      await bumpGeneration(tx, provider.id, provider.generation, now);
    });
    return c.body(null, 204);
  },
});
