// Holds in GET /metrics (docs/holds.md): per resource class, what holds hold
// (those in their window now, and those whose window is still ahead) and what
// claims drawn from a hold in its window use. Read in the scrape's one batch
// (a GaugeRead of observability/database-gauges.ts, checked where the extension
// object names it: importing observability here would close a folder cycle).
import { ALLOC, CONSUMER, HOLD, HOLD_AMOUNT, HOLD_DRAW, RC } from '../../db/columns.js';
import type { InStatement, ResultSet } from '@libsql/client';

const HELD = `SELECT rc.${RC.name} AS resourcetype, CASE WHEN h.${HOLD.startMs} <= ? THEN 'active' ELSE 'upcoming' END AS win,
    SUM(ha.${HOLD_AMOUNT.amount}) AS n
  FROM ext_holds h JOIN ext_hold_amounts ha ON ha.${HOLD_AMOUNT.holdUuid} = h.${HOLD.uuid}
  JOIN resource_classes rc ON rc.${RC.id} = ha.${HOLD_AMOUNT.resourceClassId}
  WHERE h.${HOLD.endMs} > ? GROUP BY 1, 2 ORDER BY 1, 2`;
// A draw counts while it is the consumer's as written (same generation), as the rule reads it.
const DRAWN = `SELECT rc.${RC.name} AS resourcetype, SUM(a.${ALLOC.used}) AS n
  FROM ext_hold_draws d JOIN consumers c ON c.${CONSUMER.uuid} = d.${HOLD_DRAW.consumerUuid} AND c.${CONSUMER.generation} = d.${HOLD_DRAW.consumerGeneration}
  JOIN ext_holds h ON h.${HOLD.uuid} = d.${HOLD_DRAW.holdUuid} AND h.${HOLD.startMs} <= ? AND ? < h.${HOLD.endMs}
  JOIN allocations a ON a.${ALLOC.consumerId} = d.${HOLD_DRAW.consumerUuid}
  JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
  GROUP BY 1 ORDER BY 1`;

export const holdGauges = {
  statements: (nowMs: number): InStatement[] => [
    { sql: HELD, args: [nowMs, nowMs] },
    { sql: DRAWN, args: [nowMs, nowMs] },
  ],
  families: ([held, drawn]: ResultSet[]) => [
    {
      name: 'placement_ext_held',
      help: 'Extension (holds): amount held per resource class by holds in their window (active) or ahead of it (upcoming).',
      type: 'gauge' as const,
      labelNames: ['resourcetype', 'window'],
      series: held!.rows.map((r) => ({ labels: [String(r.resourcetype), String(r.win)], value: Number(r.n) })),
    },
    {
      name: 'placement_ext_held_drawn',
      help: 'Extension (holds): amount per resource class used by claims drawn from a hold in its window (ext_hold).',
      type: 'gauge' as const,
      labelNames: ['resourcetype'],
      series: drawn!.rows.map((r) => ({ labels: [String(r.resourcetype)], value: Number(r.n) })),
    },
  ],
};
