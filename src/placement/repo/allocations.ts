// Allocations: reading them by consumer or provider, and the shape of a
// claim. Claims are written by writes/claims.ts (one read batch, one guarded
// write batch).
import { asc, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { allocations, consumers, resourceClasses, resourceProviders } from '../../db/schema/index.js';
import type { ConsumerClaimIdentity } from './consumers.js';

/** One consumer's desired allocations: provider uuid → {resource class → amount}. */
export interface ConsumerClaim extends ConsumerClaimIdentity {
  /** Empty means "remove every allocation this consumer holds". */
  allocations: Record<string, Record<string, number>>;
}

export interface ConsumerAllocationRow {
  providerUuid: string;
  providerGeneration: number;
  resourceClass: string;
  used: number;
  createdAt: string;
  updatedAt: string | null;
}

/** What every allocation row read shows of itself: its class (joined), amount and times. */
const ALLOCATION_FIELDS = {
  resourceClass: resourceClasses.name,
  used: allocations.used,
  createdAt: allocations.createdAt,
  updatedAt: allocations.updatedAt,
};
const classOfAllocation = eq(resourceClasses.id, allocations.resourceClassId);

export async function allocationsForConsumer(db: Db, consumerUuid: string): Promise<ConsumerAllocationRow[]> {
  return db
    .select({ providerUuid: resourceProviders.uuid, providerGeneration: resourceProviders.generation, ...ALLOCATION_FIELDS })
    .from(allocations)
    .innerJoin(resourceProviders, eq(resourceProviders.id, allocations.resourceProviderId))
    .innerJoin(resourceClasses, classOfAllocation)
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
    .select({ consumerUuid: allocations.consumerId, consumerGeneration: consumers.generation, ...ALLOCATION_FIELDS })
    .from(allocations)
    .innerJoin(resourceClasses, classOfAllocation)
    .leftJoin(consumers, eq(consumers.uuid, allocations.consumerId))
    .where(eq(allocations.resourceProviderId, providerId))
    .orderBy(asc(allocations.id));
}
