// Holds' data access (docs/holds.md): what the model needs read in one batch
// (the holds on some providers, the allocations on what they hold with their
// ends, the capacities), and the writes of a hold, each one guarded batch
// that stands only while what its decision read still holds. No HTTP here.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import type { BatchReader, DataStore } from '../../db/client.js';
import { ALLOC, CONSUMER, HOLD, HOLD_AMOUNT, HOLD_DRAW, INV, LEASE, PROJECT, RC, RP } from '../../db/columns.js';
import { commitGuarded, guard, inList, stmt, type WriteStatement } from '../../db/write-batch.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { columns, type PackedRow } from '../../db/rows.js';
import { heldCapacitySql } from './declaration.js';
import { type Allocation, drawnEndMs, type EndAction, FOREVER, type Hold, type Key, keyOf, splitKey, type World } from './model.js';

// --- What holds' rule reads, wherever it is read --------------------------------
// The guard and the routes (below, by names), availability (calendar-repo.ts)
// and the simulation's snapshot (ext/simulate/snapshot.ts, by ids) read the
// same facts; they are written here once.

/**
 * A lease or a draw counts while it covers its consumer as it is: its
 * consumer generation is the consumer's (a rewrite since makes the claim
 * lasting and undrawn). For rows whose consumer uuid is `consumerUuid`, with
 * the consumer aliased `c`: the joins (aliases `l` and `d`; one row each at
 * most), then the lease's expiry (null: lasting) and the hold drawn from
 * (null: none).
 */
export const coverJoins = (consumerUuid: string): string => `LEFT JOIN ext_leases l ON l.${LEASE.consumerUuid} = ${consumerUuid}
  LEFT JOIN ext_hold_draws d ON d.${HOLD_DRAW.consumerUuid} = ${consumerUuid}`;
export const LEASE_END_SQL = `CASE WHEN l.${LEASE.consumerGeneration} = c.${CONSUMER.generation} THEN l.${LEASE.expiresAtMs} END`;
export const DRAWN_HOLD_SQL = `CASE WHEN d.${HOLD_DRAW.consumerGeneration} = c.${CONSUMER.generation} THEN d.${HOLD_DRAW.holdUuid} END`;

/** The stored holds by ids, one row per amount (to pack with packedArray(HELD), read back by heldOf). */
export const HELD = columns([
  'uuid',
  'project',
  'start_ms',
  'end_ms',
  'end_action',
  'ignore_allocations',
  'generation',
  'rp',
  'cls',
  'amount',
]);
/** `amount`: of the amount row aliased `ha`, as stored by default, or as a declaration counts it. */
export const heldSql = (
  where = '',
  amount = `ha.${HOLD_AMOUNT.amount}`,
): string => `SELECT h.${HOLD.uuid} AS uuid, h.${HOLD.projectId} AS project, h.${HOLD.startMs} AS start_ms,
    h.${HOLD.endMs} AS end_ms, h.${HOLD.endAction} AS end_action, h.${HOLD.ignoreAllocations} AS ignore_allocations,
    h.${HOLD.generation} AS generation, ha.${HOLD_AMOUNT.resourceProviderId} AS rp, ha.${HOLD_AMOUNT.resourceClassId} AS cls,
    ${amount} AS amount
  FROM ext_holds h JOIN ext_hold_amounts ha ON ha.${HOLD_AMOUNT.holdUuid} = h.${HOLD.uuid}${where ? ` ${where}` : ''}`;

/** A stored hold by ids: its amounts by provider and class id, in the order read. */
export interface HeldById {
  id: string;
  project: string;
  startMs: number;
  endMs: number;
  endAction: EndAction;
  ignoreAllocations: boolean;
  generation: number;
  amounts: { providerId: number; classId: number; amount: number }[];
}

