// The rules that decide, each stated once, over the provider-tree model
// (cloud-model.ts), whichever way the model was filled (the shared cache, or a
// request's partial model of the trees the SQL prefilter kept):
// - viable trees (planTrees): the tree-level conditions of TreePrefilter,
//   each necessary, never sufficient (the search applies the exact rules);
// - candidate rows (candidatesOf): inventories of a requested class where the
//   smallest amount asked could fit beside current usage, leaving out
//   providers with a forbidden trait (single group);
// - sharing anchors: the trees a sharing provider shares an aggregate with;
// - which trees can anchor a candidate at all (coversEveryClass).
import type { CandidateInventories, CloudModel, Inventory, ModelProvider, TreePrefilter, Usage } from './cloud-model.js';
import type { ResolvedGroup } from './search.js';

/** Smallest and largest amount per requested class name across groups. */
export type Amounts = ReadonlyMap<string, { smallest: number; largest: number }>;

/** The trees one request reads: its viable trees and what sharing providers bring. */
export interface TreePlan {
  viable: number[];
  /** With `firstRoots`: the highest viable root kept when there may be more above it. */
  truncatedAt: number | null;
  /** Every root whose trees may be summarised: viable, sharing providers' own, and their anchors. */
  reads: Set<number>;
}

/**
 * The viable roots (each TreePrefilter condition), in id order, the first
 * `firstRoots` only when given. `aggregateIds` resolves member_of uuids;
 * `guessing` (before a batch, from the model's memory of aggregates) leaves
 * out a condition naming a uuid it cannot resolve, which only widens the plan.
 */
export function planTrees(
  model: CloudModel,
  classes: readonly string[],
  amounts: Amounts,
  prefilter: TreePrefilter,
  aggregateIds: ReadonlyMap<string, number>,
  guessing: boolean,
  firstRoots: number | null,
): TreePlan {
  const sharing = [...model.sharing()].flatMap((id) => model.provider(id) ?? []);
  const tests: ((root: number, members: readonly ModelProvider[]) => boolean)[] = [];
  for (const anyOf of prefilter.requiredAnyOf) {
    // A sharing provider with one of the traits could satisfy any tree.
    if (sharing.some((s) => anyOf.some((t) => s.traits.has(t)))) continue;
    tests.push((_, members) => {
      for (const m of members) for (const t of anyOf) if (m.traits.has(t)) return true;
      return false;
    });
  }
  for (const anyOf of prefilter.memberOf) {
    // Guessing, an unknown uuid may be a new aggregate: leave the condition out.
    if (guessing && anyOf.some((uuid) => !aggregateIds.has(uuid))) continue;
    const ids = anyOf.flatMap((uuid) => aggregateIds.get(uuid) ?? []);
    tests.push((_, members) => {
      for (const m of members) for (const id of ids) if (m.aggregates.has(id)) return true;
      return false;
    });
  }
  if (prefilter.rootRequired.length) {
    tests.push((root) => {
      const traits = model.provider(root)?.traits;
      return traits !== undefined && prefilter.rootRequired.every((t) => traits.has(t));
    });
  }
  // The classes no sharing provider offers: a tree must offer each with room for the smallest amount.
  const unshared = (names: readonly string[]) =>
    names.filter((name) => !sharing.some((s) => s.inventories.some((inv) => inv.className === name)));
  // Each class with its amounts looked up once, not once per tree. (Hot: one test per tree and class; plain loops.)
  const needOf = (name: string): Need => ({ name, ...amounts.get(name)! });
  const offersAll = (members: readonly ModelProvider[], needs: readonly Need[]) => {
    for (const need of needs) if (!offers(members, need)) return false;
    return true;
  };
  if (prefilter.everyClassInTree) {
    const cover = unshared(classes).map(needOf);
    if (cover.length) tests.push((_, members) => offersAll(members, cover));
  }
  if (prefilter.someClassSetInTree?.length) {
    // Alternatives (alternatives.ts): every class of one variant.
    const sets = prefilter.someClassSetInTree.map(unshared);
    if (sets.every((set) => set.length)) {
      const needs = sets.map((set) => set.map(needOf));
      tests.push((_, members) => needs.some((set) => offersAll(members, set)));
    }
  }
  if (prefilter.rootForbidden.length) {
    tests.push((root) => {
      const traits = model.provider(root)?.traits;
      return traits !== undefined && !prefilter.rootForbidden.some((t) => traits.has(t));
    });
  }
  const viable: number[] = [];
  const limit = firstRoots === null ? Number.POSITIVE_INFINITY : Math.floor(firstRoots);
  for (const root of model.roots()) {
    if (viable.length >= limit) break;
    const members = model.tree(root);
    let passes = true;
    for (const test of tests) {
      if (!test(root, members)) {
        passes = false;
        break;
      }
    }
    if (passes) viable.push(root);
  }
  const truncatedAt = firstRoots !== null && viable.length >= limit ? viable[viable.length - 1]! : null;
  const reads = new Set(viable);
  for (const s of sharing) {
    reads.add(s.rootId);
    if (!s.inventories.some((inv) => amounts.has(inv.className))) continue;
    for (const root of anchorsOf(model, s)) reads.add(root);
  }
  return { viable, truncatedAt, reads };
}

