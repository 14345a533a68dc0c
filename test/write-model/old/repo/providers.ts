// Resource providers: create, read, list with filters, update (rename and
// re-parent), delete. Trees are kept flat in SQL: every provider stores its
// root's id, so "the whole tree" is one indexed equality.
import { DomainError, ErrorCode } from '../../../../src/errors.js';
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import type { Db } from '../../../../src/db/client.js';
import {
  allocations,
  inventories,
  placementAggregates,
  resourceProviderAggregates,
  resourceProviders,
  resourceProviderTraits,
} from '../../../../src/db/schema/index.js';
import { capacitySql, usedSql } from '../../../oracle-rules/capacity.js';
import type { AggregateFilter } from '../../../oracle-rules/query.js';
import { findProvider, type ProviderRow } from './lookups.js';

export interface ProviderView {
  id: number;
  uuid: string;
  name: string;
  generation: number;
  parentProviderUuid: string | null;
  rootProviderUuid: string;
  createdAt: string;
  updatedAt: string | null;
}

const parent = alias(resourceProviders, 'parent');
const root = alias(resourceProviders, 'root');

function viewQuery(db: Db) {
  return db
    .select({
      id: resourceProviders.id,
      uuid: resourceProviders.uuid,
      name: resourceProviders.name,
      generation: resourceProviders.generation,
      parentProviderUuid: parent.uuid,
      rootProviderUuid: sql<string>`coalesce(${root.uuid}, ${resourceProviders.uuid})`,
      createdAt: resourceProviders.createdAt,
      updatedAt: resourceProviders.updatedAt,
    })
    .from(resourceProviders)
    .leftJoin(parent, eq(parent.id, resourceProviders.parentProviderId))
    .leftJoin(root, eq(root.id, resourceProviders.rootProviderId));
}

export async function getProviderView(db: Db, uuid: string): Promise<ProviderView | undefined> {
  const rows = await viewQuery(db).where(eq(resourceProviders.uuid, uuid)).limit(1);
  return rows[0];
}

export interface ProviderListFilter {
  uuid?: string;
  name?: string;
  inTree?: string;
  memberOf?: AggregateFilter;
  /** Trait filter, names already resolved to ids. */
  traits?: { required: number[]; forbidden: number[]; anyOf: number[][] };
  /** resource class id -> amount that must still fit. */
  resources?: Map<number, number>;
}

function inAggregates(uuids: string[]): SQL {
  return inArray(
    resourceProviders.id,
    sql`(SELECT ${resourceProviderAggregates.resourceProviderId} FROM ${resourceProviderAggregates}
         JOIN ${placementAggregates} ON ${placementAggregates.id} = ${resourceProviderAggregates.aggregateId}
         WHERE ${inArray(placementAggregates.uuid, uuids)})`,
  );
}

function hasTraits(traitIds: number[]): SQL {
  return inArray(
    resourceProviders.id,
    sql`(SELECT ${resourceProviderTraits.resourceProviderId} FROM ${resourceProviderTraits}
         WHERE ${inArray(resourceProviderTraits.traitId, traitIds)})`,
  );
}

/**
 * Providers with inventory of `rcId` where `amount` more still fits over
 * current usage: capacity.ts's fits() in SQL (units, step, capacity), so the
 * filter stays one query whatever the number of matching providers.
 */
function hasRoomFor(rcId: number, amount: number): SQL {
  return sql`EXISTS (SELECT 1 FROM ${inventories} room WHERE room.resource_provider_id = ${resourceProviders.id}
    AND room.resource_class_id = ${rcId} AND room.min_unit <= ${amount} AND room.max_unit >= ${amount}
    AND ${amount} % room.step_size = 0
    AND ${sql.raw(capacitySql('room'))} - ${sql.raw(usedSql('room'))} >= ${amount})`;
}

export async function listProviders(db: Db, filter: ProviderListFilter): Promise<ProviderView[]> {
  const conditions: SQL[] = [];
  if (filter.uuid !== undefined) conditions.push(eq(resourceProviders.uuid, filter.uuid));
  if (filter.name !== undefined) conditions.push(eq(resourceProviders.name, filter.name));
  if (filter.inTree !== undefined) {
    const anchor = await findProvider(db, filter.inTree);
    if (!anchor) return [];
    conditions.push(eq(resourceProviders.rootProviderId, anchor.rootProviderId ?? anchor.id));
  }
  for (const group of filter.memberOf?.anyOf ?? []) conditions.push(inAggregates(group));
  if (filter.memberOf?.forbidden.length) conditions.push(sql`NOT ${inAggregates(filter.memberOf.forbidden)}`);
  for (const traitId of filter.traits?.required ?? []) conditions.push(hasTraits([traitId]));
  for (const group of filter.traits?.anyOf ?? []) conditions.push(hasTraits(group));
  if (filter.traits?.forbidden.length) conditions.push(sql`NOT ${hasTraits(filter.traits.forbidden)}`);
  for (const [rcId, amount] of filter.resources ?? []) conditions.push(hasRoomFor(rcId, amount));
  return viewQuery(db)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(resourceProviders.id);
}

function duplicate(kind: 'name' | 'uuid', value: string): DomainError {
  return new DomainError('conflict', `Conflicting resource provider ${kind}: ${value} already exists.`, ErrorCode.DUPLICATE_NAME);
}

async function assertNameFree(db: Db, name: string, exceptId?: number): Promise<void> {
  const rows = await db.select({ id: resourceProviders.id }).from(resourceProviders).where(eq(resourceProviders.name, name)).limit(1);
  if (rows[0] && rows[0].id !== exceptId) throw duplicate('name', name);
}

