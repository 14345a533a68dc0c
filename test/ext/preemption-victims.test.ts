// The victim rule against brute force: 500 random trees with at most 12
// eligible consumers (the exact path must equal the optimum of the stated
// order), and trees with up to 200 (the greedy path: every set minimal, and
// at least 95% within one victim of the optimum, found here by a dynamic
// program over the capped shortfall).
import { describe, expect, it } from 'vitest';
import {
  chooseVictims,
  compareChoices,
  costBound,
  costOf,
  covers,
  type Eligible,
  isMinimal,
  type ResourceKey,
  type VictimChoice,
  type VictimCost,
  ranksAfter,
  useStatsOf,
} from '../../src/ext/preemption/victims.js';
import { type Random, random as seeded } from '../helpers/random.js';

interface Tree {
  shortfall: Map<ResourceKey, number>;
  /** Below the preemptor's priority and preemptible. */
  eligible: Eligible[];
}

/** A tree of `keys` resources filled by consumers, some not eligible, and a request's shortfall over it. */
function randomTree(r: Random, consumers: number, keys: number, capacity: number): Tree {
  const keyNames = Array.from({ length: keys }, (_, i) => `${1 + r.below(3)}:${i}`);
  const used = new Map(keyNames.map((k) => [k, 0]));
  const eligible: Eligible[] = [];
  for (let c = 0; c < consumers; c += 1) {
    const uses = new Map<ResourceKey, number>();
    for (const key of keyNames) {
      if (r.chance(0.6)) {
        const amount = Math.min(1 + r.below(Math.max(1, Math.floor((capacity * 2) / consumers) + 2)), capacity - used.get(key)!);
        if (amount > 0) {
          uses.set(key, amount);
          used.set(key, used.get(key)! + amount);
        }
      }
    }
    if (uses.size === 0) continue;
    // About one in five is at or above the preemptor's priority, or has none: it only takes room.
    if (r.chance(0.8)) eligible.push({ consumer: `c${String(c).padStart(3, '0')}`, priority: r.below(6), uses });
  }
  const shortfall = new Map<ResourceKey, number>();
  for (const key of keyNames) {
    const amount = 1 + r.below(Math.ceil(capacity / 2));
    const short = used.get(key)! + amount - capacity;
    if (short > 0) shortfall.set(key, short);
  }
  return { shortfall, eligible };
}

const keyOf = (c: VictimCost) => [c.highest_priority, c.priority_sum, c.victims, c.left_over];
const lexLess = (a: number[], b: number[]) => {
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
};

/** Every subset of every eligible consumer (useful or not): the best cost, and every set that reaches it. */
function bruteForce(tree: Tree): { cost: number[]; sets: Set<string> } | null {
  let best: number[] | null = null;
  let sets = new Set<string>();
  const n = tree.eligible.length;
  for (let mask = 0; mask < 1 << n; mask += 1) {
    const victims = tree.eligible.filter((_, i) => mask & (1 << i));
    if (!covers(victims, tree.shortfall)) continue;
    const cost = keyOf(costOf(victims, tree.shortfall));
    const id = victims.map((v) => v.consumer).join(',');
    if (!best || lexLess(cost, best)) {
      best = cost;
      sets = new Set([id]);
    } else if (!lexLess(best, cost)) sets.add(id);
  }
  return best ? { cost: best, sets } : null;
}

