// The cloud's usage over time, as holds see it (docs/holds.md, availability):
// per (provider, class), the load at an instant t is the rule's load
// (model.ts loadAt: allocations still alive at t, those drawn from a hold
// active at t counted as its use, plus every hold active at t). A placement
// fits at every instant of [s, e) exactly when it fits beside each pair's
// greatest load over [s, e), so one search of the candidates engine with that
// usage answers "does the query fit from s for e - s". The load is constant
// between events (a hold's start or end, an allocation's last instant + 1):
// the greatest load over [s, e) is the greatest at s and at the events inside,
// and the earliest start is `from` or an event. Pure: no SQL, no engine.
import type { Usage } from '../../placement/candidates/cloud-model.js';
import { type Allocation, FOREVER, type Hold, holdsAt, type Key, loadAt, splitKey, type World } from './model.js';

/** A (provider id, class id) pair as a model Key. */
export const pairKey = (providerId: number, classId: number): Key => `${providerId} ${classId}`;

/** The load of one pair over time: its allocations and the holds that hold it, and the instants it changes. */
interface PairTimeline {
  key: Key;
  /** Instants the load may change at after now, ascending. */
  events: number[];
  /** The load from now until the first event, then from each event until the next (one more than `events`). */
  loads: number[];
}

/** The cloud over time: what never changes (pairs without a hold or an allocation that ends), and the pairs that do. */
export interface Calendar {
  /** Load of the pairs whose load is the same at every instant from now on. */
  steady: Map<Key, number>;
  timelines: PairTimeline[];
}

/**
 * The load of `key` at `t` as one figure against the inventory's capacity:
 * placement's rule bounds what is allocated by the capacity, and while a hold
 * holds the pair, holds' rule bounds the rule's load by the declaration's
 * bound, `slack` more than the capacity (0 with the holds' own declaration:
 * then it is the rule's load). So an amount fits beside it exactly when it
 * fits both rules.
 */
function loadAgainstCapacity(world: Pick<World, 'allocations' | 'holds'>, key: Key, t: number, slack: number): number {
  if (slack === 0) return loadAt(world, key, t);
  const allocated = loadAt({ allocations: world.allocations, holds: [] }, key, t);
  return holdsAt(world.holds, key, t).length > 0 ? Math.max(allocated, loadAt(world, key, t) - slack) : allocated;
}

/**
 * The calendar of `allocations` (keys: pairKey) and `holds` (not over at
 * `nowMs`; their amounts keyed the same way), from `nowMs` on; `slack`: by
 * pair, how much the holds' declaration bounds the pair above its capacity
 * (absent: 0).
 */
export function calendarOf(
  allocations: readonly Allocation[],
  holds: readonly Hold[],
  nowMs: number,
  slack: ReadonlyMap<Key, number> = new Map(),
): Calendar {
  const changing = new Map<Key, { allocations: Allocation[]; holds: Hold[] }>();
  const pair = (key: Key) => {
    let p = changing.get(key);
    if (!p) changing.set(key, (p = { allocations: [], holds: [] }));
    return p;
  };
  const live = holds.filter((h) => h.endMs > nowMs);
  for (const h of live) for (const key of h.amounts.keys()) pair(key).holds.push(h);
  // An allocation changes its pair's load when it ends, or when it is drawn from a hold (its use counted as the hold's).
  for (const a of allocations) if (a.endsAtMs !== FOREVER || a.holdId !== null) pair(a.key);
  const steady = new Map<Key, number>();
  for (const a of allocations) {
    const p = changing.get(a.key);
    if (p) p.allocations.push(a);
    else steady.set(a.key, (steady.get(a.key) ?? 0) + a.amount);
  }
  const timelines: PairTimeline[] = [];
  for (const [key, world] of changing) {
    const events = new Set<number>();
    for (const h of world.holds) for (const t of [h.startMs, h.endMs]) if (t > nowMs && t !== FOREVER) events.add(t);
    for (const a of world.allocations) if (a.endsAtMs !== FOREVER && a.endsAtMs + 1 > nowMs) events.add(a.endsAtMs + 1);
    const sorted = [...events].sort((x, y) => x - y);
    const over = slack.get(key) ?? 0;
    timelines.push({ key, events: sorted, loads: [nowMs, ...sorted].map((t) => loadAgainstCapacity(world, key, t, over)) });
  }
  return { steady, timelines };
}

