// Resource classes: the standard ones (ids 0..N, synced at start, read-only)
// and custom CUSTOM_* ones (ids from 10000), created, renamed and deleted in
// writes/resource-classes.ts.
import { DomainError } from '../../errors.js';
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { resourceClasses } from '../../db/schema/index.js';

export type ResourceClassRow = typeof resourceClasses.$inferSelect;

/** Ids below this belong to the standard classes (os-resource-classes). */
export const MIN_CUSTOM_RESOURCE_CLASS_ID = 10000;

export const isStandard = (rc: ResourceClassRow): boolean => rc.id < MIN_CUSTOM_RESOURCE_CLASS_ID;

export async function listResourceClasses(db: Db): Promise<ResourceClassRow[]> {
  return db.select().from(resourceClasses).orderBy(resourceClasses.id);
}

export async function findResourceClass(db: Db, name: string): Promise<ResourceClassRow | undefined> {
  const rows = await db.select().from(resourceClasses).where(eq(resourceClasses.name, name)).limit(1);
  return rows[0];
}

export async function requireResourceClass(db: Db, name: string): Promise<ResourceClassRow> {
  const rc = await findResourceClass(db, name);
  if (!rc) throw new DomainError('not_found', `No such resource class ${name}.`);
  return rc;
}
