// Allocations: reading them by consumer or provider, and the one write path
// every claim takes (PUT/POST /allocations and the reshaper). A claim runs
// inside ONE write transaction (BEGIN IMMEDIATE): the capacity check, the
// inserts and the generation compare-and-swaps see the same snapshot, so two
// racing writers can never both succeed past capacity.
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import { ApiError, webobDetail } from '../../../../src/http/api-error.js';
import type { Db } from '../../../../src/db/client.js';
import { allocations, consumers, inventories, resourceClasses, resourceProviders } from '../../../../src/db/schema/index.js';
import { amountFitsUnits, capacityOf, usedSql, type InventoryLimits } from '../../../oracle-rules/capacity.js';
import {
  bumpConsumerGeneration,
  deleteConsumersWithoutAllocations,
  ensureConsumer,
  type ConsumerClaimIdentity,
  type ConsumerRow,
} from './consumers.js';
import { bumpGeneration, inventoryLimitColumns, resourceClassIdsByName } from './lookups.js';

/** One consumer's desired allocations: provider uuid → {resource class → amount}. */
export interface ConsumerClaim extends ConsumerClaimIdentity {
  /** Empty means "remove every allocation this consumer holds". */
  allocations: Record<string, Record<string, number>>;
}

/**
 * Why a claim could not be written, in upstream's exception families; each
 * endpoint words the HTTP error its own way around `message`.
 * - unknown_class: a named resource class does not exist (400).
 * - invalid_inventory: no such inventory, unit constraints, or capacity (409).
 */
export class AllocationFailure extends Error {
  constructor(readonly kind: 'unknown_class' | 'invalid_inventory', message: string) {
    super(message);
    this.name = 'AllocationFailure';
  }
}

export function providerDoesNotExist(uuid: string): ApiError {
  return new ApiError(400, webobDetail(400, `Allocation for resource provider '${uuid}' that does not exist.`));
}

export interface ClaimOptions {
  /** 1.28+: consumer generations are compared. */
  requireGeneration: boolean;
  now: string;
}

interface ProviderRef { id: number; uuid: string; generation: number }

async function providersByUuid(db: Db, uuids: string[]): Promise<Map<string, ProviderRef>> {
  if (uuids.length === 0) return new Map();
  const rows = await db
    .select({ id: resourceProviders.id, uuid: resourceProviders.uuid, generation: resourceProviders.generation })
    .from(resourceProviders)
    .where(inArray(resourceProviders.uuid, uuids));
  return new Map(rows.map((r) => [r.uuid, r]));
}

interface InventoryWithUsage extends InventoryLimits {
  providerId: number;
  resourceClassId: number;
  used: number;
}

async function inventoriesWithUsage(db: Db, providerIds: number[], classIds: number[]): Promise<InventoryWithUsage[]> {
  if (providerIds.length === 0 || classIds.length === 0) return [];
  // One statement (usage summed per row through its index): each statement
  // is a network hop when the database is remote.
  return db
    .select({
      providerId: inventories.resourceProviderId,
      resourceClassId: inventories.resourceClassId,
      ...inventoryLimitColumns,
      used: sql<number>`${sql.raw(usedSql('inventories'))}`.mapWith(Number),
    })
    .from(inventories)
    .where(and(inArray(inventories.resourceProviderId, providerIds), inArray(inventories.resourceClassId, classIds)));
}

function invalidInventory(resourceClass: string, providerUuid: string): AllocationFailure {
  return new AllocationFailure('invalid_inventory', `Inventory for '${resourceClass}' on resource provider '${providerUuid}' invalid.`);
}

/**
 * Replaces the allocations of every consumer in `claims`, atomically, as
 * placement's AllocationList.replace_all(). Call inside store.writeTx.
 * Order of checks (and so of errors) follows upstream: providers exist,
 * consumers and their generations, resource classes exist, inventory and
 * capacity, then the generation compare-and-swaps.
 */
