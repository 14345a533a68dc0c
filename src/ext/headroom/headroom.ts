// GET /ext/headroom: for each provider tree, how many times in a row the
// request could be claimed now if every claim took the tree's first
// candidate in stable order (what a scheduler taking the first answer gets),
// whatever `limit` or the candidate cap. The search is the candidates
// engine's own (same parser, rules, taints), run over every viable tree.
//
// Why it is fast: after a claim of the first candidate, every candidate
// before it is still impossible (usage only grew) and it stays first while
// it fits, so one search step stands for floor((capacity - used) / amount)
// claims, the fewest over its pieces. A tree costs one search per distinct
// first candidate (a flat host: one; eight GPUs: eight), not one per claim.
// Each tree is counted from the usage as it is now, on its own: capacity of a
// sharing provider that several trees reach is counted in each of them.
// Shared counters (docs/extensions-gpu.md) bound the repeats as capacity does;
// so does a hook's room on a pair (holds: what claims of this request, with
// its ext_until or ext_hold, may still add there), made the capacity the
// repeats divide, so that every later search step sees it too; and
// ext_first_of counts, per tree, the claims of the alternative a scheduler
// would get each time (an H100 while one fits, then the A100 ...).
import type { BatchReader } from '../../db/client.js';
import type { Microversion } from '../../microversion.js';
import { addLoad, capacityOf, isConstraintReadHook, type LoadedKeys as LoadedCounters } from '../../placement/capacity.js';
import { type CandidateOptions, type CapacityRule, type FullSearch, searchEveryTree } from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import { type AllocationRequest, TimeBudget } from '../../placement/candidates/search.js';
import type { Inventory } from '../../placement/candidates/cloud-model.js';

export interface TreeHeadroom {
  root_provider_uuid: string;
  count: number;
}

export interface Headroom {
  total: number;
  trees: TreeHeadroom[];
  /** Present (true) only when the search ran out of PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS: counts are then lower bounds. */
  incomplete?: true;
}

