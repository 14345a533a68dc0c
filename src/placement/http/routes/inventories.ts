// /resource_providers/{uuid}/inventories[/{resource_class}]: a provider's
// inventory, as a whole (GET, PUT replace-all, DELETE from 1.5) and per class
// (POST to add; GET, PUT, DELETE one). Every change is one read batch and
// one write batch that bumps the provider generation (writes/inventories.ts);
// replacing the whole inventory with a valid body is first tried as one write
// batch alone.
import { conflict, ErrorCode, invalid, notFound } from '../../../errors.js';
import type { AppContext } from '../../../http/env.js';
import { readJson, validateBody } from '../../../http/validate.js';
import { atLeast, authorize, newest, setCacheHeaders } from '../middleware.js';
import { presentInventories, presentInventory, presentInventoryWithGeneration } from '../../present/inventories.js';
import { findInventory, listInventories, reservedCapacityProblem, type InventoryInput } from '../../repo/inventories.js';
import {
  replaceProviderInventory,
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
import { inventoriesSchema, inventoryResponseSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable, always, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const inventoryRoutes = new RouteTable('placement', placementHttp);

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
    c.get('deps').log.warn('resource provider is now over-capacity', { provider, resource_class: rc });
  }
}

/** Runs one inventory write of provider `uuid` (see writeProviderInventory): the outcome and the change decided. */
function writeInventory<C extends InventoryChange>(c: AppContext, uuid: string, decide: (provider: ProviderState) => C) {
  return writeProviderInventory(c.get('deps').store, uuid, decide, isoNow(c.get('deps').clock));
}

/** Replaces or clears the whole inventory of provider `uuid`, one write batch first when `replacement` allows. */
function replaceInventory(
  c: AppContext,
  uuid: string,
  decide: (provider: ProviderState) => InventoryChange,
  replacement: InventoryReplacement | undefined,
): Promise<InventoryWriteResult> {
  return replaceProviderInventory(c.get('deps').store, uuid, decide, isoNow(c.get('deps').clock), replacement);
}

/**
 * What the PUT's decision returns for a provider at the body's generation,
 * when the body alone says so: the write may then be one batch. Undefined
 * when the decision refuses the body (invalid, reserved above total), which
 * the ordinary path answers in upstream's order (404 first).
 */
function replacementOf(c: AppContext, uuid: string, raw: unknown): InventoryReplacement | undefined {
  const body = putInventoriesSchema.safeParse(raw);
  if (!body.success) return undefined;
  const records = toInventoryInputs(body.data.inventories);
  if (reservedCapacityProblem({ uuid }, records, atLeast(c, 'RESERVED_EQUALS_TOTAL'))) return undefined;
  return { generation: body.data.resource_provider_generation, records };
}

inventoryRoutes.resource('/resource_providers/:uuid/inventories', {
  GET: {
    summary: "A provider's inventories",
    ...answers(200, 'Inventories', 'Inventories', inventoriesSchema),
    handler: async (c) => {
      authorize(c, `${RULE}:list`);
      const { db } = c.get('deps').store;
      const provider = await requireProvider(db, c.req.param('uuid'));
      const rows = await listInventories(db, provider.id);
      setCacheHeaders(c, newest(...rows.flatMap((r) => [r.createdAt, r.updatedAt])));
      return c.json(presentInventories(Object.fromEntries(rows.map((r) => [r.resourceClass, r])), provider.generation));
    },
  },
  POST: {
    summary: 'Add one inventory',
    body: always(postInventorySchema),
    bodyName: 'PostInventory',
    ...answers(201, 'The inventory', 'Inventory', inventoryResponseSchema),
    handler: async (c) => {
      const raw = await readJson(c);
      authorize(c, `${RULE}:create`);
      const uuid = c.req.param('uuid');
      const { generation, change } = await writeInventory(c, uuid, (provider) => {
        const body = validateBody(postInventorySchema, raw);
        const input = toInventoryInput(body);
        checkCapacity(c, provider, { [body.resource_class]: input }, 'create');
        return { kind: 'add', resourceClass: body.resource_class, input } as const;
      });
      setCacheHeaders(c, isoNow(c.get('deps').clock));
      const location = new URL(`/resource_providers/${uuid}/inventories/${change.resourceClass}`, c.req.url).toString();
      c.header('location', location);
      return c.json(presentInventoryWithGeneration(change.input, generation), 201);
    },
  },
  PUT: {
    summary: "Replace a provider's inventories",
    body: always(putInventoriesSchema),
    bodyName: 'PutInventories',
    ...answers(200, 'Inventories', 'Inventories', inventoriesSchema),
    handler: async (c) => {
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
      const replacement = replacementOf(c, c.req.param('uuid'), raw);
      if (replacement) records = replacement.records;
      const { generation, overCapacity } = await replaceInventory(c, c.req.param('uuid'), decide, replacement);
      warnOverCapacity(c, c.req.param('uuid'), overCapacity);
      setCacheHeaders(c, isoNow(c.get('deps').clock));
      return c.json(presentInventories(records, generation));
    },
  },
  DELETE: {
    summary: "Delete a provider's inventories",
    since: MV.DELETE_ALL_INVENTORY,
    belowSince: 405,
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, `${RULE}:delete`);
      await replaceInventory(c, c.req.param('uuid'), () => ({ kind: 'clear' }), { generation: undefined, records: {} });
      return c.body(null, 204);
    },
  },
});

inventoryRoutes.resource('/resource_providers/:uuid/inventories/:resource_class', {
  GET: {
    summary: 'Show one inventory',
    ...answers(200, 'The inventory', 'Inventory', inventoryResponseSchema),
    handler: async (c) => {
      authorize(c, `${RULE}:show`);
      const { db } = c.get('deps').store;
      const provider = await requireProvider(db, c.req.param('uuid'));
      const rc = c.req.param('resource_class');
      const inv = await findInventory(db, provider.id, rc);
      if (!inv) throw notFound(`No inventory of class ${rc} for ${provider.uuid}`);
      setCacheHeaders(c, newest(inv.createdAt, inv.updatedAt));
      return c.json(presentInventoryWithGeneration(inv, provider.generation));
    },
  },
  PUT: {
    summary: 'Update one inventory',
    body: always(putInventorySchema),
    bodyName: 'PutInventory',
    ...answers(200, 'The inventory', 'Inventory', inventoryResponseSchema),
    handler: async (c) => {
      const raw = await readJson(c);
      authorize(c, `${RULE}:update`);
      const rc = c.req.param('resource_class');
      const { generation, overCapacity, change } = await writeInventory(c, c.req.param('uuid'), (provider) => {
        const body = validateBody(putInventorySchema, raw);
        checkGeneration(provider, body.resource_provider_generation);
        const input = toInventoryInput(body);
        checkCapacity(c, provider, { [rc]: input }, 'update');
        return { kind: 'update', resourceClass: rc, input } as const;
      });
      warnOverCapacity(c, c.req.param('uuid'), overCapacity);
      setCacheHeaders(c, isoNow(c.get('deps').clock));
      return c.json({ resource_provider_generation: generation, ...presentInventory(change.input) });
    },
  },
  DELETE: {
    summary: 'Delete one inventory',
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, `${RULE}:delete`);
      const rc = c.req.param('resource_class');
      await writeInventory(c, c.req.param('uuid'), () => ({ kind: 'delete', resourceClass: rc }));
      return c.body(null, 204);
    },
  },
});
