// Which consumers to evict so that one allocation request fits: the pure
// rule, with no database and no engine (search.ts feeds it).
//
// A request fits once, on every (provider, class) it uses, what the evicted
// consumers free covers its shortfall (usage + amount - capacity). Victim sets
// are ranked by (highest victim priority, sum of priorities, number of
// victims, units left over beyond the shortfall, then the victims' ids): the
// best set of that order is always minimal (dropping a victim never raises
// the highest priority or the sum, and lowers the count). Up to EXACT_LIMIT
// eligible consumers it is found by enumerating every subset; above, greedily
// under the lowest priority bound that can cover it (Kueue's order, lowest
// priority first, and two set-cover greedies: most covered per priority, most
// covered), each then minimized in reverse (Kueue's: each victim, highest
// priority and last taken first, is dropped while the rest still covers the
// shortfall, which leaves a minimal set), the best of the three kept.

/** Where a shortfall or a consumer's use lies: "providerId:classId". */
export type ResourceKey = string;

export const resourceKey = (providerId: number, classId: number): ResourceKey => `${providerId}:${classId}`;

export interface Eligible {
  consumer: string;
  priority: number;
  /** Units it holds per resource key (only keys that matter to the request need be present). */
  uses: ReadonlyMap<ResourceKey, number>;
}

export interface VictimCost {
  highest_priority: number;
  priority_sum: number;
  victims: number;
  left_over: number;
}

export interface VictimChoice {
  victims: Eligible[];
  cost: VictimCost;
}

/** Most eligible consumers a tree may hold for the search to enumerate every subset. */
export const EXACT_LIMIT = 16;

export const NO_VICTIMS_COST: VictimCost = { highest_priority: -1, priority_sum: 0, victims: 0, left_over: 0 };

/** Negative: `a` ranks before `b` (the stated order; the victims' ids break ties). */
export function compareChoices(a: VictimChoice, b: VictimChoice): number {
  return (
    a.cost.highest_priority - b.cost.highest_priority ||
    a.cost.priority_sum - b.cost.priority_sum ||
    a.cost.victims - b.cost.victims ||
    a.cost.left_over - b.cost.left_over ||
    compareIds(a.victims, b.victims)
  );
}

/** Each victim set's ids in order, computed once: a sort compares one set many times. */
const sortedIdsOf = new WeakMap<readonly Eligible[], string[]>();

function sortedIds(victims: readonly Eligible[]): string[] {
  let ids = sortedIdsOf.get(victims);
  if (!ids) sortedIdsOf.set(victims, (ids = victims.map((v) => v.consumer).sort()));
  return ids;
}

function compareIds(a: readonly Eligible[], b: readonly Eligible[]): number {
  const x = sortedIds(a);
  const y = sortedIds(b);
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
  }
  return x.length - y.length;
}

export function costOf(victims: readonly Eligible[], shortfall: ReadonlyMap<ResourceKey, number>): VictimCost {
  let highest = -1;
  let sum = 0;
  for (const v of victims) {
    highest = Math.max(highest, v.priority);
    sum += v.priority;
  }
  let leftOver = 0;
  for (const [key, need] of shortfall) {
    let freed = 0;
    for (const v of victims) freed += v.uses.get(key) ?? 0;
    leftOver += freed - need;
  }
  return { highest_priority: highest, priority_sum: sum, victims: victims.length, left_over: leftOver };
}

/** Whether evicting `victims` covers every shortfall. */
export function covers(victims: readonly Eligible[], shortfall: ReadonlyMap<ResourceKey, number>): boolean {
  for (const [key, need] of shortfall) {
    let freed = 0;
    for (const v of victims) freed += v.uses.get(key) ?? 0;
    if (freed < need) return false;
  }
  return true;
}

/** Whether no victim can be dropped with the rest still covering the shortfall. */
export function isMinimal(victims: readonly Eligible[], shortfall: ReadonlyMap<ResourceKey, number>): boolean {
  return victims.every((_, i) => !covers([...victims.slice(0, i), ...victims.slice(i + 1)], shortfall));
}

export type Method = 'exact' | 'greedy';

/**
 * The best victim set for a shortfall, among `eligible` (each already below
 * the preemptor's priority); null when evicting them all does not cover it.
 * `method` says how: exact (every subset) or greedy with reverse minimization.
 */
export function chooseVictims(
  shortfall: ReadonlyMap<ResourceKey, number>,
  eligible: readonly Eligible[],
  method: Method,
): VictimChoice | null {
  if (shortfall.size === 0) return { victims: [], cost: NO_VICTIMS_COST };
  // Only a consumer that frees something short can be in a minimal set.
  const short = [...shortfall.keys()];
  const useful = eligible.filter((v) => short.some((key) => (v.uses.get(key) ?? 0) > 0));
  if (!covers(useful, shortfall)) return null;
  return method === 'exact' ? exactly(shortfall, useful) : greedily(shortfall, useful);
}

