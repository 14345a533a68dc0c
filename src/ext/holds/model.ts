// Holds (docs/holds.md): capacity held for a project over a future window,
// and the rule every hold and every claim is admitted against. Pure: no SQL,
// no HTTP; the repo reads a World from the database, the guard and the
// routes ask it, and test/ext/holds-history.test.ts checks it against an
// oracle that walks every instant.
//
// The rule, per (provider, class), at every instant t of every hold's window
// from now on:
//   allocations that still exist at t (none has a lease: forever; a lease:
//   until its expiry, inclusive), except those drawn from a hold active at t,
//   + for each hold active at t: its amount (or what is drawn from it, if more)
//   <= capacity.
// Only increases happen at a hold's start (allocations only end as time
// goes on), so the greatest load over any span is at its first instant or at
// a hold's start inside it: those are the only instants checked.

/** A (provider, class) pair, as one map key. */
export type Key = string;
export const keyOf = (provider: string, resourceClass: string): Key => `${provider} ${resourceClass}`;
export const splitKey = (key: Key): { provider: string; resourceClass: string } => {
  const at = key.indexOf(' ');
  return { provider: key.slice(0, at), resourceClass: key.slice(at + 1) };
};

/** Forever: an allocation without a lease, a window without an end. */
export const FOREVER = Number.POSITIVE_INFINITY;

export type EndAction = 'release' | 'keep';

export interface Hold {
  id: string;
  project: string;
  startMs: number;
  endMs: number;
  /** What is held, by (provider, class). */
  amounts: ReadonlyMap<Key, number>;
  endAction: EndAction;
}

/** One allocation: an amount of a class on a provider held by a consumer. */
export interface Allocation {
  consumer: string;
  project: string;
  key: Key;
  amount: number;
  /** When it ends: its lease's expiry, FOREVER without one. */
  endsAtMs: number;
  /** The hold it was drawn from (ext_hold), or null. */
  holdId: string | null;
}

export interface World {
  nowMs: number;
  /** Capacity by (provider, class): (total - reserved) * allocation_ratio. */
  capacity: ReadonlyMap<Key, number>;
  allocations: readonly Allocation[];
  holds: readonly Hold[];
}

const activeAt = (hold: Hold, t: number): boolean => hold.startMs <= t && t < hold.endMs;
// An allocation still counts at the instant it ends: the sweep removes it only then (or later), so a
// claim must end before a window's start, not at it, to use what the window holds.
const aliveAt = (a: Allocation, t: number): boolean => t <= a.endsAtMs;

/**
 * The load of `key` at instant `t`: allocations alive then, those drawn from
 * a hold active then counted as that hold's use, plus every hold active then.
 */
export function loadAt(world: Pick<World, 'allocations' | 'holds'>, key: Key, t: number): number {
  const drawn = new Map<string, number>();
  const active = new Map<string, Hold>();
  for (const h of world.holds) if (activeAt(h, t) && h.amounts.has(key)) active.set(h.id, h);
  let load = 0;
  for (const a of world.allocations) {
    if (a.key !== key || !aliveAt(a, t)) continue;
    if (a.holdId !== null && active.has(a.holdId)) drawn.set(a.holdId, (drawn.get(a.holdId) ?? 0) + a.amount);
    else load += a.amount;
  }
  for (const h of active.values()) load += Math.max(h.amounts.get(key) ?? 0, drawn.get(h.id) ?? 0);
  return load;
}

/** The instants at which the rule is checked: each hold's first instant from now on (the window's start, or now once it has begun). */
export function checkInstants(holds: readonly Hold[], nowMs: number): number[] {
  const at = new Set<number>();
  for (const h of holds) if (h.endMs > nowMs) at.add(Math.max(nowMs, h.startMs));
  return [...at].sort((a, b) => a - b);
}

export interface Violation {
  key: Key;
  atMs: number;
  load: number;
  capacity: number;
}

/**
 * Where the rule is broken in `world`, restricted to `keys` when given:
 * (provider, class) pairs held by a hold active at a check instant whose load
 * then exceeds their capacity. Pairs no hold covers are placement's own rule.
 */
export function violations(world: World, keys?: ReadonlySet<Key>): Violation[] {
  const found: Violation[] = [];
  for (const t of checkInstants(world.holds, world.nowMs)) {
    const held = new Set<Key>();
    for (const h of world.holds) if (activeAt(h, t)) for (const k of h.amounts.keys()) if (!keys || keys.has(k)) held.add(k);
    for (const key of held) {
      const load = loadAt(world, key, t);
      const capacity = world.capacity.get(key) ?? 0;
      if (load > capacity) found.push({ key, atMs: t, load, capacity });
    }
  }
  return found;
}

/** A claim of a consumer (replacing what it holds), as holds see it. */
export interface Claim {
  consumer: string;
  project: string;
  amounts: ReadonlyMap<Key, number>;
  /** ext_until: the claim ends then (a lease is written with it); FOREVER without. */
  untilMs: number;
  /** ext_hold: the hold it draws from, or null. */
  holdId: string | null;
}

export type ClaimRefusal =
  | { reason: 'unknown_hold'; holdId: string }
  | { reason: 'not_hold_project'; holdId: string; project: string }
  | { reason: 'outside_window'; holdId: string }
  | { reason: 'not_held'; holdId: string; key: Key }
  | { reason: 'hold_exhausted'; holdId: string; key: Key; drawn: number; amount: number; asked: number }
  | { reason: 'held'; violation: Violation };

