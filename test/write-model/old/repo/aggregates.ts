// Aggregate membership of providers. Aggregates have no API of their own:
// a uuid exists as soon as some provider is put into it.
import { asc, eq, inArray } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { placementAggregates, resourceProviderAggregates } from '../../../../src/db/schema/index.js';

export async function providerAggregates(db: Db, providerId: number): Promise<{ uuid: string; createdAt: string }[]> {
  return db.select({ uuid: placementAggregates.uuid, createdAt: resourceProviderAggregates.createdAt })
    .from(resourceProviderAggregates)
    .innerJoin(placementAggregates, eq(placementAggregates.id, resourceProviderAggregates.aggregateId))
    .where(eq(resourceProviderAggregates.resourceProviderId, providerId))
    .orderBy(asc(placementAggregates.id));
}

/** Replaces a provider's aggregates (the caller decides about the generation). */
export async function setProviderAggregates(db: Db, providerId: number, uuids: string[], now: string): Promise<void> {
  await db.delete(resourceProviderAggregates).where(eq(resourceProviderAggregates.resourceProviderId, providerId));
  if (!uuids.length) return;
  await db.insert(placementAggregates).values(uuids.map((uuid) => ({ uuid, createdAt: now }))).onConflictDoNothing();
  const rows = await db.select({ id: placementAggregates.id }).from(placementAggregates)
    .where(inArray(placementAggregates.uuid, uuids));
  await db.insert(resourceProviderAggregates)
    .values(rows.map((r) => ({ resourceProviderId: providerId, aggregateId: r.id, createdAt: now })));
}