function exactly(shortfall: ReadonlyMap<ResourceKey, number>, eligible: readonly Eligible[]): VictimChoice {
  // In id order: among sets equal on every cost figure, the one whose lowest differing member comes first wins (compareIds).
  const useful = [...eligible].sort(byId);
  const keys = [...shortfall.keys()];
  const needs = keys.map((k) => shortfall.get(k)!);
  const kinds = kindsOf(useful, keys);
  let combinations = 1;
  for (const kind of kinds) combinations *= kind.members.length + 1;
  const victims = combinations < 1 << useful.length ? byKinds(kinds, needs).map((i) => useful[i]!) : bySubsets(useful, keys, needs);
  return { victims, cost: costOf(victims, shortfall) };
}

/** Consumers alike for the rule: the same priority and the same units on every short resource, members in id order. */
interface Kind {
  priority: number;
  uses: number[];
  /** Indices into the id-ordered consumers. */
  members: number[];
}

function kindsOf(useful: readonly Eligible[], keys: readonly ResourceKey[]): Kind[] {
  const kinds = new Map<string, Kind>();
  useful.forEach((v, i) => {
    const uses = keys.map((key) => v.uses.get(key) ?? 0);
    const name = `${v.priority}|${uses.join(',')}`;
    const kind = kinds.get(name);
    if (kind) kind.members.push(i);
    else kinds.set(name, { priority: v.priority, uses, members: [i] });
  });
  return [...kinds.values()];
}

/**
 * The best set when many consumers are alike (a few flavors): every count of
 * each kind instead of every subset. Of a kind, the members taken are its
 * first in id order: among sets of equal counts that one wins the id rule, so
 * only sets of different counts and equal cost need their members compared.
 * Returns the chosen indices, in id order.
 */
function byKinds(kinds: readonly Kind[], needs: readonly number[]): number[] {
  const k = needs.length;
  const counts = kinds.map(() => 0);
  const freed = needs.map(() => 0);
  let sum = 0;
  let count = 0;
  let best: { counts: number[]; highest: number; sum: number; count: number; left: number } | null = null;
  for (;;) {
    // The next counts, as an odometer over the kinds.
    let g = 0;
    while (g < kinds.length && counts[g] === kinds[g]!.members.length) {
      const kind = kinds[g]!;
      const c = counts[g]!;
      count -= c;
      sum -= c * kind.priority;
      for (let j = 0; j < k; j += 1) freed[j] = freed[j]! - c * kind.uses[j]!;
      counts[g] = 0;
      g += 1;
    }
    if (g === kinds.length) break;
    const kind = kinds[g]!;
    counts[g] = counts[g]! + 1;
    count += 1;
    sum += kind.priority;
    for (let j = 0; j < k; j += 1) freed[j] = freed[j]! + kind.uses[j]!;
    let left = 0;
    let fits = true;
    for (let j = 0; j < k; j += 1) {
      if (freed[j]! < needs[j]!) fits = false;
      left += freed[j]! - needs[j]!;
    }
    if (!fits) continue;
    let highest = -1;
    for (let h = 0; h < kinds.length; h += 1) if (counts[h]! > 0 && kinds[h]!.priority > highest) highest = kinds[h]!.priority;
    const better =
      best === null ||
      (highest !== best.highest
        ? highest < best.highest
        : sum !== best.sum
          ? sum < best.sum
          : count !== best.count
            ? count < best.count
            : left !== best.left
              ? left < best.left
              : firstDifferingIsOurs(membersOf(kinds, counts), membersOf(kinds, best.counts)));
    if (better) best = { counts: [...counts], highest, sum, count, left };
  }
  return best ? membersOf(kinds, best.counts) : [];
}

/** The first `counts[g]` members of each kind, in id order. */
function membersOf(kinds: readonly Kind[], counts: readonly number[]): number[] {
  return kinds.flatMap((kind, g) => kind.members.slice(0, counts[g])).sort((a, b) => a - b);
}

/** Of two sets of one size (indices in id order), whether the lowest member in only one of them is in `ours`. */
function firstDifferingIsOurs(ours: readonly number[], theirs: readonly number[]): boolean {
  for (let i = 0; i < ours.length; i += 1) if (ours[i] !== theirs[i]) return ours[i]! < theirs[i]!;
  return false;
}

