// Usage reports: per provider (every class it has inventory of, 0 when
// unallocated) and per project/user, optionally grouped by consumer type (1.38).
import { and, countDistinct, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { allocations, consumerTypes, consumers, inventories, projects, resourceClasses, users } from '../../db/schema/index.js';

/** rc name → amount used. */
export type Usages = Record<string, number>;

export async function providerUsages(db: Db, providerId: number): Promise<Usages> {
  const rows = await db
    .select({
      resourceClass: resourceClasses.name,
      used: sql<number>`coalesce((SELECT sum(${allocations.used}) FROM ${allocations}
      WHERE ${allocations.resourceProviderId} = ${inventories.resourceProviderId}
        AND ${allocations.resourceClassId} = ${inventories.resourceClassId}), 0)`,
    })
    .from(inventories)
    .innerJoin(resourceClasses, eq(resourceClasses.id, inventories.resourceClassId))
    .where(eq(inventories.resourceProviderId, providerId));
  return Object.fromEntries(rows.map((r) => [r.resourceClass, Number(r.used)]));
}

export interface UsageFilter {
  projectId: string;
  userId?: string | undefined;
}

function ownerConditions(filter: UsageFilter): SQL[] {
  const conditions = [eq(projects.externalId, filter.projectId)];
  if (filter.userId !== undefined) conditions.push(eq(users.externalId, filter.userId));
  return conditions;
}

/** Sum of allocations per class for the consumers of a project (and user). */
export async function totalUsages(db: Db, filter: UsageFilter): Promise<Usages> {
  const rows = await db
    .select({ resourceClass: resourceClasses.name, used: sql<number>`sum(${allocations.used})` })
    .from(allocations)
    .innerJoin(consumers, eq(consumers.uuid, allocations.consumerId))
    .innerJoin(projects, eq(projects.id, consumers.projectId))
    .innerJoin(users, eq(users.id, consumers.userId))
    .innerJoin(resourceClasses, eq(resourceClasses.id, allocations.resourceClassId))
    .where(and(...ownerConditions(filter)))
    .groupBy(resourceClasses.name);
  return Object.fromEntries(rows.map((r) => [r.resourceClass, Number(r.used)]));
}

/** Group names used when no real consumer type applies. */
export const ALL_CONSUMER_TYPES = 'all';
export const UNKNOWN_CONSUMER_TYPE = 'unknown';

export interface TypedUsage {
  consumerCount: number;
  usages: Usages;
}

/**
 * 1.38 usages: grouped by consumer type ('unknown' for consumers written
 * before types existed). `consumerType` narrows to one type, 'unknown' to the
 * untyped consumers, and 'all' folds every type into one 'all' group.
 */
export async function usagesByConsumerType(
  db: Db,
  filter: UsageFilter & { consumerType?: string | undefined },
): Promise<Record<string, TypedUsage>> {
  const conditions = ownerConditions(filter);
  const wanted = filter.consumerType;
  if (wanted === UNKNOWN_CONSUMER_TYPE) conditions.push(isNull(consumers.consumerTypeId));
  else if (wanted !== undefined && wanted !== ALL_CONSUMER_TYPES) conditions.push(eq(consumerTypes.name, wanted));
  const group =
    wanted === ALL_CONSUMER_TYPES
      ? sql<string>`${ALL_CONSUMER_TYPES}`
      : sql<string>`coalesce(${consumerTypes.name}, ${UNKNOWN_CONSUMER_TYPE})`;

  const perClass = await db
    .select({ group, resourceClass: resourceClasses.name, used: sql<number>`sum(${allocations.used})` })
    .from(allocations)
    .innerJoin(consumers, eq(consumers.uuid, allocations.consumerId))
    .innerJoin(projects, eq(projects.id, consumers.projectId))
    .innerJoin(users, eq(users.id, consumers.userId))
    .innerJoin(resourceClasses, eq(resourceClasses.id, allocations.resourceClassId))
    .leftJoin(consumerTypes, eq(consumerTypes.id, consumers.consumerTypeId))
    .where(and(...conditions))
    .groupBy(group, resourceClasses.name);
  // Consumers are counted once per group, whatever classes they use.
  const counts = await db
    .select({ group, consumers: countDistinct(allocations.consumerId) })
    .from(allocations)
    .innerJoin(consumers, eq(consumers.uuid, allocations.consumerId))
    .innerJoin(projects, eq(projects.id, consumers.projectId))
    .innerJoin(users, eq(users.id, consumers.userId))
    .leftJoin(consumerTypes, eq(consumerTypes.id, consumers.consumerTypeId))
    .where(and(...conditions))
    .groupBy(group);

  const result: Record<string, TypedUsage> = {};
  for (const row of counts) result[row.group] = { consumerCount: Number(row.consumers), usages: {} };
  for (const row of perClass) {
    const entry = (result[row.group] ??= { consumerCount: 0, usages: {} });
    entry.usages[row.resourceClass] = Number(row.used);
  }
  return result;
}
