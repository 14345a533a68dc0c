// The dashboard's time line of holds (docs/holds.md): holds not over, grouped
// per aggregate (a provider in two is in both; those in none apart), each
// provider with its holds' windows and, per class, what is held and what
// claims drawn from the hold use now. Read through timeline-repo.ts.
import type { BatchReader } from '../../db/client.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { readTimeline, type TimelineRow } from './timeline-repo.js';

/** Most (hold, provider, class) rows one answer carries; past it the answer says it was cut. */
export const TIMELINE_ROWS = 5000;

export interface TimelineHold {
  uuid: string;
  project_id: string;
  start: string;
  end: string;
  end_action: string;
  resources: Record<string, { held: number; drawn: number }>;
}

export interface HoldsTimeline {
  now: string;
  groups: { aggregate_uuid: string | null; providers: { uuid: string; name: string; holds: TimelineHold[] }[] }[];
  /** Only when more holds exist than TIMELINE_ROWS rows carry. */
  truncated?: true;
}

/** The time line from `nowMs` on (holds whose window ends after it), what is held and drawn as the holds' declaration `d` counts it. */
export async function holdsTimeline(
  reader: BatchReader,
  d: SetAsideConstraint,
  nowMs: number,
  rowLimit = TIMELINE_ROWS,
): Promise<HoldsTimeline> {
  const rows = await readTimeline(reader, d, nowMs, rowLimit);
  return { ...timelineOf(rows, nowMs), ...(rows.length >= rowLimit ? { truncated: true as const } : {}) };
}

/** Rows (soonest start first) grouped per aggregate, then provider (by name), then hold (in row order). */
export function timelineOf(rows: readonly TimelineRow[], nowMs: number): HoldsTimeline {
  const groups = new Map<string | null, Map<string, { uuid: string; name: string; holds: Map<string, TimelineHold> }>>();
  for (const r of rows) {
    for (const aggregate of r.aggregates.length ? r.aggregates : [null]) {
      let providers = groups.get(aggregate);
      if (!providers) groups.set(aggregate, (providers = new Map()));
      let provider = providers.get(r.provider);
      if (!provider) providers.set(r.provider, (provider = { uuid: r.provider, name: r.providerName, holds: new Map() }));
      let hold = provider.holds.get(r.hold);
      if (!hold) {
        hold = {
          uuid: r.hold,
          project_id: r.project,
          start: new Date(r.startMs).toISOString(),
          end: new Date(r.endMs).toISOString(),
          end_action: r.endAction,
          resources: {},
        };
        provider.holds.set(r.hold, hold);
      }
      hold.resources[r.resourceClass] = { held: r.held, drawn: r.drawn };
    }
  }
  const order = (a: string | null, b: string | null) => (a === null ? 1 : b === null ? -1 : a.localeCompare(b));
  return {
    now: new Date(nowMs).toISOString(),
    groups: [...groups]
      .sort(([a], [b]) => order(a, b))
      .map(([aggregate, providers]) => ({
        aggregate_uuid: aggregate,
        providers: [...providers.values()]
          .sort((a, b) => a.name.localeCompare(b.name) || a.uuid.localeCompare(b.uuid))
          .map((p) => ({ uuid: p.uuid, name: p.name, holds: [...p.holds.values()] })),
      })),
  };
}