/** The best set by every subset, each built from the subset without its lowest member. */
function bySubsets(useful: readonly Eligible[], keys: readonly ResourceKey[], needs: readonly number[]): Eligible[] {
  const n = useful.length;
  const k = keys.length;
  const size = 1 << n;
  // Per subset, built from the subset without its lowest member: what it frees per key, its highest priority, sum and count.
  const freed = new Float64Array(size * k);
  const highest = new Float64Array(size).fill(-1);
  const sum = new Float64Array(size);
  const count = new Uint8Array(size);
  const uses = useful.map((v) => keys.map((key) => v.uses.get(key) ?? 0));
  let best = -1;
  let bestLeft = 0;
  for (let mask = 1; mask < size; mask += 1) {
    const low = 31 - Math.clz32(mask & -mask);
    const rest = mask & (mask - 1);
    const p = useful[low]!.priority;
    highest[mask] = Math.max(highest[rest]!, p);
    sum[mask] = sum[rest]! + p;
    count[mask] = count[rest]! + 1;
    let fits = true;
    let left = 0;
    for (let j = 0; j < k; j += 1) {
      const f = freed[rest * k + j]! + uses[low]![j]!;
      freed[mask * k + j] = f;
      if (f < needs[j]!) fits = false;
      left += f - needs[j]!;
    }
    if (!fits) continue;
    if (best < 0 || ranksBefore(mask, left, best, bestLeft)) {
      best = mask;
      bestLeft = left;
    }
  }
  return useful.filter((_, i) => best & (1 << i));

  function ranksBefore(a: number, leftA: number, b: number, leftB: number): boolean {
    if (highest[a] !== highest[b]) return highest[a]! < highest[b]!;
    if (sum[a] !== sum[b]) return sum[a]! < sum[b]!;
    if (count[a] !== count[b]) return count[a]! < count[b]!;
    if (leftA !== leftB) return leftA < leftB;
    const differ = a ^ b;
    return (differ & -differ & a) !== 0;
  }
}

function greedily(shortfall: ReadonlyMap<ResourceKey, number>, useful: readonly Eligible[]): VictimChoice {
  // The lowest priority bound whose consumers cover the shortfall: no set may go above it.
  const bounds = [...new Set(useful.map((v) => v.priority))].sort((a, b) => a - b);
  const bound = bounds.find((p) =>
    covers(
      useful.filter((v) => v.priority <= p),
      shortfall,
    ),
  )!;
  const within = useful.filter((v) => v.priority <= bound);
  // Three orders, each minimized in reverse; the best of them by the stated order.
  const byPriority = [...within].sort(
    (a, b) => a.priority - b.priority || usefulness(b, shortfall) - usefulness(a, shortfall) || byId(a, b),
  );
  const choices = [
    minimized(fillInOrder(byPriority, shortfall), shortfall),
    minimized(
      fillByScore(within, shortfall, (gain, v) => gain / (v.priority + 1)),
      shortfall,
    ),
    minimized(
      fillByScore(within, shortfall, (gain) => gain),
      shortfall,
    ),
  ].map((victims) => ({ victims, cost: costOf(victims, shortfall) }));
  return choices.reduce((best, c) => (compareChoices(c, best) < 0 ? c : best));
}

const byId = (a: Eligible, b: Eligible) => (a.consumer < b.consumer ? -1 : a.consumer > b.consumer ? 1 : 0);

/** How much of the shortfall a consumer covers, each key as a share of what is still needed. */
function usefulness(v: Eligible, needed: ReadonlyMap<ResourceKey, number>): number {
  let share = 0;
  for (const [key, need] of needed) if (need > 0) share += Math.min(v.uses.get(key) ?? 0, need) / need;
  return share;
}

/** Kueue's order: take consumers in `order` until the shortfall is covered. */
function fillInOrder(order: readonly Eligible[], shortfall: ReadonlyMap<ResourceKey, number>): Eligible[] {
  const chosen: Eligible[] = [];
  for (const v of order) {
    chosen.push(v);
    if (covers(chosen, shortfall)) break;
  }
  return chosen;
}

/** Set-cover greedy: each step takes the consumer of the best score for what is still short. */
function fillByScore(
  pool: readonly Eligible[],
  shortfall: ReadonlyMap<ResourceKey, number>,
  score: (gain: number, v: Eligible) => number,
): Eligible[] {
  const left = new Map(shortfall);
  const rest = [...pool];
  const chosen: Eligible[] = [];
  while ([...left.values()].some((n) => n > 0) && rest.length) {
    let bestAt = 0;
    let bestScore = Number.NEGATIVE_INFINITY;
    rest.forEach((v, i) => {
      const s = score(usefulness(v, left), v);
      if (s > bestScore || (s === bestScore && byId(v, rest[bestAt]!) < 0)) {
        bestScore = s;
        bestAt = i;
      }
    });
    const [v] = rest.splice(bestAt, 1);
    chosen.push(v!);
    for (const [key, need] of left) left.set(key, need - (v!.uses.get(key) ?? 0));
  }
  return chosen;
}

/** Reverse minimization: the highest priority first (the last taken among equals), each dropped while the rest still covers. */
function minimized(chosen: readonly Eligible[], shortfall: ReadonlyMap<ResourceKey, number>): Eligible[] {
  const kept = [...chosen];
  const tryOrder = chosen.map((v, i) => ({ v, i })).sort((a, b) => b.v.priority - a.v.priority || b.i - a.i);
  for (const { v } of tryOrder) {
    const without = kept.filter((k) => k !== v);
    if (covers(without, shortfall)) kept.splice(kept.indexOf(v), 1);
  }
  return kept;
}
