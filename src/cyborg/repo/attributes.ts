// Attributes: key/value facts about a deployable (Cyborg's /v2/attributes).
import { eq } from 'drizzle-orm';
import type { DataStore, Db } from '../../db/client.js';
import { attributes } from '../../db/schema/cyborg.js';
import { commitGuarded, stmt } from '../../db/write-batch.js';
import { rowOf } from '../../db/rows.js';
import { ATTRIBUTE, DEPLOYABLE } from '../../db/columns.js';

export type AttributeRow = typeof attributes.$inferSelect;

export async function listAttributes(db: Db, filter: { deployableId?: number } = {}): Promise<AttributeRow[]> {
  const q = db.select().from(attributes);
  return (filter.deployableId === undefined ? q : q.where(eq(attributes.deployableId, filter.deployableId))).orderBy(attributes.id);
}

export async function findAttribute(db: Db, uuid: string): Promise<AttributeRow | undefined> {
  return db.select().from(attributes).where(eq(attributes.uuid, uuid)).get();
}

/** Undefined when the deployable does not exist. One write batch: the insert happens only if it does. */
export async function createAttribute(
  store: DataStore,
  input: { uuid: string; deployableId: number; key: string; value: string },
  now: string,
): Promise<AttributeRow | undefined> {
  const [inserted] = await commitGuarded(store, [
    stmt(
      `INSERT INTO attributes (${ATTRIBUTE.uuid}, ${ATTRIBUTE.deployableId}, ${ATTRIBUTE.key}, ${ATTRIBUTE.value}, ${ATTRIBUTE.createdAt})
        SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM deployables WHERE ${DEPLOYABLE.id} = ?) RETURNING *`,
      [input.uuid, input.deployableId, input.key, input.value, now, input.deployableId],
    ),
  ]);
  const row = inserted!.rows[0];
  return row ? rowOf(attributes, row) : undefined;
}

/** One write batch; false when there was no such attribute. */
export async function deleteAttribute(store: DataStore, uuid: string): Promise<boolean> {
  const [removed] = await commitGuarded(store, [stmt(`DELETE FROM attributes WHERE ${ATTRIBUTE.uuid} = ?`, [uuid])]);
  return removed!.rowsAffected > 0;
}