export interface NewProvider {
  uuid: string;
  name: string;
  parentUuid: string | null;
}

/** The interactive create, as before the write model (restored: the oracle must not call the live one). */
export async function createProvider(db: Db, input: NewProvider, now: string): Promise<ProviderView> {
  const fail = (why: string) => new DomainError('invalid', `Unable to create resource provider "${input.name}", ${input.uuid}: ${why}`);
  if (await findProvider(db, input.uuid)) throw duplicate('uuid', input.uuid);
  await assertNameFree(db, input.name);
  let parentRow: ProviderRow | undefined;
  if (input.parentUuid !== null) {
    if (input.parentUuid === input.uuid) {
      throw fail('parent provider UUID cannot be same as UUID. Please choose a different parent provider UUID.');
    }
    parentRow = await findProvider(db, input.parentUuid);
    if (!parentRow) throw fail('The specified parent provider UUID does not exist: parent provider UUID does not exist.');
  }
  const [inserted] = await db
    .insert(resourceProviders)
    .values({
      uuid: input.uuid,
      name: input.name,
      generation: 0,
      parentProviderId: parentRow?.id ?? null,
      rootProviderId: parentRow ? (parentRow.rootProviderId ?? parentRow.id) : null,
      createdAt: now,
      updatedAt: now,
    })
    .returning({ id: resourceProviders.id });
  if (!parentRow) {
    await db.update(resourceProviders).set({ rootProviderId: inserted!.id }).where(eq(resourceProviders.id, inserted!.id));
  }
  return (await getProviderView(db, input.uuid))!;
}

/** Ids of the provider and every provider below it. */
async function subtreeIds(db: Db, providerId: number): Promise<number[]> {
  const rows = await db.all<{ id: number }>(sql`
    WITH RECURSIVE sub(id) AS (
      SELECT ${providerId}
      UNION ALL
      SELECT rp.id FROM ${resourceProviders} rp JOIN sub ON rp.parent_provider_id = sub.id
    ) SELECT id FROM sub`);
  return rows.map((r) => Number(r.id));
}

export interface ProviderUpdate {
  name: string;
  /** undefined: leave the parent alone; null: make it a root (1.37+). */
  parentUuid?: string | null;
  allowReparent: boolean;
}

export async function updateProvider(db: Db, current: ProviderRow, update: ProviderUpdate, now: string): Promise<ProviderView> {
  const fail = (why: string) => new DomainError('invalid', why);
  await assertNameFree(db, update.name, current.id);
  const changes: Partial<typeof resourceProviders.$inferInsert> = { name: update.name, updatedAt: now };
  if (update.parentUuid !== undefined) {
    const currentParentId = current.parentProviderId;
    if (update.parentUuid === null) {
      if (currentParentId !== null) {
        if (!update.allowReparent) throw fail('un-parenting a provider is not currently allowed.');
        await moveSubtree(db, current.id, null, current.id);
      }
    } else {
      if (update.parentUuid === current.uuid) throw fail('creating loop in the provider tree is not allowed.');
      const newParent = await findProvider(db, update.parentUuid);
      if (!newParent) throw fail('parent provider UUID does not exist.');
      if (newParent.id !== currentParentId) {
        if (currentParentId !== null && !update.allowReparent) {
          throw fail('re-parenting a provider is not currently allowed.');
        }
        const below = await subtreeIds(db, current.id);
        if (below.includes(newParent.id)) throw fail('creating loop in the provider tree is not allowed.');
        await moveSubtree(db, current.id, newParent.id, newParent.rootProviderId ?? newParent.id, below);
      }
    }
  }
  await db.update(resourceProviders).set(changes).where(eq(resourceProviders.id, current.id));
  return (await getProviderView(db, current.uuid))!;
}

async function moveSubtree(db: Db, providerId: number, parentId: number | null, rootId: number, ids?: number[]): Promise<void> {
  const members = ids ?? (await subtreeIds(db, providerId));
  await db.update(resourceProviders).set({ parentProviderId: parentId }).where(eq(resourceProviders.id, providerId));
  await db.update(resourceProviders).set({ rootProviderId: rootId }).where(inArray(resourceProviders.id, members));
}

/** Deletes a leaf provider with no allocations, and everything hanging off it. */
export async function deleteProvider(db: Db, provider: ProviderRow): Promise<void> {
  const children = await db
    .select({ id: resourceProviders.id })
    .from(resourceProviders)
    .where(eq(resourceProviders.parentProviderId, provider.id))
    .limit(1);
  if (children.length) {
    throw new DomainError(
      'conflict',
      `Unable to delete parent resource provider ${provider.uuid}: It has child resource providers.`,
      ErrorCode.PROVIDER_CANNOT_DELETE_PARENT,
    );
  }
  const used = await db.select({ id: allocations.id }).from(allocations).where(eq(allocations.resourceProviderId, provider.id)).limit(1);
  if (used.length) {
    throw new DomainError(
      'conflict',
      `Unable to delete resource provider ${provider.uuid}: Resource provider has allocations.`,
      ErrorCode.PROVIDER_INUSE,
    );
  }
  await db.delete(inventories).where(eq(inventories.resourceProviderId, provider.id));
  await db.delete(resourceProviderTraits).where(eq(resourceProviderTraits.resourceProviderId, provider.id));
  await db.delete(resourceProviderAggregates).where(eq(resourceProviderAggregates.resourceProviderId, provider.id));
  await db.delete(resourceProviders).where(eq(resourceProviders.id, provider.id));
}
