// Holds in GET /metrics (docs/holds.md): per resource class, what holds hold
// (those in their window now, and those whose window is still ahead) and what
// claims drawn from a hold in its window use. Read in the scrape's one batch
// (a GaugeRead of observability/database-gauges.ts, checked where the extension
// object names it: importing observability here would close a folder cycle).
import type { InStatement, ResultSet } from '@libsql/client';
import { HOLD, HOLD_AMOUNT, RC } from '../../db/columns.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';

/** Per class, what the holds not over set aside (as the holds' declaration `d` counts it) and, of those in their window, what their claims drew (its drawn). */
const heldSql = (
  d: SetAsideConstraint,
) => `SELECT rc.${RC.name} AS resourcetype, CASE WHEN h.${HOLD.startMs} <= ? THEN 'active' ELSE 'upcoming' END AS win,
    SUM(${d.setAside.amount('ha')}) AS n
  FROM ext_holds h JOIN ext_hold_amounts ha ON ha.${HOLD_AMOUNT.holdUuid} = h.${HOLD.uuid}
  JOIN resource_classes rc ON rc.${RC.id} = ha.${HOLD_AMOUNT.resourceClassId}
  WHERE h.${HOLD.endMs} > ? GROUP BY 1, 2 ORDER BY 1, 2`;
const drawnSql = (d: SetAsideConstraint) => `SELECT rc.${RC.name} AS resourcetype, SUM(${d.setAside.drawn('ha')}) AS n
  FROM ext_holds h JOIN ext_hold_amounts ha ON ha.${HOLD_AMOUNT.holdUuid} = h.${HOLD.uuid}
  JOIN resource_classes rc ON rc.${RC.id} = ha.${HOLD_AMOUNT.resourceClassId}
  WHERE h.${HOLD.startMs} <= ? AND ? < h.${HOLD.endMs} GROUP BY 1 HAVING n > 0 ORDER BY 1`;

export const holdGauges = (d: SetAsideConstraint) => {
  const [held, drawn] = [heldSql(d), drawnSql(d)];
  return {
    statements: (nowMs: number): InStatement[] => [
      { sql: held, args: [nowMs, nowMs] },
      { sql: drawn, args: [nowMs, nowMs] },
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
};
