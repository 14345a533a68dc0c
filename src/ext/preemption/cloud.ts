// What the preemption search reads, in ONE read batch (one snapshot): the
// provider trees with their inventories and usage (the candidates engine's
// model, built whole: CloudModel.of), every class, trait and aggregate name,
// and the allocations of the consumers a preemptor of priority P may evict
// (an effective priority below P, not already a victim of a preemption).
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { AGG, ALLOC, INV, PREEMPTION_VICTIM, RC, RP, TRAIT } from '../../db/columns.js';
import { CloudModel, inventoryColumns, type ProviderSpec, providerColumns } from '../../placement/candidates/cloud-model.js';
import type { Lookups, Usage } from '../../placement/candidates/research.js';
import { type Columns, columns, num, packedArray, type PackedRow } from '../../placement/candidates/sql.js';
import { capacityOf } from '../../placement/capacity.js';
import { EFFECTIVE_PRIORITIES_SQL } from './priorities.js';
import { resourceKey } from './victims.js';

const PROVIDER = columns(['id', 'uuid', 'parent_provider_id', 'root_provider_id', 'traits', 'aggs']);
const INVENTORY = columns(['rp', 'cls', 'name', 'total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'ratio']);
const USAGE = columns(['rp', 'cls', 'used']);
const ELIGIBLE = columns(['consumer', 'project', 'priority', 'generation', 'rp', 'cls', 'used']);

const packed = (cols: Columns<string>, from: string, args: InValue[] = []): InStatement => ({
  sql: `SELECT ${packedArray(cols)} FROM (${from})`,
  args,
});

function statements(priority: number, nowMs: number): InStatement[] {
  return [
    packed(PROVIDER, `SELECT ${providerColumns} FROM resource_providers p ORDER BY p.${RP.id}`),
    packed(
      INVENTORY,
      `SELECT ${inventoryColumns} FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
        ORDER BY i.${INV.resourceProviderId}, i.${INV.resourceClassId}`,
    ),
    packed(
      USAGE,
      `SELECT a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.resourceClassId} AS cls, SUM(a.${ALLOC.used}) AS used FROM allocations a
        GROUP BY a.${ALLOC.resourceProviderId}, a.${ALLOC.resourceClassId}`,
    ),
    packed(
      ELIGIBLE,
      `SELECT e.uuid AS consumer, e.project AS project, e.priority AS priority, e.generation AS generation,
          a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.resourceClassId} AS cls, a.${ALLOC.used} AS used
        FROM (${EFFECTIVE_PRIORITIES_SQL}) e JOIN allocations a ON a.${ALLOC.consumerId} = e.uuid
        WHERE e.priority < ? AND NOT EXISTS (SELECT 1 FROM ext_preemption_victims v WHERE v.${PREEMPTION_VICTIM.consumerUuid} = e.uuid)
        ORDER BY e.uuid, a.${ALLOC.id}`,
      [priority],
    ),
    // Committed elsewhere: victims of earlier preemptions (going) and holds not yet over (nominations among them).
    packed(
      USAGE,
      `SELECT a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.resourceClassId} AS cls, -SUM(a.${ALLOC.used}) AS used FROM allocations a
        JOIN ext_preemption_victims v ON v.${PREEMPTION_VICTIM.consumerUuid} = a.${ALLOC.consumerId}
        GROUP BY a.${ALLOC.resourceProviderId}, a.${ALLOC.resourceClassId}
      UNION ALL
      SELECT x.resource_provider_id AS rp, x.resource_class_id AS cls, SUM(x.amount) AS used FROM ext_hold_amounts x
        JOIN ext_holds h ON h.uuid = x.hold_uuid WHERE h.end_ms > ? GROUP BY x.resource_provider_id, x.resource_class_id`,
      [nowMs],
    ),
    { sql: `SELECT ${RC.id} AS id, ${RC.name} AS name FROM resource_classes`, args: [] },
    { sql: `SELECT ${TRAIT.id} AS id, ${TRAIT.name} AS name FROM traits`, args: [] },
    { sql: `SELECT ${AGG.id} AS id, ${AGG.uuid} AS uuid FROM placement_aggregates`, args: [] },
  ];
}

/** A consumer the preemptor may evict, with everything it holds. */
export interface EvictableConsumer {
  uuid: string;
  project: string;
  priority: number;
  generation: number;
  allocations: { providerId: number; classId: number; used: number }[];
}

export interface PreemptionCloud {
  model: CloudModel;
  lookups: Lookups;
  /** provider id -> class id -> units allocated now (what the summaries show). */
  usage: Usage;
  /** What the search counts as taken: usage less earlier victims' (going), plus holds' amounts (nominations among them). */
  taken: Usage;
  evictable: EvictableConsumer[];
  classNameById: Map<number, string>;
  uuidById: Map<number, string>;
  rootById: Map<number, number>;
  /** "providerId:classId" -> capacity ((total - reserved) * allocation ratio). */
  capacity: Map<string, number>;
}

const rowsOf = (result: ResultSet | undefined): PackedRow[] => JSON.parse(String(result?.rows[0]?.[0] ?? '[]')) as PackedRow[];

export async function readPreemptionCloud(
  reader: BatchReader,
  priority: number,
  nowMs: number,
  _options?: unknown,
): Promise<PreemptionCloud> {
  const [providers, inventories, usageRows, eligible, committed, classes, traits, aggregates] = (await reader.readBatch(
    statements(priority, nowMs),
  )) as ResultSet[];
  const specs = new Map<number, ProviderSpec & { inventories: ProviderSpec['inventories'][number][] }>();
  const p = PROVIDER.at;
  for (const r of rowsOf(providers)) {
    specs.set(num(r[p.id]), {
      id: num(r[p.id]),
      uuid: String(r[p.uuid]),
      parentId: r[p.parent_provider_id] === null ? null : num(r[p.parent_provider_id]),
      rootId: num(r[p.root_provider_id]),
      traits: r[p.traits] === null ? [] : String(r[p.traits]).split('\u001f'),
      aggregates: r[p.aggs] === null ? [] : String(r[p.aggs]).split(',').map(Number),
      inventories: [],
    });
  }
  const i = INVENTORY.at;
  for (const r of rowsOf(inventories)) {
    specs.get(num(r[i.rp]))?.inventories.push({
      classId: num(r[i.cls]),
      className: String(r[i.name]),
      total: num(r[i.total]),
      reserved: num(r[i.reserved]),
      minUnit: num(r[i.min_unit]),
      maxUnit: num(r[i.max_unit]),
      stepSize: num(r[i.step_size]),
      allocationRatio: num(r[i.ratio]),
    });
  }
  const usage: Usage = new Map();
  const u = USAGE.at;
  for (const r of rowsOf(usageRows)) {
    const rp = num(r[u.rp]);
    let perClass = usage.get(rp);
    if (!perClass) usage.set(rp, (perClass = new Map()));
    perClass.set(num(r[u.cls]), num(r[u.used]));
  }
  // What the search counts as taken: usage, less the victims already going, plus what holds hold.
  const taken: Usage = new Map([...usage].map(([rp, perClass]) => [rp, new Map(perClass)]));
  for (const r of rowsOf(committed)) addTo(taken, num(r[u.rp]), num(r[u.cls]), num(r[u.used]));
  const byConsumer = new Map<string, EvictableConsumer>();
  const e = ELIGIBLE.at;
  for (const r of rowsOf(eligible)) {
    const uuid = String(r[e.consumer]);
    let consumer = byConsumer.get(uuid);
    if (!consumer) {
      consumer = { uuid, project: String(r[e.project]), priority: num(r[e.priority]), generation: num(r[e.generation]), allocations: [] };
      byConsumer.set(uuid, consumer);
    }
    consumer.allocations.push({ providerId: num(r[e.rp]), classId: num(r[e.cls]), used: num(r[e.used]) });
  }
  const list = [...specs.values()];
  return {
    model: CloudModel.of(list),
    lookups: {
      classIdByName: new Map(classes!.rows.map((r) => [String(r.name), Number(r.id)])),
      traitIdByName: new Map(traits!.rows.map((r) => [String(r.name), Number(r.id)])),
      aggregateIdByUuid: new Map(aggregates!.rows.map((r) => [String(r.uuid), Number(r.id)])),
      rootIdByProviderUuid: new Map(list.map((s) => [s.uuid, s.rootId])),
    },
    usage,
    taken,
    evictable: [...byConsumer.values()],
    classNameById: new Map(classes!.rows.map((r) => [Number(r.id), String(r.name)])),
    uuidById: new Map(list.map((s) => [s.id, s.uuid])),
    rootById: new Map(list.map((s) => [s.id, s.rootId])),
    capacity: new Map(list.flatMap((s) => s.inventories.map((inv): [string, number] => [resourceKey(s.id, inv.classId), capacityOf(inv)]))),
  };
}

/** Adds `units` (negative: takes them out) to what `usage` holds for the provider and class. */
export function addTo(usage: Usage, providerId: number, classId: number, units: number): void {
  let perClass = usage.get(providerId);
  if (!perClass) usage.set(providerId, (perClass = new Map()));
  perClass.set(classId, (perClass.get(classId) ?? 0) + units);
}