/** When a claim drawn from `hold` ends: at the hold's end when it releases them, else at ext_until. */
export const drawnEndMs = (hold: Hold, untilMs: number): number => (hold.endAction === 'release' ? Math.min(hold.endMs, untilMs) : untilMs);

/** The allocations `claim` leaves (its consumer's earlier ones replaced). */
export function allocationsOf(claim: Claim, holds: readonly Hold[]): Allocation[] {
  const hold = claim.holdId === null ? undefined : holds.find((h) => h.id === claim.holdId);
  const endsAtMs = hold ? drawnEndMs(hold, claim.untilMs) : claim.untilMs;
  return [...claim.amounts].map(([key, amount]) => ({
    consumer: claim.consumer,
    project: claim.project,
    key,
    amount,
    endsAtMs,
    holdId: claim.holdId,
  }));
}

/** How the project of a site's slice begins: the hold owned by `site:<site>` (docs/sites.md). */
export const SITE_HOLD_PREFIX = 'site:';

/**
 * A site's slice is drawn by the site's consumers, whatever their project: a
 * claim must still name it (ext_hold) to draw from it.
 */
const drawnByAnyProject = (hold: Hold): boolean => hold.project.startsWith(SITE_HOLD_PREFIX);

/**
 * Whether `claim` may be written in `world`: null grants. A claim drawn from
 * a hold must be the hold's project, inside its window, on what it holds,
 * within its amount; then no claim may leave the rule broken on a pair it
 * touches at an instant where it counts (it refuses only what it raises).
 */
export function refuseClaim(world: World, claim: Claim): ClaimRefusal | null {
  const { nowMs } = world;
  const others = world.allocations.filter((a) => a.consumer !== claim.consumer);
  if (claim.holdId !== null) {
    const holdId = claim.holdId;
    const hold = world.holds.find((h) => h.id === holdId);
    if (!hold) return { reason: 'unknown_hold', holdId };
    if (hold.project !== claim.project && !drawnByAnyProject(hold)) return { reason: 'not_hold_project', holdId, project: claim.project };
    if (!activeAt(hold, nowMs)) return { reason: 'outside_window', holdId };
    for (const [key, asked] of claim.amounts) {
      const amount = hold.amounts.get(key);
      if (amount === undefined) return { reason: 'not_held', holdId, key };
      let drawn = 0;
      for (const a of others) if (a.holdId === holdId && a.key === key && aliveAt(a, nowMs)) drawn += a.amount;
      if (drawn + asked > amount) return { reason: 'hold_exhausted', holdId, key, drawn, amount, asked };
    }
  }
  const mine = allocationsOf(claim, world.holds);
  const after: World = { ...world, allocations: [...others, ...mine] };
  const before: World = { ...world, allocations: others };
  for (const v of violations(after, new Set(claim.amounts.keys()))) {
    if (loadAt(before, v.key, v.atMs) < v.load) return { reason: 'held', violation: v };
  }
  return null;
}

export interface HoldRefusal {
  violation: Violation;
}

/**
 * Whether `hold` (new, or replacing the hold of its id) may be admitted: the
 * rule with it added holds on every pair it holds. With `ignoreAllocations`,
 * allocations that exist now and have no end are left out of the check
 * (Slurm's IGNORE_JOBS: the operator knows they will be gone).
 */
export function refuseHold(world: World, hold: Hold, ignoreAllocations = false): HoldRefusal | null {
  const allocations = ignoreAllocations ? world.allocations.filter((a) => a.endsAtMs !== FOREVER || a.holdId !== null) : world.allocations;
  const without: World = { ...world, allocations, holds: world.holds.filter((h) => h.id !== hold.id) };
  const withIt: World = { ...without, holds: [...without.holds, hold] };
  for (const v of violations(withIt, new Set(hold.amounts.keys()))) {
    if (loadAt(without, v.key, v.atMs) < v.load) return { violation: v };
  }
  return null;
}

/**
 * Whether the allocations of `consumer` may be made to end at `endsAtMs`
 * instead (a lease renewed to a new expiry, or confirmed: FOREVER): null
 * grants. Refused only where the rule is then broken at an instant where the
 * consumer's later end raises the load (an earlier end is always granted).
 * A claim drawn from a hold that releases it still ends at the hold's end.
 */
export function refuseEndChange(world: World, consumer: string, endsAtMs: number): Violation | null {
  const byId = new Map(world.holds.map((h) => [h.id, h]));
  const keys = new Set<Key>();
  const allocations = world.allocations.map((a) => {
    if (a.consumer !== consumer) return a;
    keys.add(a.key);
    const from = a.holdId === null ? undefined : byId.get(a.holdId);
    return { ...a, endsAtMs: from ? drawnEndMs(from, endsAtMs) : endsAtMs };
  });
  const after: World = { ...world, allocations };
  for (const v of violations(after, keys)) if (loadAt(world, v.key, v.atMs) < v.load) return v;
  return null;
}

/** The holds active at `atMs` that hold `key`: those a violation there breaks. */
export const holdsAt = (holds: readonly Hold[], key: Key, atMs: number): Hold[] =>
  holds.filter((h) => activeAt(h, atMs) && h.amounts.has(key));
