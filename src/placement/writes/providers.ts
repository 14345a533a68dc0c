// Provider create, update and delete (POST, PUT and DELETE
// /resource_providers[/{uuid}]) in the write model of db/write-batch.ts: one
// read batch, the decision here, one guarded write batch.
//
// Create: first one write batch with nothing read (kernel.ts). The uuid
// and name are UNIQUE, so a taken one (or a concurrent creator) makes the
// insert fail; a child is inserted from its parent's row, so a parent
// missing or deleted meanwhile inserts nothing. Either refuses the batch and
// the ordinary path (read, decide, write) answers the duplicate or the
// missing parent, or goes through.
// Update: a compare-and-swap on the provider's generation and parent (the
// generation is not bumped, as upstream); a new parent must still exist and
// still not sit below the provider when the batch runs (guard), and the
// moved subtree's root is set from the tree as it is then.
// Delete: a compare-and-swap on the generation (every claim bumps it) and,
// in the same statement, no child and no allocation as of the write.
import type { ResultSet, Row } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { commitGuarded, guard, stmt, type WriteStatement } from '../../db/write-batch.js';
import {
  DuplicateProvider,
  InvalidNewProvider,
  InvalidProviderUpdate,
  ProviderHasChildren,
  ProviderInUse,
  ProviderNotFound,
} from './refusals.js';
import { placementWrite, tryOneBatch } from './kernel.js';
import type { NewProvider, ProviderView } from '../repo/providers.js';
import { ALLOC, INV, RP, RP_AGG, RP_TRAIT } from '../../db/columns.js';

/**
 * POST /resource_providers: first ONE write batch with nothing read
 * (kernel.ts), the same statements as the ordinary path's with the parent
 * found by uuid; a uuid or name taken fails UNIQUE and a missing parent
 * inserts nothing, and either refuses the batch. Refused, the ordinary path
 * reads, decides and words the 409 or 400.
 */
export async function createProviderBatched(store: DataStore, input: NewProvider, now: string): Promise<ProviderView> {
  // A provider naming itself as parent is refused by the ordinary path's decision alone.
  if (input.parentUuid !== input.uuid) {
    const parent = input.parentUuid === null ? null : ({ uuid: input.parentUuid } as const);
    const granted = await tryOneBatch(store, createStatements(input, parent, now));
    if (granted) return createdView(input, granted, now);
  }
  return placementWrite(async () => {
    const [byUuid, byName, parents] = await store.readBatch([
      { sql: `SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [input.uuid] },
      { sql: `SELECT ${RP.id} FROM resource_providers WHERE ${RP.name} = ?`, args: [input.name] },
      { sql: `SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [input.parentUuid ?? ''] },
    ]);
    if (byUuid!.rows.length > 0) throw new DuplicateProvider('uuid', input.uuid);
    if (byName!.rows.length > 0) throw new DuplicateProvider('name', input.name);
    let parentId: number | null = null;
    if (input.parentUuid !== null) {
      if (input.parentUuid === input.uuid) {
        throw new InvalidNewProvider(
          input.name,
          input.uuid,
          'parent provider UUID cannot be same as UUID. Please choose a different parent provider UUID.',
        );
      }
      const parent = parents!.rows[0];
      if (!parent)
        throw new InvalidNewProvider(
          input.name,
          input.uuid,
          'The specified parent provider UUID does not exist: parent provider UUID does not exist.',
        );
      parentId = Number(parent[RP.id]);
    }
    const results = await commitGuarded(store, createStatements(input, parentId === null ? null : { id: parentId }, now));
    return createdView(input, results, now);
  });
}

/**
 * The write batch of a provider create: the insert (a uuid or name taken
 * since fails UNIQUE, a lost race; a child is inserted from its parent's row,
 * so a parent gone inserts nothing, a lost race too), then the row read back.
 */
