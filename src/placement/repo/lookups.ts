// Small lookups every Placement repo needs: providers by uuid, resource class
// and trait ids by name, and the provider-generation compare-and-swap.
import { DomainError, ErrorCode } from '../../errors.js';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { inventories, resourceClasses, resourceProviders, traits } from '../../db/schema/index.js';

export type ProviderRow = typeof resourceProviders.$inferSelect;

export async function findProvider(db: Db, uuid: string): Promise<ProviderRow | undefined> {
  const rows = await db.select().from(resourceProviders).where(eq(resourceProviders.uuid, uuid)).limit(1);
  return rows[0];
}

export function providerNotFound(uuid: string): DomainError {
  return new DomainError('not_found', `No resource provider with uuid ${uuid} found`);
}

/** The provider, or 404 "No resource provider with uuid X found". */
export async function requireProvider(db: Db, uuid: string): Promise<ProviderRow> {
  const rp = await findProvider(db, uuid);
  if (!rp) throw providerNotFound(uuid);
  return rp;
}

export function generationConflict(detail = 'resource provider generation conflict'): DomainError {
  return new DomainError('conflict', detail, ErrorCode.CONCURRENT_UPDATE);
}

/**
 * Compare-and-swap on the provider generation, inside the caller's write
 * transaction: succeeds only if nobody changed the provider since `expected`
 * was read. Returns the new generation, or throws 409 concurrent_update.
 */
export async function bumpGeneration(db: Db, providerId: number, expected: number, now: string): Promise<number> {
  const updated = await db
    .update(resourceProviders)
    .set({ generation: sql`${resourceProviders.generation} + 1`, updatedAt: now })
    .where(and(eq(resourceProviders.id, providerId), eq(resourceProviders.generation, expected)))
    .returning({ generation: resourceProviders.generation });
  if (updated.length !== 1) {
    throw generationConflict(`resource provider generation conflict: Please update the generation and try again.`);
  }
  return updated[0]!.generation;
}

export async function resourceClassIdsByName(db: Db, names: string[]): Promise<Map<string, number>> {
  if (names.length === 0) return new Map();
  const rows = await db
    .select({ id: resourceClasses.id, name: resourceClasses.name })
    .from(resourceClasses)
    .where(inArray(resourceClasses.name, names));
  return new Map(rows.map((r) => [r.name, r.id]));
}

export async function traitIdsByName(db: Db, names: string[]): Promise<Map<string, number>> {
  if (names.length === 0) return new Map();
  const rows = await db.select({ id: traits.id, name: traits.name }).from(traits).where(inArray(traits.name, names));
  return new Map(rows.map((r) => [r.name, r.id]));
}

/** ISO-8601 timestamp as stored in created_at/updated_at. */
export function isoNow(clock: () => Date): string {
  return clock().toISOString();
}

/** The inventory columns capacity.ts's InventoryLimits needs, for select(). */
export const inventoryLimitColumns = {
  total: inventories.total,
  reserved: inventories.reserved,
  minUnit: inventories.minUnit,
  maxUnit: inventories.maxUnit,
  stepSize: inventories.stepSize,
  allocationRatio: inventories.allocationRatio,
};
