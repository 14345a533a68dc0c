// Traits: the global catalogue (standard names synced at start, CUSTOM_ ones
// created through the API) and each provider's set of traits.
import { and, asc, eq, exists, inArray, notExists, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { resourceProviderTraits, traits } from '../../db/schema/index.js';

export interface TraitListFilter {
  names?: string[];
  prefix?: string;
  associated?: boolean;
}

export async function listTraits(
  db: Db,
  filter: TraitListFilter,
): Promise<{ name: string; createdAt: string; updatedAt: string | null }[]> {
  const conditions: SQL[] = [];
  if (filter.names) conditions.push(inArray(traits.name, filter.names));
  // LIKE treats _ as a wildcard: escape it so "CUSTOM_" means the literal prefix.
  if (filter.prefix !== undefined) conditions.push(sql`${traits.name} LIKE ${`${filter.prefix.replace(/[\\%_]/g, '\\$&')}%`} ESCAPE '\\'`);
  const used = db.select({ one: sql`1` }).from(resourceProviderTraits).where(eq(resourceProviderTraits.traitId, traits.id));
  if (filter.associated === true) conditions.push(exists(used));
  if (filter.associated === false) conditions.push(notExists(used));
  return db
    .select({ name: traits.name, createdAt: traits.createdAt, updatedAt: traits.updatedAt })
    .from(traits)
    .where(conditions.length ? and(...conditions) : undefined)
    .orderBy(asc(traits.name));
}

export async function findTrait(db: Db, name: string) {
  const rows = await db.select().from(traits).where(eq(traits.name, name)).limit(1);
  return rows[0];
}

export async function providerTraits(db: Db, providerId: number): Promise<{ name: string; createdAt: string }[]> {
  return db
    .select({ name: traits.name, createdAt: resourceProviderTraits.createdAt })
    .from(resourceProviderTraits)
    .innerJoin(traits, eq(traits.id, resourceProviderTraits.traitId))
    .where(eq(resourceProviderTraits.resourceProviderId, providerId))
    .orderBy(asc(traits.name));
}