export async function findHeadroom(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Headroom> {
  return headroomOfSearch(await searchEveryTree(reader, request, mv, options), options);
}

/** Headroom from a search over every viable tree (the database's, or a what-if model's: ./simulate). */
export async function headroomOfSearch(full: FullSearch, options: CandidateOptions): Promise<Headroom> {
  const { search, anchors, nodes, inventories, hooks, capacity } = full;
  // The shared counters' loads as the search's batch read them (none where no installed hook reads a provider constraint).
  const loadsHook = options.hooks?.find(isConstraintReadHook);
  const counters = (loadsHook && hooks.get(loadsHook)) ?? NO_COUNTERS;
  // The candidates' time budget, shared with the event loop as their search shares it.
  const budget = new TimeBudget(options.timeBudgetMs);
  const trees: TreeHeadroom[] = [];
  let total = 0;
  let incomplete = false;
  // Usage standing for what a hook's room leaves out of each pair's capacity, undone at the end.
  const bounded = new Map<Inventory, number>();
  try {
    for (const anchor of anchors) {
      let count = 0;
      // Each tree from the usage as it is now: its simulated claims are undone after it (a sharing provider serves several trees).
      const taken: [Inventory, number][] = [];
      const loaded: [LoadedCounters, number[]][] = [];
      for (let claim = search.firstRequestOf(anchor); claim; claim = search.firstRequestOf(anchor)) {
        if (capacity?.room) boundByRoom(claim, inventories, capacity, bounded);
        const perClaim = counterUse(claim, counters);
        const times = Math.min(repeatsOf(claim, inventories), counterRepeats(perClaim));
        for (const piece of claim.pieces) {
          const inv = inventoryOf(inventories, piece.providerId, piece.classId);
          inv.used += piece.amount * times;
          taken.push([inv, piece.amount * times]);
        }
        for (const [c, use] of perClaim) {
          const added = use.map((units) => units * times);
          for (let i = 0; i < added.length; i += 1) c.loads[i]! += added[i];
          loaded.push([c, added]);
        }
        count += times;
        const step = budget.step();
        if (step === 'spent') {
          incomplete = true;
          break;
        }
        if (step === 'pause') await budget.pause();
      }
      for (const [inv, amount] of taken) inv.used -= amount;
      for (const [c, added] of loaded) for (let i = 0; i < added.length; i += 1) c.loads[i]! -= added[i];
      if (count > 0) {
        trees.push({ root_provider_uuid: nodes.get(anchor)!.uuid, count });
        total += count;
      }
      if (incomplete) break;
    }
  } finally {
    for (const [inv, amount] of bounded) inv.used -= amount;
  }
  return incomplete ? { total, trees, incomplete: true } : { total, trees };
}

const NO_COUNTERS: ReadonlyMap<number, LoadedCounters> = new Map();

/**
 * On each pair of `claim` met for the first time, the hook's room becomes its
 * capacity: usage is added for what the room leaves out. A pair is first met
 * before any repeat lands on it (each tree's repeats are undone after it), so
 * the room is counted from the usage the batch read, as the rule counts it.
 */
function boundByRoom(
  claim: AllocationRequest,
  inventories: Map<number, Map<number, Inventory>>,
  rule: CapacityRule,
  bounded: Map<Inventory, number>,
): void {
  for (const piece of claim.pieces) {
    const inv = inventoryOf(inventories, piece.providerId, piece.classId);
    if (bounded.has(inv)) continue;
    const room = rule.room?.(piece.providerId, piece.classId);
    const outside = room === undefined ? 0 : Math.max(0, capacityOf(inv) - inv.used - room);
    inv.used += outside;
    bounded.set(inv, outside);
  }
}

function inventoryOf(inventories: Map<number, Map<number, Inventory>>, providerId: number, classId: number): Inventory {
  return inventories.get(providerId)!.get(classId)!;
}

/**
 * How many times in a row `claim` (just found to fit) fits: each piece's
 * amount (the groups' amounts on one provider and class, added up) within
 * what is left of its capacity. Min/max unit and step size are the same at
 * every repeat, so capacity alone decides.
 */
function repeatsOf(claim: AllocationRequest, inventories: Map<number, Map<number, Inventory>>): number {
  let times = Number.POSITIVE_INFINITY;
  for (const piece of claim.pieces) {
    if (piece.amount <= 0) continue;
    const inv = inventoryOf(inventories, piece.providerId, piece.classId);
    times = Math.min(times, Math.floor((capacityOf(inv) - inv.used) / piece.amount));
  }
  // The search found the claim fits once; a request of no amounts (not possible: one group has resources) counts once.
  return Number.isFinite(times) ? Math.max(1, times) : 1;
}

/** What one claim puts on each shared counter of the providers it uses (none on a cloud without counters). */
function counterUse(claim: AllocationRequest, counters: ReadonlyMap<number, LoadedCounters>): [LoadedCounters, number[]][] {
  if (counters.size === 0) return [];
  const use = new Map<LoadedCounters, number[]>();
  for (const piece of claim.pieces) {
    const c = counters.get(piece.providerId);
    if (!c?.weights.has(piece.classId)) continue;
    let units = use.get(c);
    if (!units) use.set(c, (units = c.bounds.map(() => 0)));
    addLoad(c, units, piece.classId, piece.amount);
  }
  return [...use];
}

/** How many times in a row a claim's counter use fits what its counters have left (Infinity without counters). */
function counterRepeats(perClaim: [LoadedCounters, number[]][]): number {
  let times = Number.POSITIVE_INFINITY;
  for (const [c, units] of perClaim) {
    for (let i = 0; i < units.length; i += 1) {
      if (units[i]! > 0) times = Math.min(times, Math.floor((c.bounds[i]! - c.loads[i]!) / units[i]!));
    }
  }
  // The search found the claim fits once.
  return Math.max(1, times);
}
