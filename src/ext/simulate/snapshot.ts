// What a simulation or a defragmentation plan starts from: the whole cloud
// read in ONE read batch (one snapshot): providers, inventories, every
// allocation by consumer, the consumers' owners and generations, the
// excluding taints, the leases, and every class, trait and aggregate name.
// Read only: nothing here writes, so every generation stays as it was.
import type { InStatement, ResultSet } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { AGG, ALLOC, CONSUMER, CONSUMER_TYPE, INV, LEASE, PROJECT, RC, RP, TAINT, TRAIT, USER } from '../../db/columns.js';
import { inventoryColumns, providerColumns } from '../../placement/candidates/cloud-model.js';
import { EXCLUDING_EFFECTS } from '../taints/filter.js';
import type { World, WorldConsumer, WorldInventory, WorldProvider } from './world.js';

const STATEMENTS: InStatement[] = [
  {
    sql: `SELECT ${providerColumns}, p.${RP.name} AS name, p.${RP.generation} AS generation FROM resource_providers p ORDER BY p.${RP.id}`,
    args: [],
  },
  {
    sql: `SELECT ${inventoryColumns} FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
      ORDER BY i.${INV.resourceProviderId}, i.${INV.resourceClassId}`,
    args: [],
  },
  {
    sql: `SELECT a.${ALLOC.consumerId} AS consumer, a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.resourceClassId} AS cls, a.${ALLOC.used} AS used
      FROM allocations a ORDER BY a.${ALLOC.id}`,
    args: [],
  },
  {
    sql: `SELECT c.${CONSUMER.uuid} AS uuid, c.${CONSUMER.generation} AS generation, pr.${PROJECT.externalId} AS project, u.${USER.externalId} AS user,
        ct.${CONSUMER_TYPE.name} AS type
      FROM consumers c JOIN projects pr ON pr.${PROJECT.id} = c.${CONSUMER.projectId} JOIN users u ON u.${USER.id} = c.${CONSUMER.userId}
      LEFT JOIN consumer_types ct ON ct.${CONSUMER_TYPE.id} = c.${CONSUMER.consumerTypeId}`,
    args: [],
  },
  {
    sql: `SELECT ${TAINT.resourceProviderId} AS rp, ${TAINT.key} AS key FROM ext_provider_taints
      WHERE ${TAINT.effect} IN (${EXCLUDING_EFFECTS.map((e) => `'${e}'`).join(', ')})`,
    args: [],
  },
  { sql: `SELECT ${LEASE.consumerUuid} AS uuid FROM ext_leases`, args: [] },
  { sql: `SELECT ${RC.id} AS id, ${RC.name} AS name FROM resource_classes`, args: [] },
  { sql: `SELECT ${TRAIT.id} AS id, ${TRAIT.name} AS name FROM traits`, args: [] },
  { sql: `SELECT ${AGG.id} AS id, ${AGG.uuid} AS uuid FROM placement_aggregates`, args: [] },
];

const num = (v: unknown): number => Number(v);

/** The cloud as it is now, as a World the simulation may change (a copy: the database is never written). */
export async function readWorld(reader: BatchReader): Promise<World> {
  const [providers, inventories, allocations, consumers, taints, leases, classes, traits, aggregates] = (await reader.readBatch(
    STATEMENTS,
  )) as ResultSet[];
  const byId = new Map<number, WorldProvider>();
  for (const r of providers!.rows) {
    const provider: WorldProvider = {
      id: num(r.id),
      uuid: String(r.uuid),
      name: String(r.name),
      generation: num(r.generation),
      parentId: r.parent_provider_id === null ? null : num(r.parent_provider_id),
      rootId: num(r.root_provider_id),
      traits: r.traits === null ? [] : String(r.traits).split('\u001f'),
      aggregates: r.aggs === null ? [] : String(r.aggs).split(',').map(Number),
      inventories: [],
    };
    byId.set(provider.id, provider);
  }
  for (const r of inventories!.rows) {
    const inventory: WorldInventory = {
      classId: num(r.cls),
      className: String(r.name),
      total: num(r.total),
      reserved: num(r.reserved),
      minUnit: num(r.min_unit),
      maxUnit: num(r.max_unit),
      stepSize: num(r.step_size),
      allocationRatio: num(r.ratio),
    };
    byId.get(num(r.rp))?.inventories.push(inventory);
  }
  const byConsumer = new Map<string, WorldConsumer>();
  for (const r of consumers!.rows) {
    byConsumer.set(String(r.uuid), {
      uuid: String(r.uuid),
      generation: num(r.generation),
      projectId: String(r.project),
      userId: String(r.user),
      consumerType: r.type === null ? null : String(r.type),
      allocations: [],
      leased: false,
    });
  }
  for (const r of allocations!.rows) {
    byConsumer.get(String(r.consumer))?.allocations.push({ providerId: num(r.rp), classId: num(r.cls), used: num(r.used) });
  }
  for (const r of leases!.rows) {
    const consumer = byConsumer.get(String(r.uuid));
    if (consumer) consumer.leased = true;
  }
  const taintKeys = new Map<number, string[]>();
  for (const r of taints!.rows) {
    const keys = taintKeys.get(num(r.rp));
    if (keys) keys.push(String(r.key));
    else taintKeys.set(num(r.rp), [String(r.key)]);
  }
  return {
    providers: byId,
    consumers: byConsumer,
    taints: taintKeys,
    classIdByName: new Map(classes!.rows.map((r) => [String(r.name), num(r.id)])),
    traitIdByName: new Map(traits!.rows.map((r) => [String(r.name), num(r.id)])),
    aggregateIdByUuid: new Map(aggregates!.rows.map((r) => [String(r.uuid), num(r.id)])),
  };
}
