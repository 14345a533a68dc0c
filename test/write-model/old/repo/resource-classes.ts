// Resource classes: the standard ones (ids 0..N, synced at start, read-only)
// and custom CUSTOM_* ones (ids from 10000), created, renamed and deleted here.
import { DomainError, ErrorCode } from '../../../../src/errors.js';
import { count, eq, sql } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { allocations, inventories, resourceClasses } from '../../../../src/db/schema/index.js';

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

/** Inserts a custom class with the next id at or above 10000; 409 duplicate_name if the name is taken. */
export async function createResourceClass(tx: Db, name: string, now: string): Promise<ResourceClassRow> {
  if (await findResourceClass(tx, name)) {
    throw new DomainError('conflict', `Conflicting resource class already exists: ${name}`, ErrorCode.DUPLICATE_NAME);
  }
  const [top] = await tx.select({ max: sql<number | null>`max(${resourceClasses.id})` }).from(resourceClasses);
  const id = Math.max(MIN_CUSTOM_RESOURCE_CLASS_ID - 1, Number(top?.max ?? 0)) + 1;
  const [row] = await tx.insert(resourceClasses).values({ id, name, createdAt: now }).returning();
  return row!;
}

/** 1.7+ PUT: the class, created if missing. `created` tells 201 from 204. */
export async function ensureResourceClass(tx: Db, name: string, now: string): Promise<{ rc: ResourceClassRow; created: boolean }> {
  const existing = await findResourceClass(tx, name);
  if (existing) return { rc: existing, created: false };
  return { rc: await createResourceClass(tx, name, now), created: true };
}

/** 1.2–1.6 PUT: renames a custom class. 400 for standard classes, 409 if the new name exists. */
export async function renameResourceClass(tx: Db, name: string, newName: string, now: string): Promise<ResourceClassRow> {
  const rc = await requireResourceClass(tx, name);
  if (isStandard(rc)) throw new DomainError('invalid', `Cannot update standard resource class ${name}`);
  if (newName === rc.name) return rc;
  if (await findResourceClass(tx, newName)) {
    throw new DomainError('conflict', `Resource class already exists: ${newName}`, ErrorCode.DUPLICATE_NAME);
  }
  const [row] = await tx.update(resourceClasses).set({ name: newName, updatedAt: now }).where(eq(resourceClasses.id, rc.id)).returning();
  return row!;
}

/** Deletes a custom class: 404 unknown, 400 standard, 409 while inventories or allocations use it. */
export async function deleteResourceClass(tx: Db, name: string): Promise<void> {
  const rc = await requireResourceClass(tx, name);
  if (isStandard(rc)) {
    throw new DomainError('invalid', `Error in delete resource class: Cannot delete standard resource class ${name}.`);
  }
  const [inv] = await tx.select({ n: count() }).from(inventories).where(eq(inventories.resourceClassId, rc.id));
  const [alloc] = await tx.select({ n: count() }).from(allocations).where(eq(allocations.resourceClassId, rc.id));
  if ((inv?.n ?? 0) > 0 || (alloc?.n ?? 0) > 0) {
    throw new DomainError(
      'conflict',
      `Error in delete resource class: Cannot delete resource class ${name}. Class is in use in inventory.`,
    );
  }
  await tx.delete(resourceClasses).where(eq(resourceClasses.id, rc.id));
}
