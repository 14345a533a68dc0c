// Resource providers: read and list with filters (the writes are in
// writes/providers.ts). Trees are kept flat in SQL: every provider stores its
// root's id, so "the whole tree" is one indexed equality.
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import { alias } from 'drizzle-orm/sqlite-core';
import type { Db } from '../../db/client.js';
import {
  inventories,
  placementAggregates,
  resourceProviderAggregates,
  resourceProviders,
  resourceProviderTraits,
} from '../../db/schema/index.js';
import { capacitySql, usedSql } from '../capacity.js';
import type { AggregateFilter } from '../candidates/parse.js';
import { findProvider } from './lookups.js';

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

export interface NewProvider {
  uuid: string;
  name: string;
  parentUuid: string | null;
}
