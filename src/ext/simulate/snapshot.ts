// What a simulation or a defragmentation plan starts from: the whole cloud
// read in ONE read batch (one snapshot; the class names just before it):
// providers, inventories, every allocation by consumer, the consumers'
// owners and generations, the excluding taints, the leases, every class,
// trait and aggregate name, the holds with the leases and draws their rule
// reads, and the installed read hooks' own statements; then what the app's
// holds declaration makes of the holds (declared.ts).
// Read only: nothing here writes, so every generation stays as it was.
import type { InStatement, ResultSet } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import type { CandidateReadHook } from '../../placement/candidates/index.js';
import { AGG, ALLOC, CONSUMER, CONSUMER_TYPE, HOLD, INV, LEASE, PROJECT, RC, RP, TAINT, TRAIT, USER } from '../../db/columns.js';
import { inventoryColumns, providerColumns } from '../../placement/candidates/cloud-model.js';
import { type Columns, columns, packedArray, type PackedRow } from '../../db/rows.js';
import { coverJoins, DRAWN_HOLD_SQL, HELD, heldOf, heldSql, LEASE_END_SQL } from '../holds/repo.js';
import { EXCLUDING_EFFECTS } from '../taints/filter.js';
import { isHeldCapacityHook } from '../holds/candidates.js';
import { declaredHoldsOf } from './declared.js';
import type { World, WorldConsumer, WorldHold, WorldInventory, WorldProvider } from './world.js';

