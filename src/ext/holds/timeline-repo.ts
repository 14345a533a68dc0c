// What the dashboard's time line of holds reads (docs/holds.md): every hold
// not over, one row per (provider, class) it holds, with the provider's name,
// the aggregates of the provider and of its root (a compute node's children
// sit in its host aggregate), and what claims drawn from the hold use there
// now, both as the holds' declaration counts them. One statement, one round trip. No HTTP here.
import type { BatchReader } from '../../db/client.js';
import { AGG, HOLD, HOLD_AMOUNT, RC, RP, RP_AGG } from '../../db/columns.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';

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

/** What is held and what claims drawn from the hold use, as the holds' declaration `d` counts them (its amount and its draws). */
const timelineSql = (
  d: SetAsideConstraint,
) => `SELECT h.${HOLD.uuid} AS hold, h.${HOLD.projectId} AS project, h.${HOLD.startMs} AS start_ms, h.${HOLD.endMs} AS end_ms,
    h.${HOLD.endAction} AS end_action, p.${RP.uuid} AS provider, p.${RP.name} AS provider_name, rc.${RC.name} AS resource_class,
    ${d.setAside.amount('ha')} AS held, ${d.setAside.drawn('ha')} AS drawn,
    (SELECT group_concat(uuid) FROM (SELECT DISTINCT ag.${AGG.uuid} AS uuid FROM resource_provider_aggregates ra
      JOIN placement_aggregates ag ON ag.${AGG.id} = ra.${RP_AGG.aggregateId}
      WHERE ra.${RP_AGG.resourceProviderId} IN (p.${RP.id}, p.${RP.rootProviderId}) ORDER BY 1)) AS aggregates
  FROM ext_hold_amounts ha JOIN ext_holds h ON h.${HOLD.uuid} = ha.${HOLD_AMOUNT.holdUuid}
  JOIN resource_providers p ON p.${RP.id} = ha.${HOLD_AMOUNT.resourceProviderId}
  JOIN resource_classes rc ON rc.${RC.id} = ha.${HOLD_AMOUNT.resourceClassId}
  WHERE h.${HOLD.endMs} > ? ORDER BY h.${HOLD.startMs}, h.${HOLD.uuid}, p.${RP.uuid}, rc.${RC.name}
  LIMIT ?`;

/** Rows of the holds whose window ends after `fromMs`, soonest start first; at most `limit` rows; amounts as `d` counts them. */
export async function readTimeline(reader: BatchReader, d: SetAsideConstraint, fromMs: number, limit: number): Promise<TimelineRow[]> {
  const [result] = await reader.readBatch([{ sql: timelineSql(d), args: [fromMs, limit] }]);
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