/** A requested class with the smallest and largest amount asked of it. */
interface Need {
  name: string;
  smallest: number;
  largest: number;
}

/** Whether a provider of the tree offers the class with room for its smallest amount, within its unit limits. */
function offers(members: readonly ModelProvider[], { name, smallest, largest }: Need): boolean {
  for (const m of members)
    for (const inv of m.inventories)
      if (inv.className === name && inv.maxUnit >= smallest && inv.minUnit <= largest && inv.capacity >= smallest) return true;
  return false;
}

/** The roots of the trees a sharing provider shares with: any provider in one of its aggregates (itself included). */
function anchorsOf(model: CloudModel, sharing: ModelProvider): Set<number> {
  const roots = new Set<number>();
  for (const agg of sharing.aggregates) {
    for (const id of model.membersOf(agg)) {
      const member = model.provider(id);
      if (member) roots.add(member.rootId);
    }
  }
  return roots;
}

/**
 * The candidate rows of the viable trees and of every sharing provider, and
 * the sharing anchors; `treeRoots`: the viable trees and the sharing
 * providers' own (their traits decide their use), which come whole.
 */
export function candidatesOf(
  model: CloudModel,
  viable: readonly number[],
  classIdByName: ReadonlyMap<string, number>,
  usage: Usage,
  forbidden: readonly string[],
  amounts: Amounts,
): { candidates: CandidateInventories; treeRoots: Set<number> } {
  // Requested classes by id, with the smallest and largest amount asked: a few, so a list scanned beats a Map.
  const wantedIds: number[] = [];
  const wantedRanges: { smallest: number; largest: number }[] = [];
  for (const [name, range] of amounts) {
    const id = classIdByName.get(name);
    if (id === undefined) continue;
    wantedIds.push(id);
    wantedRanges.push(range);
  }
  const rangeOf = (classId: number) => {
    for (let i = 0; i < wantedIds.length; i += 1) if (wantedIds[i] === classId) return wantedRanges[i];
    return undefined;
  };
  const byProvider = new Map<number, Map<number, Inventory>>();
  const rootOf = new Map<number, number>();
  // Called once per provider (the viable trees are distinct, a sharing provider is added unless it was).
  const addRows = (provider: ModelProvider) => {
    // A provider with a forbidden trait can never be used, sharing or not.
    if (forbidden.length && forbidden.some((t) => provider.traits.has(t))) return;
    // Its usage looked up once, not once per inventory. (Hot: one call per provider of every viable tree.)
    const providerUsage = usage.get(provider.id);
    let perClass: Map<number, Inventory> | undefined;
    const { inventories } = provider;
    for (let k = 0; k < inventories.length; k += 1) {
      const inv = inventories[k]!;
      const range = rangeOf(inv.classId);
      if (!range) continue;
      const used = providerUsage?.get(inv.classId) ?? 0;
      if (inv.maxUnit < range.smallest || inv.minUnit > range.largest || inv.capacity - used < range.smallest) continue;
      if (!perClass) {
        byProvider.set(provider.id, (perClass = new Map()));
        rootOf.set(provider.id, provider.rootId);
      }
      const row: Inventory = {
        total: inv.total,
        reserved: inv.reserved,
        minUnit: inv.minUnit,
        maxUnit: inv.maxUnit,
        stepSize: inv.stepSize,
        allocationRatio: inv.allocationRatio,
        used,
      };
      perClass.set(inv.classId, row);
    }
  };
  for (const root of viable) for (const provider of model.tree(root)) addRows(provider);
  const anchorsOfSharing = new Map<number, Set<number>>();
  const treeRoots = new Set(viable);
  for (const id of model.sharing()) {
    const sharing = model.provider(id);
    if (!sharing) continue;
    treeRoots.add(sharing.rootId);
    if (!byProvider.has(id)) addRows(sharing);
    if (!sharing.inventories.some((inv) => rangeOf(inv.classId) !== undefined)) continue;
    const anchors = anchorsOf(model, sharing);
    if (anchors.size) anchorsOfSharing.set(id, anchors);
  }
  return { candidates: { byProvider, rootOf, anchorsOfSharing }, treeRoots };
}

