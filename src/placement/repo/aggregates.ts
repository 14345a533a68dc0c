// Aggregate membership of providers. Aggregates have no API of their own:
// a uuid exists as soon as some provider is put into it.
import { asc, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { placementAggregates, resourceProviderAggregates } from '../../db/schema/index.js';

export async function providerAggregates(db: Db, providerId: number): Promise<{ uuid: string; createdAt: string }[]> {
  return db
    .select({ uuid: placementAggregates.uuid, createdAt: resourceProviderAggregates.createdAt })
    .from(resourceProviderAggregates)
    .innerJoin(placementAggregates, eq(placementAggregates.id, resourceProviderAggregates.aggregateId))
    .where(eq(resourceProviderAggregates.resourceProviderId, providerId))
    .orderBy(asc(placementAggregates.id));
}
