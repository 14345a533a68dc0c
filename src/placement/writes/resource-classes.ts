// Resource class writes (POST /resource_classes, PUT and DELETE
// /resource_classes/{name}) in ONE write batch each, one round trip: every
// statement carries its own condition (name free, custom class, not in use),
// evaluated inside the batch's transaction, and the rows read back in the
// same batch say why a statement changed nothing. No read can go stale
// between a decision and its write, so there is nothing to guard or retry.
import type { Row } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { commitGuarded, stmt } from '../../db/write-batch.js';
import { conflict, ErrorCode, invalid, notFound } from '../../errors.js';
import { isStandard, MIN_CUSTOM_RESOURCE_CLASS_ID, type ResourceClassRow } from '../repo/resource-classes.js';
import { ALLOC, INV, RC } from '../../db/columns.js';

const ROW = `SELECT ${RC.id}, ${RC.name}, ${RC.createdAt}, ${RC.updatedAt} FROM resource_classes`;

function rowOf(row: Row): ResourceClassRow {
  return {
    id: Number(row[RC.id]),
    name: String(row[RC.name]),
    createdAt: String(row[RC.createdAt]),
    updatedAt: row[RC.updatedAt] === null || row[RC.updatedAt] === undefined ? null : String(row[RC.updatedAt]),
  };
}

const noSuchClass = (name: string) => notFound(`No such resource class ${name}.`);

/**
 * Creates a custom class (the next id at or above 10000) unless the name is
 * taken. `created` tells which; the row is the class as stored either way.
 */
export async function ensureResourceClassBatched(
  store: DataStore,
  name: string,
  now: string,
): Promise<{ rc: ResourceClassRow; created: boolean }> {
  const [inserted, read] = await commitGuarded(store, [
    stmt(
      `INSERT INTO resource_classes (${RC.id}, ${RC.name}, ${RC.createdAt})
        SELECT (SELECT max(coalesce(max(${RC.id}), 0), ?) + 1 FROM resource_classes), ?, ?
        WHERE NOT EXISTS (SELECT 1 FROM resource_classes WHERE ${RC.name} = ?)`,
      [MIN_CUSTOM_RESOURCE_CLASS_ID - 1, name, now, name],
    ),
    stmt(`${ROW} WHERE name = ?`, [name]),
  ]);
  return { rc: rowOf(read!.rows[0]!), created: inserted!.rowsAffected > 0 };
}

/** POST /resource_classes: 409 duplicate_name when the name is taken. */
export async function createResourceClassBatched(store: DataStore, name: string, now: string): Promise<ResourceClassRow> {
  const { rc, created } = await ensureResourceClassBatched(store, name, now);
  if (!created) throw conflict(`Conflicting resource class already exists: ${name}`, ErrorCode.DUPLICATE_NAME);
  return rc;
}

/** 1.2–1.6 PUT: renames a custom class. 404 unknown, 400 standard, 409 if the new name exists. */
export async function renameResourceClassBatched(store: DataStore, name: string, newName: string, now: string): Promise<ResourceClassRow> {
  const [renamed, read] = await commitGuarded(store, [
    stmt(
      `UPDATE resource_classes SET ${RC.name} = ?, ${RC.updatedAt} = ?
        WHERE ${RC.name} = ? AND ${RC.id} >= ? AND ${RC.name} <> ? AND NOT EXISTS (SELECT 1 FROM resource_classes WHERE ${RC.name} = ?)`,
      [newName, now, name, MIN_CUSTOM_RESOURCE_CLASS_ID, newName, newName],
    ),
    stmt(`${ROW} WHERE name IN (?, ?)`, [name, newName]),
  ]);
  const rows = read!.rows.map(rowOf);
  if (renamed!.rowsAffected > 0) return rows.find((r) => r.name === newName)!;
  const rc = rows.find((r) => r.name === name);
  if (!rc) throw noSuchClass(name);
  if (isStandard(rc)) throw invalid(`Cannot update standard resource class ${name}`);
  if (newName === name) return rc;
  throw conflict(`Resource class already exists: ${newName}`, ErrorCode.DUPLICATE_NAME);
}

/** Deletes a custom class: 404 unknown, 400 standard, 409 while inventories or allocations use it. */
export async function deleteResourceClassBatched(store: DataStore, name: string): Promise<void> {
  const [deleted, read] = await commitGuarded(store, [
    stmt(
      `DELETE FROM resource_classes WHERE ${RC.name} = ? AND ${RC.id} >= ?
        AND NOT EXISTS (SELECT 1 FROM inventories i WHERE i.${INV.resourceClassId} = resource_classes.${RC.id})
        AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.${ALLOC.resourceClassId} = resource_classes.${RC.id})`,
      [name, MIN_CUSTOM_RESOURCE_CLASS_ID],
    ),
    stmt(`${ROW} WHERE name = ?`, [name]),
  ]);
  if (deleted!.rowsAffected > 0) return;
  const row = read!.rows[0];
  if (!row) throw noSuchClass(name);
  if (isStandard(rowOf(row))) throw invalid(`Error in delete resource class: Cannot delete standard resource class ${name}.`);
  throw conflict(`Error in delete resource class: Cannot delete resource class ${name}. Class is in use in inventory.`);
}