/** The roots that may anchor a candidate: trees with a candidate row, and sharing providers' anchors. */
export function anchorRoots(candidates: CandidateInventories): Set<number> {
  const roots = new Set(candidates.rootOf.values());
  for (const anchors of candidates.anchorsOfSharing.values()) for (const root of anchors) roots.add(root);
  return roots;
}

/** coversEveryClass for alternatives (alternatives.ts): a tree that covers the classes of one variant may anchor a candidate. */
export function coversSomeVariant(candidates: CandidateInventories, variants: ResolvedGroup[][]): (root: number) => boolean {
  const tests = variants.map((groups) => coversEveryClass(candidates, groups));
  return (root) => tests.some((covers) => covers(root));
}

/**
 * A tree can only anchor a candidate if its own providers plus the sharing
 * providers it is anchored to offer every requested class: a cheap cut made
 * before any tree is searched.
 */
export function coversEveryClass(candidates: CandidateInventories, groups: ResolvedGroup[]): (root: number) => boolean {
  const needed = [...new Set(groups.flatMap((g) => g.resources.map(([classId]) => classId)))];
  // One bit per class in a number (30 classes per mask; a request naming more takes several).
  const masks: ((root: number) => boolean)[] = [];
  for (let start = 0; start < needed.length; start += 30) masks.push(coversClasses(candidates, needed.slice(start, start + 30)));
  return (root) => masks.every((covers) => covers(root));
}

/** coversEveryClass for up to 30 classes: their bits OR-ed per root, no Set per tree (a full answer at N=5000 made 5,000). */
function coversClasses(candidates: CandidateInventories, classes: number[]): (root: number) => boolean {
  const bitOf = new Map(classes.map((classId, i) => [classId, 1 << i]));
  const all = (1 << classes.length) - 1;
  const offered = new Map<number, number>();
  const maskOf = (perClass: ReadonlyMap<number, unknown> | undefined) => {
    let mask = 0;
    if (perClass) for (const classId of perClass.keys()) mask |= bitOf.get(classId) ?? 0;
    return mask;
  };
  for (const [providerId, perClass] of candidates.byProvider) {
    const root = candidates.rootOf.get(providerId)!;
    offered.set(root, (offered.get(root) ?? 0) | maskOf(perClass));
  }
  for (const [sharing, anchors] of candidates.anchorsOfSharing) {
    const mask = maskOf(candidates.byProvider.get(sharing));
    for (const anchor of anchors) offered.set(anchor, (offered.get(anchor) ?? 0) | mask);
  }
  return (root) => (offered.get(root) ?? 0) === all;
}