function createStatements(input: NewProvider, parent: { id: number } | { uuid: string } | null, now: string): WriteStatement[] {
  const insert =
    parent === null
      ? [
          stmt(
            `INSERT INTO resource_providers (${RP.uuid}, ${RP.name}, ${RP.generation}, ${RP.parentProviderId}, ${RP.rootProviderId}, ${RP.createdAt}, ${RP.updatedAt})
          VALUES (?, ?, 0, NULL, NULL, ?, ?)`,
            [input.uuid, input.name, now, now],
            { racing: true },
          ),
          stmt(`UPDATE resource_providers SET ${RP.rootProviderId} = ${RP.id} WHERE ${RP.uuid} = ?`, [input.uuid]),
        ]
      : [
          // The root is the parent's as of the write, whatever moved since the read.
          stmt(
            `INSERT INTO resource_providers (${RP.uuid}, ${RP.name}, ${RP.generation}, ${RP.parentProviderId}, ${RP.rootProviderId}, ${RP.createdAt}, ${RP.updatedAt})
          SELECT ?, ?, 0, p.${RP.id}, COALESCE(p.${RP.rootProviderId}, p.${RP.id}), ?, ? FROM resource_providers p WHERE p.${'id' in parent ? RP.id : RP.uuid} = ?`,
            [input.uuid, input.name, now, now, 'id' in parent ? parent.id : parent.uuid],
            { racing: true, mustChange: true },
          ),
        ];
  return [
    ...insert,
    stmt(
      `SELECT p.${RP.id}, COALESCE(r.${RP.uuid}, p.${RP.uuid}) AS root_uuid FROM resource_providers p
        LEFT JOIN resource_providers r ON r.${RP.id} = p.${RP.rootProviderId} WHERE p.${RP.uuid} = ?`,
      [input.uuid],
    ),
  ];
}

function createdView(input: NewProvider, results: ResultSet[], now: string): ProviderView {
  const created = results.at(-1)!.rows[0]!;
  return {
    id: Number(created[RP.id]),
    uuid: input.uuid,
    name: input.name,
    generation: 0,
    parentProviderUuid: input.parentUuid,
    rootProviderUuid: String(created.root_uuid),
    createdAt: now,
    updatedAt: now,
  };
}

/** The provider whose id `start` (an SQL expression) gives, and every provider above it. */
const ancestorsOf = (start: string) => `WITH RECURSIVE up(id, parent_id) AS (
    SELECT ${RP.id}, ${RP.parentProviderId} FROM resource_providers WHERE ${RP.id} = (${start})
    UNION SELECT rp.${RP.id}, rp.${RP.parentProviderId} FROM resource_providers rp JOIN up ON rp.${RP.id} = up.parent_id
  ) SELECT id FROM up`;

/** The provider and every provider below it. */
const SUBTREE_OF = `WITH RECURSIVE sub(id) AS (
    SELECT ? UNION SELECT rp.${RP.id} FROM resource_providers rp JOIN sub ON rp.${RP.parentProviderId} = sub.id
  ) SELECT id FROM sub`;

const VIEW_SQL = `SELECT p.${RP.id}, p.${RP.uuid}, p.${RP.name}, p.${RP.generation}, parent.${RP.uuid} AS parent_uuid, COALESCE(root.${RP.uuid}, p.${RP.uuid}) AS root_uuid,
    p.${RP.createdAt}, p.${RP.updatedAt}
  FROM resource_providers p LEFT JOIN resource_providers parent ON parent.${RP.id} = p.${RP.parentProviderId}
  LEFT JOIN resource_providers root ON root.${RP.id} = p.${RP.rootProviderId} WHERE p.${RP.id} = ?`;

function viewOf(row: Row): ProviderView {
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
  return {
    id: Number(row[RP.id]),
    uuid: String(row[RP.uuid]),
    name: String(row[RP.name]),
    generation: Number(row[RP.generation]),
    parentProviderUuid: text(row.parent_uuid),
    rootProviderUuid: String(row.root_uuid),
    createdAt: String(row[RP.createdAt]),
    updatedAt: text(row[RP.updatedAt]),
  };
}

export interface ProviderUpdate {
  name: string;
  /** undefined: leave the parent alone; null: make it a root (1.37+). */
  parentUuid?: string | null | undefined;
  allowReparent: boolean;
}

/**
 * PUT /resource_providers/{uuid}: renames and maybe re-parents the provider,
 * returns it as stored. Throws ProviderNotFound, DuplicateProvider,
 * InvalidProviderUpdate (upstream's order: the name, then the parent).
 */