/** The optimum's (highest priority, sum, count) by a covering knapsack over the shortfall, capped at the need. */
function optimumByDp(tree: Tree): { highest: number; sum: number; count: number } | null {
  const keys = [...tree.shortfall.keys()];
  const needs = keys.map((k) => tree.shortfall.get(k)!);
  const priorities = [...new Set(tree.eligible.map((v) => v.priority))].sort((a, b) => a - b);
  for (const highest of priorities) {
    const items = tree.eligible.filter((v) => v.priority <= highest);
    if (!covers(items, tree.shortfall)) continue;
    // state: capped freed per key (mixed radix) -> best [sum, count].
    const radix = needs.map((n) => n + 1);
    const size = radix.reduce((a, b) => a * b, 1);
    const best: ([number, number] | null)[] = new Array(size).fill(null);
    best[0] = [0, 0];
    for (const v of items) {
      const add = keys.map((k) => v.uses.get(k) ?? 0);
      for (let s = size - 1; s >= 0; s -= 1) {
        const from = best[s];
        if (!from) continue;
        let rest = s;
        let target = 0;
        let mul = 1;
        for (let j = 0; j < keys.length; j += 1) {
          const have = rest % radix[j]!;
          rest = Math.floor(rest / radix[j]!);
          target += Math.min(needs[j]!, have + add[j]!) * mul;
          mul *= radix[j]!;
        }
        const cand: [number, number] = [from[0] + v.priority, from[1] + 1];
        const at = best[target];
        if (target !== s && (!at || cand[0] < at[0] || (cand[0] === at[0] && cand[1] < at[1]))) best[target] = cand;
      }
    }
    const full = best[size - 1]!;
    return { highest, sum: full[0], count: full[1] };
  }
  return null;
}

describe('victims, exact (at most 12 eligible per tree)', () => {
  it('equals a brute-force optimum of the stated order on 500 random trees', () => {
    let withVictims = 0;
    for (let seed = 1; seed <= 500; seed += 1) {
      const r = seeded(seed);
      const tree = randomTree(r, 1 + r.below(14), 1 + r.below(3), 8 + r.below(24));
      expect(tree.eligible.length).toBeLessThanOrEqual(14);
      tree.eligible = tree.eligible.slice(0, 12);
      const chosen = chooseVictims(tree.shortfall, tree.eligible, 'exact');
      const expected = bruteForce(tree);
      if (!expected) {
        expect(chosen, `seed ${seed}`).toBeNull();
        continue;
      }
      expect(chosen, `seed ${seed}`).not.toBeNull();
      expect(keyOf(chosen!.cost), `seed ${seed}`).toEqual(expected.cost);
      expect(expected.sets.has(chosen!.victims.map((v) => v.consumer).join(',')), `seed ${seed}`).toBe(true);
      expect(isMinimal(chosen!.victims, tree.shortfall), `seed ${seed}`).toBe(true);
      if (chosen!.victims.length) withVictims += 1;
    }
    // The cases exercise the rule: most trees need victims.
    expect(withVictims).toBeGreaterThan(250);
  });
});

/** A tree filled from a few flavors (many consumers alike, as in a cloud of a few instance sizes), some consumers unlike any other. */
function flavoredTree(r: Random): Tree {
  const keys = Array.from({ length: 1 + r.below(3) }, (_, i) => `1:${i}`);
  const flavors = Array.from({ length: 1 + r.below(3) }, () => ({
    priority: r.below(4),
    uses: new Map(keys.filter((_, i) => i === 0 || r.chance(0.7)).map((k): [ResourceKey, number] => [k, 1 + r.below(4)])),
  }));
  const eligible: Eligible[] = [];
  for (let c = 0; c < 1 + r.below(12); c += 1) {
    const flavor = r.chance(0.8) ? r.pick(flavors) : { priority: r.below(4), uses: new Map([[keys[0]!, 1 + r.below(6)]]) };
    // Ids in no particular order against the draw.
    eligible.push({ consumer: `c${String(r.below(1000)).padStart(3, '0')}-${c}`, priority: flavor.priority, uses: flavor.uses });
  }
  const shortfall = new Map(keys.filter(() => r.chance(0.8)).map((k): [ResourceKey, number] => [k, 1 + r.below(10)]));
  return { shortfall, eligible };
}

/** The rule as stated: the first of every covering subset by compareChoices (the cost, then the victims' ids). */
function firstOfEverySubset(tree: Tree): VictimChoice | null {
  let best: VictimChoice | null = null;
  for (let mask = 1; mask < 1 << tree.eligible.length; mask += 1) {
    const victims = tree.eligible.filter((_, i) => mask & (1 << i));
    if (!covers(victims, tree.shortfall)) continue;
    const choice = { victims, cost: costOf(victims, tree.shortfall) };
    if (!best || compareChoices(choice, best) < 0) best = choice;
  }
  return best;
}

