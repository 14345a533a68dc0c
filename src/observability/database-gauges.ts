// The gauges a scrape reads from the database, so every process and every
// Worker isolate reports the same, complete values: capacity per provider and
// resource class under openstack-exporter's names and labels (its placement
// exporter: hostname = the provider's name, resourcetype = the resource
// class; _total, _reserved and _allocation_ratio from the inventory, _usage
// the sum of the allocations against it, as GET /resource_providers/{uuid}/usages),
// the accelerator requests by state and the event outbox. One read batch, one
// round trip.
import type { InStatement, ResultSet } from '@libsql/client';
import { ArqState } from '../cyborg/arq-state.js';
import type { BatchReader } from '../db/client.js';
import { PAYLOADS } from '../jobs/messages.js';
import type { FamilySnapshot, SeriesSnapshot } from './registry.js';
import { ALLOC, ARQ, INV, OUTBOX, RC, RP } from '../db/columns.js';

const CAPACITY = `SELECT p.${RP.name} AS hostname, rc.${RC.name} AS resourcetype, i.${INV.total}, i.${INV.reserved}, i.${INV.allocationRatio},
    COALESCE((SELECT SUM(a.${ALLOC.used}) FROM allocations a
      WHERE a.${ALLOC.resourceProviderId} = i.${INV.resourceProviderId} AND a.${ALLOC.resourceClassId} = i.${INV.resourceClassId}), 0) AS used
  FROM inventories i
  JOIN resource_providers p ON p.${RP.id} = i.${INV.resourceProviderId}
  JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
  ORDER BY p.${RP.name}, rc.${RC.name}`;
const ARQ_COUNTS = `SELECT ${ARQ.state}, count(*) AS n FROM accelerator_requests GROUP BY ${ARQ.state} ORDER BY ${ARQ.state}`;
const OUTBOX_COUNTS = `SELECT ${OUTBOX.topic}, ${OUTBOX.state}, count(*) AS n FROM cyborg_outbox WHERE ${OUTBOX.state} IN ('pending', 'dead') GROUP BY ${OUTBOX.topic}, ${OUTBOX.state} ORDER BY ${OUTBOX.topic}, ${OUTBOX.state}`;

/** Every ARQ state is shown, 0 included, so a panel has a series to draw before the first ARQ. */
const ARQ_STATES: string[] = Object.values(ArqState);
const OUTBOX_TOPICS = Object.keys(PAYLOADS);

const gauge = (name: string, help: string, labelNames: string[], series: SeriesSnapshot[]): FamilySnapshot => ({
  name,
  help,
  type: 'gauge',
  labelNames,
  series,
});

function capacityFamilies(rows: ResultSet): FamilySnapshot[] {
  const columns = [
    ['openstack_placement_resource_total', 'Inventory total per provider and resource class (openstack-exporter).', 'total'],
    ['openstack_placement_resource_reserved', 'Inventory reserved per provider and resource class (openstack-exporter).', 'reserved'],
    [
      'openstack_placement_resource_allocation_ratio',
      'Inventory allocation ratio per provider and resource class (openstack-exporter).',
      'allocation_ratio',
    ],
    ['openstack_placement_resource_usage', 'Sum of the allocations per provider and resource class (openstack-exporter).', 'used'],
  ] as const;
  return columns.map(([name, help, column]) =>
    gauge(
      name,
      help,
      ['hostname', 'resourcetype'],
      rows.rows.map((r) => ({ labels: [String(r.hostname), String(r.resourcetype)], value: Number(r[column]) })),
    ),
  );
}

/** An extension's gauges read from the database (Extension.gauges): its statements join the scrape's one read batch. */
export interface GaugeRead {
  statements(nowMs: number): InStatement[];
  /** Its families from its statements' results, in order. */
  families(results: ResultSet[]): FamilySnapshot[];
}

export interface DatabaseGaugeOptions {
  /** openstack_placement_resource_* (PLACEMENT_METRICS_CAPACITY): four series per inventory, off for clouds too large to scrape. */
  capacity: boolean;
  /** The installed extensions' gauges, read at `nowMs`. */
  extensions?: readonly GaugeRead[];
  nowMs?: number;
}

export async function readDatabaseGauges(reader: BatchReader, options: DatabaseGaugeOptions): Promise<FamilySnapshot[]> {
  const statements: InStatement[] = [ARQ_COUNTS, OUTBOX_COUNTS];
  if (options.capacity) statements.push(CAPACITY);
  const own = statements.length;
  const nowMs = options.nowMs ?? Date.now();
  const parts = (options.extensions ?? []).map((g) => ({ read: g, statements: g.statements(nowMs) }));
  for (const part of parts) statements.push(...part.statements);
  const results = await reader.readBatch(statements);
  const [arqs, outbox] = results;
  const capacity = options.capacity ? results[2] : undefined;
  let at = own;
  const extensionFamilies = parts.flatMap(({ read, statements: mine }) => {
    const slice = results.slice(at, at + mine.length);
    at += mine.length;
    return read.families(slice);
  });
  const arqCount = new Map(arqs!.rows.map((r) => [String(r.state), Number(r.n)]));
  const states = [...new Set([...ARQ_STATES, ...arqCount.keys()])];
  const outboxCount = new Map(outbox!.rows.map((r) => [`${String(r.topic)} ${String(r.state)}`, Number(r.n)]));
  const topics = [...new Set([...OUTBOX_TOPICS, ...outbox!.rows.map((r) => String(r.topic))])];
  const byTopic = (state: string): SeriesSnapshot[] =>
    topics.map((topic) => ({ labels: [topic], value: outboxCount.get(`${topic} ${state}`) ?? 0 }));
  return [
    gauge(
      'cyborg_accelerator_requests',
      'Accelerator requests (ARQs) by state.',
      ['state'],
      states.map((state) => ({ labels: [state], value: arqCount.get(state) ?? 0 })),
    ),
    gauge(
      'placement_outbox_depth',
      'Outbox messages waiting for delivery (bind jobs, Nova events), by topic.',
      ['topic'],
      byTopic('pending'),
    ),
    gauge(
      'placement_outbox_dead_letters',
      'Outbox messages given up on after their last attempt (GET /accelerator/v2/outbox?state=dead), by topic.',
      ['topic'],
      byTopic('dead'),
    ),
    ...(capacity ? capacityFamilies(capacity) : []),
    ...extensionFamilies,
  ];
}