/** The holds of HELD rows, in first-seen order. */
export function heldOf(rows: readonly PackedRow[]): HeldById[] {
  const holds = new Map<string, HeldById>();
  const h = HELD.at;
  for (const r of rows) {
    const uuid = String(r[h.uuid]);
    let hold = holds.get(uuid);
    if (!hold) {
      hold = {
        id: uuid,
        project: String(r[h.project]),
        startMs: Number(r[h.start_ms]),
        endMs: Number(r[h.end_ms]),
        endAction: String(r[h.end_action]) === 'keep' ? 'keep' : 'release',
        ignoreAllocations: Number(r[h.ignore_allocations]) === 1,
        generation: Number(r[h.generation]),
        amounts: [],
      };
      holds.set(uuid, hold);
    }
    hold.amounts.push({ providerId: Number(r[h.rp]), classId: Number(r[h.cls]), amount: Number(r[h.amount]) });
  }
  return [...holds.values()];
}

/** A hold as stored, with its providers' uuids and classes' names. */
export interface StoredHold extends Hold {
  generation: number;
  ignoreAllocations: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A hold's columns, its amounts given by `amount` (of the amount row aliased `ha`): as stored, or as a declaration counts them. */
const holdFields = (
  amount: string,
) => `h.${HOLD.uuid} AS uuid, h.${HOLD.projectId} AS project, h.${HOLD.startMs} AS start_ms, h.${HOLD.endMs} AS end_ms,
  h.${HOLD.endAction} AS end_action, h.${HOLD.ignoreAllocations} AS ignore_allocations, h.${HOLD.generation} AS generation,
  h.${HOLD.createdAt} AS created_at, h.${HOLD.updatedAt} AS updated_at,
  p.${RP.uuid} AS provider, rc.${RC.name} AS resource_class, ${amount} AS amount`;
/** The amounts as stored: what a hold is on the wire. */
const HOLD_FIELDS = holdFields(`ha.${HOLD_AMOUNT.amount}`);
const HOLD_JOINS = `ext_holds h JOIN ext_hold_amounts ha ON ha.${HOLD_AMOUNT.holdUuid} = h.${HOLD.uuid}
  JOIN resource_providers p ON p.${RP.id} = ha.${HOLD_AMOUNT.resourceProviderId}
  JOIN resource_classes rc ON rc.${RC.id} = ha.${HOLD_AMOUNT.resourceClassId}`;

/** Holds from rows of HOLD_FIELDS (one row per amount), in first-seen order. */
export function holdsOf(result: ResultSet): StoredHold[] {
  const holds = new Map<string, StoredHold & { amounts: Map<Key, number> }>();
  for (const r of result.rows) {
    const uuid = String(r.uuid);
    let h = holds.get(uuid);
    if (!h) {
      h = {
        id: uuid,
        project: String(r.project),
        startMs: Number(r.start_ms),
        endMs: Number(r.end_ms),
        endAction: String(r.end_action) as EndAction,
        ignoreAllocations: Number(r.ignore_allocations) === 1,
        generation: Number(r.generation),
        createdAt: String(r.created_at),
        updatedAt: String(r.updated_at),
        amounts: new Map(),
      };
      holds.set(uuid, h);
    }
    h.amounts.set(keyOf(String(r.provider), String(r.resource_class)), Number(r.amount));
  }
  return [...holds.values()];
}

/** The providers named by uuid, as an SQL set of ids. */
const providerIdsIn = (count: number) => `(SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} IN (${inList(Array(count))}))`;

/** Holds not over at `nowMs` that hold anything on the providers, each amount as `d` counts it (what the rule sees). */
const holdsOnProvidersSql = (d: SetAsideConstraint, count: number) => `SELECT ${holdFields(d.setAside.amount('ha'))} FROM ${HOLD_JOINS}
  WHERE h.${HOLD.endMs} > ? AND h.${HOLD.uuid} IN (SELECT x.${HOLD_AMOUNT.holdUuid} FROM ext_hold_amounts x WHERE x.${HOLD_AMOUNT.resourceProviderId} IN ${providerIdsIn(count)})
  ORDER BY h.${HOLD.uuid}`;

/**
 * The allocations on the providers, each with its end (its lease's expiry
 * while the lease covers the consumer as it is: a rewrite since makes it
 * forever) and the hold it is drawn from (on the same terms).
 */
const allocationsOnProvidersSql = (
  count: number,
  heldOnly = false,
) => `SELECT a.${ALLOC.consumerId} AS consumer, pr.${PROJECT.externalId} AS project,
    p.${RP.uuid} AS provider, rc.${RC.name} AS resource_class, a.${ALLOC.used} AS used,
    ${LEASE_END_SQL} AS ends_at_ms, ${DRAWN_HOLD_SQL} AS hold
  FROM allocations a JOIN consumers c ON c.${CONSUMER.uuid} = a.${ALLOC.consumerId}
  JOIN projects pr ON pr.${PROJECT.id} = c.${CONSUMER.projectId}
  JOIN resource_providers p ON p.${RP.id} = a.${ALLOC.resourceProviderId}
  JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
  ${coverJoins(`a.${ALLOC.consumerId}`)}
  WHERE a.${ALLOC.resourceProviderId} IN ${providerIdsIn(count)}${heldOnly ? ` AND ${isHeld('a', ALLOC.resourceProviderId, ALLOC.resourceClassId)}` : ''}`;

/** Whether some stored hold holds the (provider, class) of the row aliased `alias`. */
const isHeld = (alias: string, provider: string, resourceClass: string) =>
  `EXISTS (SELECT 1 FROM ext_hold_amounts ha WHERE ha.${HOLD_AMOUNT.resourceProviderId} = ${alias}.${provider} AND ha.${HOLD_AMOUNT.resourceClassId} = ${alias}.${resourceClass})`;

/** The capacity of each (provider, class) as the holds' declaration bounds it. */
const capacitiesSql = (
  d: SetAsideConstraint,
  count: number,
  heldOnly = false,
) => `SELECT p.${RP.uuid} AS provider, rc.${RC.name} AS resource_class, ${heldCapacitySql(d, 'i', INV.resourceProviderId, INV.resourceClassId)} AS capacity, p.${RP.generation} AS generation
  FROM inventories i JOIN resource_providers p ON p.${RP.id} = i.${INV.resourceProviderId}
  JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
  WHERE i.${INV.resourceProviderId} IN ${providerIdsIn(count)}${heldOnly ? ` AND ${isHeld('i', INV.resourceProviderId, INV.resourceClassId)}` : ''}`;

const providerGenerationsSql = (count: number) =>
  `SELECT ${RP.uuid} AS provider, ${RP.generation} AS generation FROM resource_providers WHERE ${RP.uuid} IN (${inList(Array(count))})`;

/**
 * The statements that read a World around `providers` at `nowMs`, in one
 * batch (worldOf reads them back), its capacities as `d` bounds them. `heldOnly`: only the (provider, class)
 * pairs some hold holds (a claim's guard: nothing else matters to it, and a
 * cloud without holds reads nothing).
 */
export function worldStatements(d: SetAsideConstraint, providers: readonly string[], nowMs: number, heldOnly = false): InStatement[] {
  const ids = [...providers];
  return [
    { sql: holdsOnProvidersSql(d, ids.length), args: [nowMs, ...ids] },
    { sql: allocationsOnProvidersSql(ids.length, heldOnly), args: ids },
    { sql: capacitiesSql(d, ids.length, heldOnly), args: ids },
    { sql: providerGenerationsSql(ids.length), args: ids },
  ];
}

export interface ReadWorld {
  world: World;
  /** Every hold the statements read (some may be over at the World's instant). */
  holds: StoredHold[];
  /** Each provider's generation as read (absent: no such provider). */
  generations: Map<string, number>;
}

/** The World read by worldStatements' results. */
export function worldOf(results: readonly ResultSet[], nowMs: number): ReadWorld {
  const [holdRows, allocationRows, capacityRows, generationRows] = results;
  // Every hold read (what a guard compares as of the write), and those not over at `nowMs` (what the model sees).
  const stored = holdsOf(holdRows!);
  const holds = stored.filter((h) => h.endMs > nowMs);
  const byId = new Map(holds.map((h) => [h.id, h]));
  const allocations: Allocation[] = allocationRows!.rows.map((r) => {
    const holdId = r.hold === null ? null : String(r.hold);
    const leased = r.ends_at_ms === null ? FOREVER : Number(r.ends_at_ms);
    const from = holdId === null ? undefined : byId.get(holdId);
    return {
      consumer: String(r.consumer),
      project: String(r.project),
      key: keyOf(String(r.provider), String(r.resource_class)),
      amount: Number(r.used),
      // Drawn from a hold that releases them: they end at its end at the latest.
      endsAtMs: from ? drawnEndMs(from, leased) : leased,
      holdId,
    };
  });
  const capacity = new Map<Key, number>(
    capacityRows!.rows.map((r) => [keyOf(String(r.provider), String(r.resource_class)), Number(r.capacity)]),
  );
  const generations = new Map((generationRows?.rows ?? []).map((r) => [String(r.provider), Number(r.generation)]));
  return { world: { nowMs, capacity, allocations, holds }, holds: stored, generations };
}

export async function readWorld(
  d: SetAsideConstraint,
  reader: BatchReader,
  providers: readonly string[],
  nowMs: number,
): Promise<ReadWorld> {
  return worldOf(await reader.readBatch(worldStatements(d, providers, nowMs)), nowMs);
}

/**
 * A hold's amounts not yet written (`amounts` of hold `holdUuid`, by provider
 * uuid and class name) as `d` counts them: the declaration's amount over rows
 * shaped as ext_hold_amounts' (provider, resource_class, amount; a name
 * unknown: no row). So a hold being admitted weighs as the stored ones do.
 */
export function declaredAmountsStatement(d: SetAsideConstraint, holdUuid: string, amounts: ReadonlyMap<Key, number>): InStatement {
  const rows = [...amounts].map(([key, amount]) => {
    const { provider, resourceClass } = splitKey(key);
    return [provider, resourceClass, amount];
  });
  return {
    sql: `SELECT ha.provider AS provider, ha.resource_class AS resource_class, ${d.setAside.amount('ha')} AS amount FROM (
      SELECT json_extract(j.value, '$[0]') AS provider, json_extract(j.value, '$[1]') AS resource_class, ? AS ${HOLD_AMOUNT.holdUuid},
        p.${RP.id} AS ${HOLD_AMOUNT.resourceProviderId}, rc.${RC.id} AS ${HOLD_AMOUNT.resourceClassId}, json_extract(j.value, '$[2]') AS ${HOLD_AMOUNT.amount}
      FROM json_each(?) j JOIN resource_providers p ON p.${RP.uuid} = json_extract(j.value, '$[0]')
      JOIN resource_classes rc ON rc.${RC.name} = json_extract(j.value, '$[1]')) ha`,
    args: [holdUuid, JSON.stringify(rows)],
  };
}

/** The amounts a declaredAmountsStatement read. */
export const declaredAmountsOf = (result: ResultSet): Map<Key, number> =>
  new Map(result.rows.map((r) => [keyOf(String(r.provider), String(r.resource_class)), Number(r.amount)]));

/**
 * The holds not over at `nowMs` on the providers, as one text (uuid and
 * generation of each, in uuid order), in SQL as of a write; holdsFingerprint
 * gives the same from what was read. Equal: no hold was added, edited or
 * removed there since the read.
 */
export const holdsFingerprintSql = (count: number, exceptHold: boolean) => `(SELECT coalesce(group_concat(f, ','), '') FROM (
    SELECT h.${HOLD.uuid} || ':' || h.${HOLD.generation} AS f FROM ext_holds h
    WHERE h.${HOLD.endMs} > ? ${exceptHold ? `AND h.${HOLD.uuid} <> ?` : ''}
      AND h.${HOLD.uuid} IN (SELECT x.${HOLD_AMOUNT.holdUuid} FROM ext_hold_amounts x WHERE x.${HOLD_AMOUNT.resourceProviderId} IN ${providerIdsIn(count)})
    ORDER BY h.${HOLD.uuid}))`;

export const holdsFingerprint = (holds: readonly StoredHold[]): string =>
  holds
    .map((h) => `${h.id}:${h.generation}`)
    .sort()
    .join(',');

/** A guard: the holds on `providers` are still those read (but `exceptHold`, the one being written). */
export function sameHoldsGuard(
  providers: readonly string[],
  nowMs: number,
  read: readonly StoredHold[],
  exceptHold?: string,
): WriteStatement {
  const others = exceptHold === undefined ? read : read.filter((h) => h.id !== exceptHold);
  const args: InValue[] = exceptHold === undefined ? [nowMs, ...providers] : [nowMs, exceptHold, ...providers];
  return guard(`${holdsFingerprintSql(providers.length, exceptHold !== undefined)} = ?`, [...args, holdsFingerprint(others)]);
}

/** A guard: the providers are still at the generations read (no claim, no inventory change since). */
export function sameGenerationsGuard(generations: ReadonlyMap<string, number>): WriteStatement {
  const pairs = [...generations];
  const condition = pairs.map(() => `(SELECT ${RP.generation} FROM resource_providers WHERE ${RP.uuid} = ?) = ?`).join(' AND ');
  return guard(condition || '1', pairs.flat());
}

export interface HoldRow {
  uuid: string;
  projectId: string;
  startMs: number;
  endMs: number;
  endAction: EndAction;
  ignoreAllocations: boolean;
  amounts: ReadonlyMap<Key, number>;
}

/** The statements that write a hold's amounts (by provider uuid and class name). */
function amountStatements(uuid: string, amounts: ReadonlyMap<Key, number>): WriteStatement[] {
  const out: WriteStatement[] = [];
  for (const [key, amount] of amounts) {
    const at = key.indexOf(' ');
    out.push(
      stmt(
        `INSERT INTO ext_hold_amounts (${HOLD_AMOUNT.holdUuid}, ${HOLD_AMOUNT.resourceProviderId}, ${HOLD_AMOUNT.resourceClassId}, ${HOLD_AMOUNT.amount})
          SELECT ?, p.${RP.id}, rc.${RC.id}, ? FROM resource_providers p, resource_classes rc WHERE p.${RP.uuid} = ? AND rc.${RC.name} = ?`,
        [uuid, amount, key.slice(0, at), key.slice(at + 1)],
        { mustChange: true },
      ),
    );
  }
  return out;
}

/** Writes a new hold, provided `guards` (what its admission read) still hold, in one batch. */
export async function insertHold(store: DataStore, hold: HoldRow, now: string, guards: WriteStatement[]): Promise<void> {
  await commitGuarded(store, [...guards, ...holdInsertStatements(hold, now)]);
}

/**
 * The statements that write a new hold and its amounts, for a batch of the
 * caller's (insertHold; a preemption's nomination, written beside its
 * victims' leases, docs/preemption.md). Admission is the caller's.
 */
export function holdInsertStatements(hold: HoldRow, now: string): WriteStatement[] {
  return [
    stmt(
      `INSERT INTO ext_holds (${HOLD.uuid}, ${HOLD.projectId}, ${HOLD.startMs}, ${HOLD.endMs}, ${HOLD.endAction}, ${HOLD.ignoreAllocations}, ${HOLD.generation}, ${HOLD.createdAt}, ${HOLD.updatedAt})
        VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)`,
      [hold.uuid, hold.projectId, hold.startMs, hold.endMs, hold.endAction, hold.ignoreAllocations ? 1 : 0, now, now],
    ),
    ...amountStatements(hold.uuid, hold.amounts),
  ];
}

/** Replaces a hold at `generation` (its window, flags and amounts), bumping it; guarded as insertHold. */
export async function replaceHold(
  store: DataStore,
  hold: HoldRow,
  generation: number,
  now: string,
  guards: WriteStatement[],
): Promise<void> {
  await commitGuarded(store, [
    ...guards,
    stmt(
      `UPDATE ext_holds SET ${HOLD.startMs} = ?, ${HOLD.endMs} = ?, ${HOLD.endAction} = ?, ${HOLD.ignoreAllocations} = ?, ${HOLD.generation} = ${HOLD.generation} + 1, ${HOLD.updatedAt} = ?
        WHERE ${HOLD.uuid} = ? AND ${HOLD.generation} = ?`,
      [hold.startMs, hold.endMs, hold.endAction, hold.ignoreAllocations ? 1 : 0, now, hold.uuid, generation],
      { mustChange: true },
    ),
    stmt(`DELETE FROM ext_hold_amounts WHERE ${HOLD_AMOUNT.holdUuid} = ?`, [hold.uuid]),
    ...amountStatements(hold.uuid, hold.amounts),
  ]);
}

/** Removes a hold (its amounts and draws go by trigger); with `generation`, only at that generation. False when nothing went. */
export async function removeHold(store: DataStore, uuid: string, generation?: number): Promise<boolean> {
  const [deleted] = await commitGuarded(store, [
    generation === undefined
      ? stmt(`DELETE FROM ext_holds WHERE ${HOLD.uuid} = ?`, [uuid])
      : stmt(`DELETE FROM ext_holds WHERE ${HOLD.uuid} = ? AND ${HOLD.generation} = ?`, [uuid, generation]),
  ]);
  return deleted!.rowsAffected > 0;
}

export async function findHold(reader: BatchReader, uuid: string): Promise<StoredHold | null> {
  const [rows] = await reader.readBatch([{ sql: `SELECT ${HOLD_FIELDS} FROM ${HOLD_JOINS} WHERE h.${HOLD.uuid} = ?`, args: [uuid] }]);
  return holdsOf(rows!)[0] ?? null;
}

/** Holds, by project and/or active at an instant, soonest start first. */
export async function listHolds(
  reader: BatchReader,
  filter: { projectId?: string; activeAtMs?: number },
  limit = 1000,
): Promise<StoredHold[]> {
  const where: string[] = [];
  const args: InValue[] = [];
  if (filter.projectId !== undefined) {
    where.push(`h.${HOLD.projectId} = ?`);
    args.push(filter.projectId);
  }
  if (filter.activeAtMs !== undefined) {
    where.push(`h.${HOLD.startMs} <= ? AND ? < h.${HOLD.endMs}`);
    args.push(filter.activeAtMs, filter.activeAtMs);
  }
  const [rows] = await reader.readBatch([
    {
      sql: `SELECT ${HOLD_FIELDS} FROM ${HOLD_JOINS} WHERE h.${HOLD.uuid} IN (SELECT h.${HOLD.uuid} FROM ext_holds h ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY h.${HOLD.startMs}, h.${HOLD.uuid} LIMIT ?) ORDER BY h.${HOLD.startMs}, h.${HOLD.uuid}`,
      args: [...args, limit],
    },
  ]);
  return holdsOf(rows!);
}

/** What a hold's amounts name that does not exist: unknown providers, unknown classes, and pairs without inventory. */
export async function unknownNames(
  d: SetAsideConstraint,
  reader: BatchReader,
  amounts: ReadonlyMap<Key, number>,
): Promise<{ providers: string[]; classes: string[]; withoutInventory: Key[] }> {
  const keys = [...amounts.keys()];
  const providers = [...new Set(keys.map((k) => k.slice(0, k.indexOf(' '))))];
  const classes = [...new Set(keys.map((k) => k.slice(k.indexOf(' ') + 1)))];
  const [p, c, i] = await reader.readBatch([
    { sql: `SELECT ${RP.uuid} AS uuid FROM resource_providers WHERE ${RP.uuid} IN (${inList(providers)})`, args: providers },
    { sql: `SELECT ${RC.name} AS name FROM resource_classes WHERE ${RC.name} IN (${inList(classes)})`, args: classes },
    { sql: capacitiesSql(d, providers.length), args: providers },
  ]);
  const knownProviders = new Set(p!.rows.map((r) => String(r.uuid)));
  const knownClasses = new Set(c!.rows.map((r) => String(r.name)));
  const inventories = new Set(i!.rows.map((r) => keyOf(String(r.provider), String(r.resource_class))));
  return {
    providers: providers.filter((x) => !knownProviders.has(x)),
    classes: classes.filter((x) => !knownClasses.has(x)),
    withoutInventory: keys.filter((k) => !inventories.has(k)),
  };
}

/** Whether placement knows the project (some consumer of it was ever written). */
export async function projectKnown(reader: BatchReader, projectId: string): Promise<boolean> {
  const [rows] = await reader.readBatch([{ sql: `SELECT 1 FROM projects WHERE ${PROJECT.externalId} = ?`, args: [projectId] }]);
  return rows!.rows.length > 0;
}
