// Attributes: key/value facts about a deployable (Cyborg's /v2/attributes).
import { eq, inArray } from 'drizzle-orm';
import type { Db } from '../../../../src/db/client.js';
import { attributes, deployables } from '../../../../src/db/schema/cyborg.js';

export type AttributeRow = typeof attributes.$inferSelect;

export async function listAttributes(db: Db, filter: { deployableId?: number } = {}): Promise<AttributeRow[]> {
  const q = db.select().from(attributes);
  return (filter.deployableId === undefined ? q : q.where(eq(attributes.deployableId, filter.deployableId))).orderBy(attributes.id);
}

export async function findAttribute(db: Db, uuid: string): Promise<AttributeRow | undefined> {
  return db.select().from(attributes).where(eq(attributes.uuid, uuid)).get();
}

/** Undefined when the deployable does not exist. */
export async function createAttribute(
  db: Db,
  input: { uuid: string; deployableId: number; key: string; value: string },
  now: string,
): Promise<AttributeRow | undefined> {
  const deployable = await db.select({ id: deployables.id }).from(deployables).where(eq(deployables.id, input.deployableId)).get();
  if (!deployable) return undefined;
  const [row] = await db
    .insert(attributes)
    .values({ ...input, createdAt: now })
    .returning();
  return row;
}

export async function deleteAttribute(db: Db, uuid: string): Promise<boolean> {
  const removed = await db.delete(attributes).where(eq(attributes.uuid, uuid)).returning({ id: attributes.id });
  return removed.length > 0;
}

/** A deployable going away takes its attributes with it. */
export async function deleteAttributesOf(db: Db, deployableIds: number[]): Promise<void> {
  if (deployableIds.length) await db.delete(attributes).where(inArray(attributes.deployableId, deployableIds));
}