export async function updateProviderBatched(store: DataStore, uuid: string, update: ProviderUpdate, now: string): Promise<ProviderView> {
  const fail = (why: string) => new InvalidProviderUpdate(why);
  const newParentUuid = typeof update.parentUuid === 'string' ? update.parentUuid : '';
  return placementWrite(async () => {
    const [providers, named, parents, aboveParent] = await store.readBatch([
      { sql: `SELECT ${RP.id}, ${RP.generation}, ${RP.parentProviderId} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [uuid] },
      { sql: `SELECT ${RP.id} FROM resource_providers WHERE ${RP.name} = ?`, args: [update.name] },
      { sql: `SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [newParentUuid] },
      { sql: ancestorsOf(`SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} = ?`), args: [newParentUuid] },
    ]);
    const row = providers!.rows[0];
    if (!row) throw new ProviderNotFound(uuid);
    const current = {
      id: Number(row[RP.id]),
      generation: Number(row[RP.generation]),
      parentId: row[RP.parentProviderId] === null ? null : Number(row[RP.parentProviderId]),
    };
    const holder = named!.rows[0];
    if (holder && Number(holder[RP.id]) !== current.id) throw new DuplicateProvider('name', update.name);

    // undefined: the parent stays; null: becomes a root; a number: moves under that provider.
    let moveTo: number | null | undefined;
    if (update.parentUuid === null) {
      if (current.parentId !== null) {
        if (!update.allowReparent) throw fail('un-parenting a provider is not currently allowed.');
        moveTo = null;
      }
    } else if (update.parentUuid !== undefined) {
      if (update.parentUuid === uuid) throw fail('creating loop in the provider tree is not allowed.');
      const parent = parents!.rows[0];
      if (!parent) throw fail('parent provider UUID does not exist.');
      const parentId = Number(parent[RP.id]);
      if (parentId !== current.parentId) {
        if (current.parentId !== null && !update.allowReparent) throw fail('re-parenting a provider is not currently allowed.');
        if (aboveParent!.rows.some((r) => Number(r[RP.id]) === current.id))
          throw fail('creating loop in the provider tree is not allowed.');
        moveTo = parentId;
      }
    }

    const statements: WriteStatement[] = [];
    if (typeof moveTo === 'number') {
      // The new parent is still there and still not below this provider.
      statements.push(
        guard(`EXISTS (SELECT 1 FROM resource_providers WHERE ${RP.id} = ?) AND ? NOT IN (${ancestorsOf('?')})`, [
          moveTo,
          current.id,
          moveTo,
        ]),
      );
    }
    const parentAfter = moveTo === undefined ? current.parentId : moveTo;
    statements.push(
      stmt(
        `UPDATE resource_providers SET ${RP.name} = ?, ${RP.updatedAt} = ?, ${RP.parentProviderId} = ?
          WHERE ${RP.id} = ? AND ${RP.generation} = ? AND ${RP.parentProviderId} IS ?`,
        [update.name, now, parentAfter, current.id, current.generation, current.parentId],
        { mustChange: true, racing: true },
      ),
    );
    if (moveTo !== undefined) {
      const root = moveTo === null ? '?' : `(SELECT COALESCE(${RP.rootProviderId}, ${RP.id}) FROM resource_providers WHERE ${RP.id} = ?)`;
      statements.push(
        stmt(`UPDATE resource_providers SET ${RP.rootProviderId} = ${root} WHERE ${RP.id} IN (${SUBTREE_OF})`, [
          moveTo ?? current.id,
          current.id,
        ]),
      );
    }
    statements.push(stmt(VIEW_SQL, [current.id]));
    const results = await commitGuarded(store, statements);
    return viewOf(results.at(-1)!.rows[0]!);
  });
}

/**
 * DELETE /resource_providers/{uuid}: the provider with its inventories,
 * traits and aggregate links. Throws ProviderNotFound, ProviderHasChildren,
 * ProviderInUse.
 */
export async function deleteProviderBatched(store: DataStore, uuid: string): Promise<void> {
  await placementWrite(async () => {
    const [providers] = await store.readBatch([
      {
        sql: `SELECT p.${RP.id}, p.${RP.generation},
            EXISTS (SELECT 1 FROM resource_providers c WHERE c.${RP.parentProviderId} = p.${RP.id}) AS has_children,
            EXISTS (SELECT 1 FROM allocations a WHERE a.${ALLOC.resourceProviderId} = p.${RP.id}) AS has_allocations
          FROM resource_providers p WHERE p.${RP.uuid} = ?`,
        args: [uuid],
      },
    ]);
    const row = providers!.rows[0];
    if (!row) throw new ProviderNotFound(uuid, true);
    if (Number(row.has_children)) throw new ProviderHasChildren(uuid);
    if (Number(row.has_allocations)) throw new ProviderInUse(uuid);
    const id = Number(row[RP.id]);
    await commitGuarded(store, [
      // A child created or an allocation made since the read (a claim bumps the generation) aborts the batch.
      stmt(
        `DELETE FROM resource_providers WHERE ${RP.id} = ? AND ${RP.generation} = ?
          AND NOT EXISTS (SELECT 1 FROM resource_providers c WHERE c.${RP.parentProviderId} = ?)
          AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.${ALLOC.resourceProviderId} = ?)`,
        [id, Number(row[RP.generation]), id, id],
        { mustChange: true },
      ),
      stmt(`DELETE FROM inventories WHERE ${INV.resourceProviderId} = ?`, [id]),
      stmt(`DELETE FROM resource_provider_traits WHERE ${RP_TRAIT.resourceProviderId} = ?`, [id]),
      stmt(`DELETE FROM resource_provider_aggregates WHERE ${RP_AGG.resourceProviderId} = ?`, [id]),
    ]);
  });
}