export async function replaceAllocations(tx: Db, claims: ConsumerClaim[], opts: ClaimOptions): Promise<void> {
  if (claims.length === 0) return;
  // 1. Every named provider must exist (400), first missing one in body order.
  const namedProviders = [...new Set(claims.flatMap((c) => Object.keys(c.allocations)))];
  const providers = await providersByUuid(tx, namedProviders);
  for (const uuid of namedProviders) if (!providers.has(uuid)) throw providerDoesNotExist(uuid);

  // 2. Consumers: created or checked (generation) and brought up to date.
  const consumerRows = new Map<string, ConsumerRow>();
  for (const claim of claims) consumerRows.set(claim.uuid, await ensureConsumer(tx, claim, opts));

  // 3. Clean slate: the consumers' current allocations go. Providers that only
  //    lose allocations (consumers being emptied) still get their generation bumped.
  const claimUuids = claims.map((c) => c.uuid);
  const touchedProviders = new Map<number, ProviderRef>();
  const touchedConsumers = new Set<string>();
  const emptied = claims.filter((c) => Object.keys(c.allocations).length === 0).map((c) => c.uuid);
  if (emptied.length > 0) {
    const previous = await tx
      .selectDistinct({ consumerId: allocations.consumerId, id: resourceProviders.id, uuid: resourceProviders.uuid, generation: resourceProviders.generation })
      .from(allocations)
      .innerJoin(resourceProviders, eq(resourceProviders.id, allocations.resourceProviderId))
      .where(inArray(allocations.consumerId, emptied));
    for (const p of previous) {
      touchedProviders.set(p.id, { id: p.id, uuid: p.uuid, generation: p.generation });
      touchedConsumers.add(p.consumerId);
    }
  }
  // What the consumers held before, per (provider, class): usage there may stay
  // over capacity (an operator shrank the inventory) as long as it does not grow.
  const released = new Map<string, number>();
  const removed = await tx.delete(allocations).where(inArray(allocations.consumerId, claimUuids))
    .returning({ providerId: allocations.resourceProviderId, classId: allocations.resourceClassId, used: allocations.used });
  for (const r of removed) {
    const key = `${r.providerId}:${r.classId}`;
    released.set(key, (released.get(key) ?? 0) + r.used);
  }

  // 4. Resource classes must exist (400), first unknown one in body order.
  const entries = claims.flatMap((claim) =>
    Object.entries(claim.allocations).flatMap(([providerUuid, resources]) =>
      Object.entries(resources).map(([resourceClass, amount]) => ({ consumer: claim.uuid, provider: providers.get(providerUuid)!, resourceClass, amount }))));
  const classNames = [...new Set(entries.map((e) => e.resourceClass))];
  const classIds = await resourceClassIdsByName(tx, classNames);
  for (const name of classNames) {
    if (!classIds.has(name)) throw new AllocationFailure('unknown_class', `No such resource class ${name}.`);
  }

  // 5. Inventory, unit constraints and capacity, against usage without the
  //    consumers' old allocations and with every earlier entry of this request.
  const providerIds = [...new Set(entries.map((e) => e.provider.id))];
  const invRows = await inventoriesWithUsage(tx, providerIds, [...classIds.values()]);
  const inventoryOf = new Map(invRows.map((r) => [`${r.providerId}:${r.resourceClassId}`, r]));
  const providersWithInventory = new Set(invRows.map((r) => r.providerId));
  const lacking = providerIds.filter((id) => !providersWithInventory.has(id));
  if (lacking.length > 0) {
    const uuids = entries.map((e) => e.provider).filter((p) => lacking.includes(p.id)).map((p) => p.uuid);
    throw invalidInventory(classNames.join(', '), [...new Set(uuids)].join(', '));
  }
  const requested = new Map<string, number>();
  for (const e of entries) {
    const key = `${e.provider.id}:${classIds.get(e.resourceClass)!}`;
    const inv = inventoryOf.get(key);
    if (!inv) throw invalidInventory(e.resourceClass, e.provider.uuid);
    const prefix = `Unable to create allocation for '${e.resourceClass}' on resource provider '${e.provider.uuid}'.`;
    if (!amountFitsUnits(inv, e.amount)) {
      throw new AllocationFailure('invalid_inventory', `${prefix} The requested amount would violate inventory constraints.`);
    }
    const total = (requested.get(key) ?? 0) + e.amount;
    requested.set(key, total);
    if (inv.used + total > capacityOf(inv) && total > (released.get(key) ?? 0)) {
      throw new AllocationFailure('invalid_inventory', `${prefix} The requested amount would exceed the capacity.`);
    }
  }

  // 6. Write.
  if (entries.length > 0) {
    await tx.insert(allocations).values(entries.map((e) => ({
      resourceProviderId: e.provider.id,
      consumerId: e.consumer,
      resourceClassId: classIds.get(e.resourceClass)!,
      used: e.amount,
      createdAt: opts.now,
      updatedAt: opts.now,
    })));
  }

  // 7. Generations, compare-and-swap: every provider and consumer involved.
  for (const e of entries) {
    touchedProviders.set(e.provider.id, e.provider);
    touchedConsumers.add(e.consumer);
  }
  for (const p of touchedProviders.values()) await bumpGeneration(tx, p.id, p.generation, opts.now);
  for (const uuid of touchedConsumers) await bumpConsumerGeneration(tx, consumerRows.get(uuid)!, opts.now);

  // 8. Placement keeps no consumer without allocations.
  await deleteConsumersWithoutAllocations(tx, claimUuids);
}