const PROVIDER = columns(['id', 'uuid', 'parent_provider_id', 'root_provider_id', 'traits', 'aggs', 'name', 'generation']);
const INVENTORY = columns(['rp', 'cls', 'name', 'total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'ratio']);
const ALLOCATION = columns(['consumer', 'rp', 'cls', 'used']);
const CONSUMER_ROW = columns(['uuid', 'generation', 'project', 'user', 'type', 'lease_ends', 'drawn_from']);

/** Each statement packs its rows into one JSON value (10,000 providers read as one string, not 10,000 row objects). */
const packed = (cols: Columns<string>, from: string): InStatement => ({ sql: `SELECT ${packedArray(cols)} FROM (${from})`, args: [] });

const STATEMENTS: InStatement[] = [
  packed(
    PROVIDER,
    `SELECT ${providerColumns}, p.${RP.name} AS name, p.${RP.generation} AS generation FROM resource_providers p ORDER BY p.${RP.id}`,
  ),
  packed(
    INVENTORY,
    `SELECT ${inventoryColumns} FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
      ORDER BY i.${INV.resourceProviderId}, i.${INV.resourceClassId}`,
  ),
  packed(
    ALLOCATION,
    `SELECT a.${ALLOC.consumerId} AS consumer, a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.resourceClassId} AS cls, a.${ALLOC.used} AS used
      FROM allocations a ORDER BY a.${ALLOC.id}`,
  ),
  packed(
    CONSUMER_ROW,
    `SELECT c.${CONSUMER.uuid} AS uuid, c.${CONSUMER.generation} AS generation, pr.${PROJECT.externalId} AS project, u.${USER.externalId} AS user,
        ct.${CONSUMER_TYPE.name} AS type, ${LEASE_END_SQL} AS lease_ends, ${DRAWN_HOLD_SQL} AS drawn_from
      FROM consumers c JOIN projects pr ON pr.${PROJECT.id} = c.${CONSUMER.projectId} JOIN users u ON u.${USER.id} = c.${CONSUMER.userId}
      LEFT JOIN consumer_types ct ON ct.${CONSUMER_TYPE.id} = c.${CONSUMER.consumerTypeId}
      ${coverJoins(`c.${CONSUMER.uuid}`)}`,
  ),
  {
    sql: `SELECT ${TAINT.resourceProviderId} AS rp, ${TAINT.key} AS key FROM ext_provider_taints
      WHERE ${TAINT.effect} IN (${EXCLUDING_EFFECTS.map((e) => `'${e}'`).join(', ')})`,
    args: [],
  },
  { sql: `SELECT ${LEASE.consumerUuid} AS uuid FROM ext_leases`, args: [] },
  { sql: `SELECT ${RC.id} AS id, ${RC.name} AS name FROM resource_classes`, args: [] },
  { sql: `SELECT ${TRAIT.id} AS id, ${TRAIT.name} AS name FROM traits`, args: [] },
  { sql: `SELECT ${AGG.id} AS id, ${AGG.uuid} AS uuid FROM placement_aggregates`, args: [] },
  // What holds' rule reads (ext/holds/repo.ts): every stored hold with its amounts (the leases and draws that cover their consumers as they are: the consumers' row).
  packed(HELD, `${heldSql()} ORDER BY h.${HOLD.uuid}`),
  { sql: `SELECT ${PROJECT.externalId} AS project FROM projects`, args: [] },
];

const rowsOf = (result: ResultSet | undefined): PackedRow[] => JSON.parse(String(result?.rows[0]?.[0] ?? '[]')) as PackedRow[];

/**
 * The cloud as it is now, as a World the simulation may change (a copy: the
 * database is never written), with what the app's installed read hooks read
 * (their own statements, for every class) in the same snapshot.
 */
export async function readWorld(reader: BatchReader, hooks: readonly CandidateReadHook[]): Promise<World> {
  // The class names first (a hook's statement takes them): a small read, before the snapshot.
  const [names] = await reader.readBatch([{ sql: `SELECT ${RC.name} AS name FROM resource_classes`, args: [] }]);
  const classNames = names!.rows.map((r) => String(r.name));
  const results = await reader.readBatch([...STATEMENTS, ...hooks.map((hook) => hook.statement(classNames))]);
  const [providers, inventories, allocations, consumers, taints, leases, classes, traits, aggregates, holdRows, projects] =
    results as ResultSet[];
  const hookResults = new Map(hooks.map((hook, i) => [hook, results[STATEMENTS.length + i]]));
  const byId = new Map<number, WorldProvider>();
  const p = PROVIDER.at;
  for (const r of rowsOf(providers)) {
    const provider: WorldProvider = {
      id: Number(r[p.id]),
      uuid: String(r[p.uuid]),
      name: String(r[p.name]),
      generation: Number(r[p.generation]),
      parentId: r[p.parent_provider_id] === null ? null : Number(r[p.parent_provider_id]),
      rootId: Number(r[p.root_provider_id]),
      traits: r[p.traits] === null ? [] : String(r[p.traits]).split('\u001f'),
      aggregates: r[p.aggs] === null ? [] : String(r[p.aggs]).split(',').map(Number),
      inventories: [],
    };
    byId.set(provider.id, provider);
  }
  const i = INVENTORY.at;
  for (const r of rowsOf(inventories)) {
    const inventory: WorldInventory = {
      classId: Number(r[i.cls]),
      className: String(r[i.name]),
      total: Number(r[i.total]),
      reserved: Number(r[i.reserved]),
      minUnit: Number(r[i.min_unit]),
      maxUnit: Number(r[i.max_unit]),
      stepSize: Number(r[i.step_size]),
      allocationRatio: Number(r[i.ratio]),
    };
    byId.get(Number(r[i.rp]))?.inventories.push(inventory);
  }
  const byConsumer = new Map<string, WorldConsumer>();
  const c = CONSUMER_ROW.at;
  for (const r of rowsOf(consumers)) {
    const uuid = String(r[c.uuid]);
    byConsumer.set(uuid, {
      uuid,
      generation: Number(r[c.generation]),
      projectId: String(r[c.project]),
      userId: String(r[c.user]),
      consumerType: r[c.type] === null ? null : String(r[c.type]),
      allocations: [],
      leased: false,
      leaseEndsAtMs: r[c.lease_ends] === null ? null : Number(r[c.lease_ends]),
      drawnFrom: r[c.drawn_from] === null ? null : String(r[c.drawn_from]),
    });
  }
  const a = ALLOCATION.at;
  for (const r of rowsOf(allocations)) {
    byConsumer
      .get(String(r[a.consumer]))
      ?.allocations.push({ providerId: Number(r[a.rp]), classId: Number(r[a.cls]), used: Number(r[a.used]) });
  }
  for (const r of leases!.rows) {
    const consumer = byConsumer.get(String(r.uuid));
    if (consumer) consumer.leased = true;
  }
  const holds: WorldHold[] = heldOf(rowsOf(holdRows));
  const taintKeys = new Map<number, string[]>();
  for (const r of taints!.rows) {
    const keys = taintKeys.get(Number(r.rp));
    if (keys) keys.push(String(r.key));
    else taintKeys.set(Number(r.rp), [String(r.key)]);
  }
  const world: World = {
    providers: byId,
    consumers: byConsumer,
    taints: taintKeys,
    classIdByName: new Map(classes!.rows.map((r) => [String(r.name), Number(r.id)])),
    traitIdByName: new Map(traits!.rows.map((r) => [String(r.name), Number(r.id)])),
    aggregateIdByUuid: new Map(aggregates!.rows.map((r) => [String(r.uuid), Number(r.id)])),
    holds,
    projects: new Set(projects!.rows.map((r) => String(r.project))),
    hookResults,
  };
  // How the app's holds declaration counts the holds (a second read, over the copy just read: it is what later changes are counted over too).
  const held = hooks.find(isHeldCapacityHook);
  if (held) world.heldDeclared = await declaredHoldsOf(reader, held.declaration, world);
  return world;
}