describe('victims, exact, against every subset', () => {
  it('chooses the very set the stated order puts first (ties by id) on 3,000 trees of alike and unlike consumers', () => {
    let alike = 0;
    for (let seed = 1; seed <= 3000; seed += 1) {
      const r = seeded(seed);
      const tree = seed % 3 === 0 ? randomTree(r, 1 + r.below(12), 1 + r.below(3), 8 + r.below(24)) : flavoredTree(r);
      if (tree.shortfall.size === 0) continue;
      const chosen = chooseVictims(tree.shortfall, tree.eligible, 'exact');
      const expected = firstOfEverySubset(tree);
      expect(chosen && { ...chosen, victims: chosen.victims.map((v) => v.consumer).sort() }, `seed ${seed}`).toEqual(
        expected && { ...expected, victims: expected.victims.map((v) => v.consumer).sort() },
      );
      if (new Set(tree.eligible.map((v) => `${v.priority}|${[...v.uses].join()}`)).size < tree.eligible.length) alike += 1;
      // The cost bound the search skips trees by: null exactly when no set covers, else at or below the best set on
      // every figure, and never ranking after the best set (a tree with the best is never skipped).
      const bound = costBound(tree.shortfall, useStatsOf(tree.eligible));
      expect(bound === null, `seed ${seed}`).toBe(expected === null);
      if (bound && expected) {
        const { cost } = expected;
        expect(bound.cost.highest_priority, `seed ${seed}`).toBeLessThanOrEqual(cost.highest_priority);
        expect(bound.cost.priority_sum, `seed ${seed}`).toBeLessThanOrEqual(cost.priority_sum);
        expect(bound.cost.victims, `seed ${seed}`).toBeLessThanOrEqual(cost.victims);
        expect(bound.cost.left_over, `seed ${seed}`).toBeLessThanOrEqual(cost.left_over);
        expect(ranksAfter(bound, expected), `seed ${seed}`).toBe(false);
      }
    }
    expect(alike).toBeGreaterThan(1000);
  });
});

describe('victims, greedy with reverse minimization (up to 200 eligible)', () => {
  it('is always minimal and at least 95% within one victim of the optimum', () => {
    let compared = 0;
    let withinOne = 0;
    let exactCount = 0;
    for (let seed = 1001; seed <= 1300; seed += 1) {
      const r = seeded(seed);
      const tree = randomTree(r, 17 + r.below(184), 1 + r.below(2), 64 + r.below(64));
      const chosen = chooseVictims(tree.shortfall, tree.eligible, 'greedy');
      if (tree.shortfall.size === 0) {
        expect(chosen?.victims, `seed ${seed}`).toEqual([]);
        continue;
      }
      const optimum = optimumByDp(tree);
      if (!optimum) {
        expect(chosen, `seed ${seed}`).toBeNull();
        continue;
      }
      expect(chosen, `seed ${seed}`).not.toBeNull();
      expect(covers(chosen!.victims, tree.shortfall), `seed ${seed}`).toBe(true);
      expect(isMinimal(chosen!.victims, tree.shortfall), `seed ${seed}`).toBe(true);
      // Never below the optimum (the DP is right), and the same highest priority (greedy takes lowest first).
      expect(chosen!.cost.highest_priority, `seed ${seed}`).toBe(optimum.highest);
      expect(chosen!.cost.priority_sum, `seed ${seed}`).toBeGreaterThanOrEqual(optimum.sum);
      compared += 1;
      if (chosen!.victims.length <= optimum.count + 1) withinOne += 1;
      if (chosen!.victims.length === optimum.count) exactCount += 1;
    }
    console.log(`greedy: ${withinOne}/${compared} within one victim, ${exactCount} with the optimum's count`);
    expect(compared).toBeGreaterThan(150);
    expect(withinOne / compared).toBeGreaterThanOrEqual(0.95);
  });
});
