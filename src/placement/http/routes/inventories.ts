// /resource_providers/{uuid}/inventories[/{resource_class}]: a provider's
// inventory, as a whole (GET, PUT replace-all, DELETE from 1.5) and per class
// (POST to add; GET, PUT, DELETE one). Every change is one read batch and
// one write batch that bumps the provider generation (writes/inventories.ts);
// replacing the whole inventory with a valid body is first tried as one write
// batch alone.
import { Hono } from 'hono';
import { conflict, ErrorCode, invalid, notFound } from '../../../errors.js';
import type { AppContext, AppEnv } from '../../../http/env.js';
import { readJson, validateBody } from '../../../http/validate.js';
import { atLeast, authorize, newest, pathParam, requireVersion, resource, setCacheHeaders } from '../middleware.js';
import { presentInventories, presentInventory, presentInventoryWithGeneration } from '../../present/inventories.js';
import { findInventory, listInventories, reservedCapacityProblem, type InventoryInput } from '../../repo/inventories.js';
import {
  writeProviderInventory,
  type InventoryChange,
  type InventoryReplacement,
  type InventoryWriteResult,
} from '../../writes/inventories.js';
import { isoNow, requireProvider } from '../../repo/lookups.js';
import type { ProviderState } from '../../writes/kernel.js';
import {
  postInventorySchema,
  putInventoriesSchema,
  putInventorySchema,
  toInventoryInput,
  toInventoryInputs,
} from '../../schemas/inventories.js';

export const inventoryRoutes = new Hono<AppEnv>();

const RULE = 'placement:resource_providers:inventories';

/** Body generation must match the provider's, before anything else is tried. */
function checkGeneration(provider: ProviderState, given: number): void {
  if (given !== provider.generation) {
    throw conflict('resource provider generation conflict', ErrorCode.CONCURRENT_UPDATE);
  }
}

/** reserved vs total, worded per microversion (equal is fine from 1.26). */
function checkCapacity(c: AppContext, provider: ProviderState, records: Record<string, InventoryInput>, verb: 'create' | 'update'): void {
  const problem = reservedCapacityProblem(provider, records, atLeast(c, 'RESERVED_EQUALS_TOTAL'));
  if (problem) {
    throw invalid(`Unable to ${verb} inventory for resource provider ${provider.uuid}: ${problem}`);
  }
}

function warnOverCapacity(c: AppContext, provider: string, classes: string[]): void {
  for (const rc of classes) {
    c.var.deps.log.warn('resource provider is now over-capacity', { provider, resource_class: rc });
  }
}

/** Runs one inventory write of the path's provider (see writeProviderInventory). */
function writeInventory(
  c: AppContext,
  decide: (provider: ProviderState) => InventoryChange,
  replacement?: InventoryReplacement,
): Promise<InventoryWriteResult> {
  return writeProviderInventory(c.var.deps.store, pathParam(c, 'uuid'), decide, isoNow(c.var.deps.clock), replacement);
}

/**
 * What the PUT's decision returns for a provider at the body's generation,
 * when the body alone says so: the write may then be one batch. Undefined
 * when the decision refuses the body (invalid, reserved above total), which
 * the ordinary path answers in upstream's order (404 first).
 */
function replacementOf(c: AppContext, raw: unknown): InventoryReplacement | undefined {
  const body = putInventoriesSchema.safeParse(raw);
  if (!body.success) return undefined;
  const records = toInventoryInputs(body.data.inventories);
  if (reservedCapacityProblem({ uuid: pathParam(c, 'uuid') }, records, atLeast(c, 'RESERVED_EQUALS_TOTAL'))) return undefined;
  return { generation: body.data.resource_provider_generation, records };
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
    let body: ReturnType<typeof postInventorySchema.parse> | undefined;
    const { generation } = await writeInventory(c, (provider) => {
      body = validateBody(postInventorySchema, raw);
      const input = toInventoryInput(body);
      checkCapacity(c, provider, { [body.resource_class]: input }, 'create');
      return { kind: 'add', resourceClass: body.resource_class, input };
    });
    const added = body!;
    setCacheHeaders(c, isoNow(c.var.deps.clock));
    const location = new URL(`/resource_providers/${pathParam(c, 'uuid')}/inventories/${added.resource_class}`, c.req.url).toString();
    c.header('location', location);
    return c.json(presentInventoryWithGeneration(toInventoryInput(added), generation), 201);
  },

  PUT: async (c) => {
    const raw = await readJson(c);
    authorize(c, `${RULE}:update`);
    let records: Record<string, InventoryInput> = {};
    const decide = (provider: ProviderState): InventoryChange => {
      const body = validateBody(putInventoriesSchema, raw);
      checkGeneration(provider, body.resource_provider_generation);
      records = toInventoryInputs(body.inventories);
      checkCapacity(c, provider, records, 'update');
      return { kind: 'replace', records };
    };
    const replacement = replacementOf(c, raw);
    if (replacement) records = replacement.records;
    const { generation, overCapacity } = await writeInventory(c, decide, replacement);
    warnOverCapacity(c, pathParam(c, 'uuid'), overCapacity);
    setCacheHeaders(c, isoNow(c.var.deps.clock));
    return c.json(presentInventories(records, generation));
  },

  DELETE: async (c) => {
    requireVersion(c, 'DELETE_ALL_INVENTORY', 405);
    authorize(c, `${RULE}:delete`);
    await writeInventory(c, () => ({ kind: 'clear' }), { generation: undefined, records: {} });
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
    if (!inv) throw notFound(`No inventory of class ${rc} for ${provider.uuid}`);
    setCacheHeaders(c, newest(inv.createdAt, inv.updatedAt));
    return c.json(presentInventoryWithGeneration(inv, provider.generation));
  },

  PUT: async (c) => {
    const raw = await readJson(c);
    authorize(c, `${RULE}:update`);
    const rc = pathParam(c, 'resource_class');
    let input: InventoryInput | undefined;
    const { generation, overCapacity } = await writeInventory(c, (provider) => {
      const body = validateBody(putInventorySchema, raw);
      checkGeneration(provider, body.resource_provider_generation);
      input = toInventoryInput(body);
      checkCapacity(c, provider, { [rc]: input }, 'update');
      return { kind: 'update', resourceClass: rc, input };
    });
    warnOverCapacity(c, pathParam(c, 'uuid'), overCapacity);
    setCacheHeaders(c, isoNow(c.var.deps.clock));
    return c.json({ resource_provider_generation: generation, ...presentInventory(input!) });
  },

  DELETE: async (c) => {
    authorize(c, `${RULE}:delete`);
    const rc = pathParam(c, 'resource_class');
    await writeInventory(c, () => ({ kind: 'delete', resourceClass: rc }));
    return c.body(null, 204);
  },
});
