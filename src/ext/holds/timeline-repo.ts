// What the dashboard's time line of holds reads (docs/holds.md): every hold
// not over, one row per (provider, class) it holds, with the provider's name,
// the aggregates of the provider and of its root (a compute node's children
// sit in its host aggregate), and what claims drawn from the hold use there
// now. One statement, one round trip. No HTTP here.
import type { BatchReader } from '../../db/client.js';
import { AGG, ALLOC, CONSUMER, HOLD, HOLD_AMOUNT, HOLD_DRAW, RC, RP, RP_AGG } from '../../db/columns.js';

export interface TimelineRow {
  hold: string;
  project: string;
  startMs: number;
  endMs: number;
  endAction: string;
  provider: string;
  providerName: string;
  /** Aggregate uuids of the provider and its root, sorted. */
  aggregates: string[];
  resourceClass: string;
  held: number;
  drawn: number;
}

// A draw counts while it is the consumer's as written (same generation), as the rule and the gauges read it.
const TIMELINE = `SELECT h.${HOLD.uuid} AS hold, h.${HOLD.projectId} AS project, h.${HOLD.startMs} AS start_ms, h.${HOLD.endMs} AS end_ms,
    h.${HOLD.endAction} AS end_action, p.${RP.uuid} AS provider, p.${RP.name} AS provider_name, rc.${RC.name} AS resource_class,
    ha.${HOLD_AMOUNT.amount} AS held,
    (SELECT COALESCE(SUM(a.${ALLOC.used}), 0) FROM ext_hold_draws d
      JOIN consumers c ON c.${CONSUMER.uuid} = d.${HOLD_DRAW.consumerUuid} AND c.${CONSUMER.generation} = d.${HOLD_DRAW.consumerGeneration}
      JOIN allocations a ON a.${ALLOC.consumerId} = d.${HOLD_DRAW.consumerUuid}
      WHERE d.${HOLD_DRAW.holdUuid} = h.${HOLD.uuid} AND a.${ALLOC.resourceProviderId} = ha.${HOLD_AMOUNT.resourceProviderId}
        AND a.${ALLOC.resourceClassId} = ha.${HOLD_AMOUNT.resourceClassId}) AS drawn,
    (SELECT group_concat(uuid) FROM (SELECT DISTINCT ag.${AGG.uuid} AS uuid FROM resource_provider_aggregates ra
      JOIN placement_aggregates ag ON ag.${AGG.id} = ra.${RP_AGG.aggregateId}
      WHERE ra.${RP_AGG.resourceProviderId} IN (p.${RP.id}, p.${RP.rootProviderId}) ORDER BY 1)) AS aggregates
  FROM ext_hold_amounts ha JOIN ext_holds h ON h.${HOLD.uuid} = ha.${HOLD_AMOUNT.holdUuid}
  JOIN resource_providers p ON p.${RP.id} = ha.${HOLD_AMOUNT.resourceProviderId}
  JOIN resource_classes rc ON rc.${RC.id} = ha.${HOLD_AMOUNT.resourceClassId}
  WHERE h.${HOLD.endMs} > ? ORDER BY h.${HOLD.startMs}, h.${HOLD.uuid}, p.${RP.uuid}, rc.${RC.name}
  LIMIT ?`;

/** Rows of the holds whose window ends after `fromMs`, soonest start first; at most `limit` rows. */
export async function readTimeline(reader: BatchReader, fromMs: number, limit: number): Promise<TimelineRow[]> {
  const [result] = await reader.readBatch([{ sql: TIMELINE, args: [fromMs, limit] }]);
  return result!.rows.map((r) => ({
    hold: String(r.hold),
    project: String(r.project),
    startMs: Number(r.start_ms),
    endMs: Number(r.end_ms),
    endAction: String(r.end_action),
    provider: String(r.provider),
    providerName: String(r.provider_name),
    aggregates: r.aggregates === null ? [] : String(r.aggregates).split(','),
    resourceClass: String(r.resource_class),
    held: Number(r.held),
    drawn: Number(r.drawn),
  }));
}