/** Adds `amount` to the usage of a pairKey's (provider id, class id). */
function add(usage: Usage, key: Key, amount: number): void {
  const { provider, resourceClass } = splitKey(key);
  const [providerId, classId] = [Number(provider), Number(resourceClass)];
  let perClass = usage.get(providerId);
  if (!perClass) usage.set(providerId, (perClass = new Map()));
  perClass.set(classId, (perClass.get(classId) ?? 0) + amount);
}

/** The greatest load of one pair over [s, e) (s at now or later). */
function greatestLoad(timeline: PairTimeline, s: number, e: number): number {
  const { events, loads } = timeline;
  // The piece s falls in: after the last event at or before s.
  let low = 0;
  let high = events.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (events[mid]! <= s) low = mid + 1;
    else high = mid;
  }
  let most = loads[low]!;
  for (let i = low; i < events.length && events[i]! < e; i += 1) most = Math.max(most, loads[i + 1]!);
  return most;
}

/** The changing pairs' greatest loads over [s, e), in timeline order. */
export function loadsOver(calendar: Calendar, s: number, e: number): number[] {
  return calendar.timelines.map((t) => greatestLoad(t, s, e));
}

/** The usage the engine searches with for [s, e) (keys: pairKey): the steady pairs', and each changing pair's greatest load (`loads`: loadsOver). */
export function usageOf(calendar: Calendar, loads: readonly number[]): Usage {
  const usage: Usage = new Map();
  for (const [key, load] of calendar.steady) add(usage, key, load);
  calendar.timelines.forEach((t, i) => {
    if (loads[i]! > 0) add(usage, t.key, loads[i]!);
  });
  return usage;
}

/** The starts worth trying from `from` on, ascending: `from`, then every event after it (only there can the answer change). */
export function startsFrom(calendar: Calendar, from: number): number[] {
  const starts = new Set<number>([from]);
  for (const t of calendar.timelines) for (const e of t.events) if (e > from) starts.add(e);
  return [...starts].sort((a, b) => a - b);
}

/** Refused starts' loads kept to compare later starts with (the latest: loads mostly fall as time goes on). */
const KEPT_REFUSALS = 8;

const atLeast = (loads: readonly number[], than: readonly number[]): boolean => loads.every((n, i) => n >= than[i]!);

/**
 * The earliest start s >= `from` at which `fits` (a search over the usage
 * of [s, s + durationMs)) finds something, with what it found; null when it
 * never does (not even once everything that ends has ended). A start whose
 * loads are nowhere below those of a start already refused is refused
 * without a search (more usage never makes a placement fit).
 */
export async function earliestFit<T>(
  calendar: Calendar,
  from: number,
  durationMs: number,
  fits: (usage: Usage) => Promise<T | null>,
): Promise<{ startMs: number; found: T } | null> {
  const refused: number[][] = [];
  for (const s of startsFrom(calendar, from)) {
    const loads = loadsOver(calendar, s, s + durationMs);
    if (refused.some((r) => atLeast(loads, r))) continue;
    const found = await fits(usageOf(calendar, loads));
    if (found !== null) return { startMs: s, found };
    refused.push(loads);
    if (refused.length > KEPT_REFUSALS) refused.shift();
  }
  return null;
}

/**
 * The earliest start at or after `afterMs` (and now) at which `amounts`, on
 * given (provider, class) pairs, fit for `durationMs` beside what exists and
 * is held (as a claim with ext_until at its end would be admitted then), or
 * null when never (more than capacity). The calendar's answer without the
 * engine: test/ext/holds-history.test.ts checks it against its oracle.
 */
export function earliestStart(world: World, amounts: ReadonlyMap<Key, number>, durationMs: number, afterMs: number): number | null {
  for (const [key, amount] of amounts) if (amount > (world.capacity.get(key) ?? 0)) return null;
  const calendar = calendarOf(world.allocations, world.holds, world.nowMs);
  const index = new Map(calendar.timelines.map((t, i) => [t.key, i]));
  for (const s of startsFrom(calendar, Math.max(afterMs, world.nowMs))) {
    const loads = loadsOver(calendar, s, s + durationMs);
    const fits = [...amounts].every(([key, amount]) => {
      const i = index.get(key);
      const load = i === undefined ? (calendar.steady.get(key) ?? 0) : loads[i]!;
      return load + amount <= (world.capacity.get(key) ?? 0);
    });
    if (fits) return s;
  }
  return null;
}