export interface ConsumerAllocationRow {
  providerUuid: string;
  providerGeneration: number;
  resourceClass: string;
  used: number;
  createdAt: string;
  updatedAt: string | null;
}

export async function allocationsForConsumer(db: Db, consumerUuid: string): Promise<ConsumerAllocationRow[]> {
  return db
    .select({
      providerUuid: resourceProviders.uuid,
      providerGeneration: resourceProviders.generation,
      resourceClass: resourceClasses.name,
      used: allocations.used,
      createdAt: allocations.createdAt,
      updatedAt: allocations.updatedAt,
    })
    .from(allocations)
    .innerJoin(resourceProviders, eq(resourceProviders.id, allocations.resourceProviderId))
    .innerJoin(resourceClasses, eq(resourceClasses.id, allocations.resourceClassId))
    .where(eq(allocations.consumerId, consumerUuid))
    .orderBy(asc(allocations.id));
}

export interface ProviderAllocationRow {
  consumerUuid: string;
  consumerGeneration: number | null;
  resourceClass: string;
  used: number;
  createdAt: string;
  updatedAt: string | null;
}

export async function allocationsForProvider(db: Db, providerId: number): Promise<ProviderAllocationRow[]> {
  return db
    .select({
      consumerUuid: allocations.consumerId,
      consumerGeneration: consumers.generation,
      resourceClass: resourceClasses.name,
      used: allocations.used,
      createdAt: allocations.createdAt,
      updatedAt: allocations.updatedAt,
    })
    .from(allocations)
    .innerJoin(resourceClasses, eq(resourceClasses.id, allocations.resourceClassId))
    .leftJoin(consumers, eq(consumers.uuid, allocations.consumerId))
    .where(eq(allocations.resourceProviderId, providerId))
    .orderBy(asc(allocations.id));
}

/**
 * DELETE /allocations/{consumer}: removes every allocation and the consumer.
 * Returns false when it held none. Provider generations are not bumped, as upstream.
 */
export async function deleteConsumerAllocations(tx: Db, consumerUuid: string): Promise<boolean> {
  const removed = await tx.delete(allocations).where(eq(allocations.consumerId, consumerUuid)).returning({ id: allocations.id });
  await deleteConsumersWithoutAllocations(tx, [consumerUuid]);
  return removed.length > 0;
}
