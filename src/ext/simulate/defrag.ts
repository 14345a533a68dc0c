// GET /ext/defrag?<query>&count=K&max_moves=M: a plan of at most M moves
// (consumer, from, to), each a valid claim in sequence, after which the query
// has at least K allocation candidates; fewest moves first, then fewest
// resources moved. Consumers with a lease or drawing from a hold stay unless
// move_leased=true.
//
// How: a move can only add candidates on the tree it frees, so the plan is
// a choice of target trees (those that could take the query if emptied) and,
// per target, the smallest set of its consumers whose leaving adds
// candidates there (every subset up to four consumers, by size then units;
// larger sets grow the best one). Targets are combined by a small knapsack
// (fewest moves, then units), then each evicted consumer takes the tightest
// destination outside the targets that costs no candidate elsewhere, checked
// by the engine over the moved cloud. If a destination is missing or the
// final count falls short, the target is set aside and the choice made again.
import type { BatchReader } from '../../db/client.js';
import { invalid } from '../../errors.js';
import { Microversion } from '../../microversion.js';
import type { CandidateOptions } from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import { MAX_VERSION } from '../../placement/versions.js';
import { candidatesOver, type EngineView, engineView, headroomOver, type WhatIfEngine } from './engine-adapter.js';
import { readWorld } from './snapshot.js';
import {
  type AllocationsBody,
  allocationsBody,
  amountsOf,
  type UsageTable,
  usageOf,
  type World,
  type WorldAllocation,
  type WorldConsumer,
  type WorldProvider,
} from './world.js';

const LATEST = Microversion.parse(MAX_VERSION)!;
/** Most target trees weighed (those with the fewest units of the query's classes to move first). */
const MAX_TARGETS = 64;
/** Subsets of a target's consumers tried exhaustively up to this size. */
const EXHAUSTIVE = 4;
/** Candidates weighed as a consumer's destination. */
const DESTINATIONS = 256;
/** Most moves a plan may be asked for. */
export const MAX_MOVES = 64;

export interface DefragMove {
  consumer_uuid: string;
  project_id: string;
  user_id: string;
  consumer_type: string | null;
  /** The consumer's generation when the plan was made (each consumer moves once: POST /allocations takes it as is). */
  consumer_generation: number;
  from: AllocationsBody;
  to: AllocationsBody;
}

export interface DefragPlan {
  count: number;
  max_moves: number;
  candidates_before: number;
  /** Candidates once every move is made (the engine's count over the moved cloud). */
  candidates_after: number;
  /** Whether the plan reaches `count` within max_moves; false: no moves (none found). */
  feasible: boolean;
  moves: DefragMove[];
  /** Units moved per class, added up over the moves. */
  resources_moved: Record<string, number>;
}

interface DefragParams {
  count: number;
  maxMoves: number;
  moveLeased: boolean;
}

const DEFRAG_KEYS = ['count', 'max_moves', 'move_leased'] as const;

function intParam(query: Record<string, string[]>, key: string, fallback: number, max: number): number {
  const values = query[key];
  if (!values) return fallback;
  const raw = values.at(-1)!;
  if (values.length !== 1 || !/^[0-9]+$/.test(raw) || Number(raw) > max) {
    throw invalid(`Invalid query string parameters: '${key}' must be an integer from 0 to ${max}, got '${raw.slice(0, 20)}'`);
  }
  return Number(raw);
}

/** Splits the defrag parameters off the query; the rest is an allocation-candidates query (its errors are the engine's own). */
export function parseDefragQuery(
  query: Record<string, string[]>,
  mv: Microversion,
  engine: WhatIfEngine,
): { params: DefragParams; request: CandidateRequest } {
  const params: DefragParams = {
    count: intParam(query, 'count', 1, 100_000),
    maxMoves: intParam(query, 'max_moves', 3, MAX_MOVES),
    moveLeased: (query.move_leased?.at(-1) ?? 'false') === 'true',
  };
  if (query.move_leased && !['true', 'false'].includes(query.move_leased.at(-1)!)) {
    throw invalid("Invalid query string parameters: 'move_leased' must be true or false");
  }
  const rest: Record<string, string[]> = {};
  for (const [key, values] of Object.entries(query)) if (!(DEFRAG_KEYS as readonly string[]).includes(key)) rest[key] = values;
  const request = engine.parse(rest, mv);
  request.limit = null;
  return { params, request };
}

/** Provider uuids of an allocation request in either shape (dict from 1.12, list before). */
function uuidsOf(request: unknown): string[] {
  const allocations = (request as { allocations: unknown }).allocations;
  if (Array.isArray(allocations)) return allocations.map((a) => (a as { resource_provider: { uuid: string } }).resource_provider.uuid);
  return Object.keys(allocations as object);
}

/**
 * A usage table that reads through to `base` and keeps its own copy of only
 * the providers a trial changes: a trial move costs what it touches, not a
 * copy of the whole cloud's usage (the engine only reads it with get()).
 */
class UsageOverlay extends Map<number, Map<number, number>> {
  constructor(private readonly base: UsageTable) {
    super();
  }

  override get(providerId: number): Map<number, number> | undefined {
    return super.get(providerId) ?? this.base.get(providerId);
  }

  override has(providerId: number): boolean {
    return super.has(providerId) || this.base.has(providerId);
  }

  /** This overlay's own per-class map of the provider, copied from the base on first write. */
  own(providerId: number): Map<number, number> {
    let perClass = super.get(providerId);
    if (!perClass) super.set(providerId, (perClass = new Map(this.base.get(providerId) ?? [])));
    return perClass;
  }
}

function addAllocations(usage: UsageOverlay, rows: readonly WorldAllocation[], sign: 1 | -1): void {
  for (const a of rows) {
    const perClass = usage.own(a.providerId);
    perClass.set(a.classId, (perClass.get(a.classId) ?? 0) + sign * a.used);
  }
}

const copyUsage = (usage: UsageTable): UsageOverlay => new UsageOverlay(usage);
const unitsOf = (c: WorldConsumer): number => c.allocations.reduce((sum, a) => sum + a.used, 0);

interface Eviction {
  consumers: WorldConsumer[];
  gain: number;
  units: number;
}

class Planner {
  private readonly view: EngineView;
  private readonly subViews = new Map<number, { view: EngineView; uuids: Set<string> }>();
  private readonly rootOfUuid = new Map<string, number>();
  private readonly sharingRoots: Set<number>;
  /** Providers by root, and those of the sharing providers' trees (every sub-model carries them). */
  private readonly treeOf = new Map<number, WorldProvider[]>();
  private readonly sharingTrees: WorldProvider[];

  constructor(
    private readonly world: World,
    private readonly request: CandidateRequest,
    private readonly mv: Microversion,
    private readonly engine: WhatIfEngine,
    private readonly options: CandidateOptions = engine.options(),
  ) {
    this.view = engineView(world, engine.hooks);
    for (const p of world.providers.values()) this.rootOfUuid.set(p.uuid, p.rootId);
    this.sharingRoots = new Set(
      [...world.providers.values()].filter((p) => p.traits.includes('MISC_SHARES_VIA_AGGREGATE')).map((p) => p.rootId),
    );
    for (const p of world.providers.values()) {
      const tree = this.treeOf.get(p.rootId);
      if (tree) tree.push(p);
      else this.treeOf.set(p.rootId, [p]);
    }
    this.sharingTrees = [...this.sharingRoots].flatMap((root) => this.treeOf.get(root) ?? []);
  }

  async count(usage: UsageTable): Promise<number> {
    return (await candidatesOver(this.view, usage, this.request, this.mv, this.options)).allocation_requests.length;
  }

  /**
   * Trees (roots) that can take the query under `usage`, with how many claims of it
   * (the engine's headroom: a tree is listed exactly when it anchors a candidate).
   */
  async perTree(usage: UsageTable): Promise<Map<number, number>> {
    const headroom = await headroomOver(this.view, usage, this.request, this.mv, this.options);
    return new Map(headroom.trees.map((t) => [this.rootOfUuid.get(t.root_provider_uuid)!, t.count]));
  }

  /** Candidates the query has on `root`'s tree under `usage` (a model of that tree and the sharing providers only). */
  async countIn(root: number, usage: UsageTable): Promise<number> {
    let sub = this.subViews.get(root);
    if (!sub) {
      const providers = new Map<number, WorldProvider>();
      for (const p of [...(this.treeOf.get(root) ?? []), ...this.sharingTrees]) providers.set(p.id, p);
      const taints = new Map<number, string[]>();
      for (const id of providers.keys()) {
        const keys = this.world.taints.get(id);
        if (keys) taints.set(id, keys);
      }
      sub = {
        view: engineView({ ...this.world, providers, taints }, this.engine.hooks),
        uuids: new Set([...providers.values()].filter((p) => p.rootId === root).map((p) => p.uuid)),
      };
      this.subViews.set(root, sub);
    }
    const body = await candidatesOver(sub.view, usage, this.request, this.mv, this.options);
    const uuids = sub.uuids;
    return body.allocation_requests.filter((r) => uuidsOf(r).some((u) => uuids.has(u))).length;
  }

  /** Per consumer count up to `maxMoves`: the best eviction from `root` of that many consumers (most gain... fewest units), where it adds candidates. */
  async evictions(root: number, movable: WorldConsumer[], usage: UsageTable, maxMoves: number): Promise<Eviction[]> {
    const base = await this.countIn(root, usage);
    const best: Eviction[] = [];
    const sizeLimit = Math.min(maxMoves, movable.length);
    const tryOne = async (set: WorldConsumer[]) => {
      const trial = copyUsage(usage);
      for (const c of set) addAllocations(trial, c.allocations, -1);
      const gain = (await this.countIn(root, trial)) - base;
      if (gain <= 0) return;
      const units = set.reduce((sum, c) => sum + unitsOf(c), 0);
      const seen = best[set.length];
      if (!seen || gain > seen.gain || (gain === seen.gain && units < seen.units)) best[set.length] = { consumers: set, gain, units };
    };
    // Every subset up to EXHAUSTIVE (fewer when the tree holds many consumers), smallest first.
    const exhaustive = Math.min(sizeLimit, movable.length > 16 ? 2 : EXHAUSTIVE);
    const pick = async (start: number, set: WorldConsumer[], size: number): Promise<void> => {
      if (set.length === size) return tryOne(set);
      for (let i = start; i < movable.length; i += 1) await pick(i + 1, [...set, movable[i]!], size);
    };
    for (let size = 1; size <= exhaustive; size += 1) await pick(0, [], size);
    // Larger sets: grow the best set found (or the largest consumers) one consumer at a time.
    let grown = best[exhaustive]?.consumers ?? [...movable].sort((a, b) => unitsOf(b) - unitsOf(a)).slice(0, exhaustive);
    for (let size = exhaustive + 1; size <= sizeLimit; size += 1) {
      const rest = movable.filter((c) => !grown.includes(c)).sort((a, b) => unitsOf(b) - unitsOf(a));
      if (!rest.length) break;
      grown = [...grown, rest[0]!];
      await tryOne(grown);
    }
    return best.filter(Boolean);
  }

  /**
   * The tightest place for `consumer` outside `avoid` (trees) under `usage`
   * that takes no candidate of the query from the tree it lands on; null when none.
   */
  async destination(consumer: WorldConsumer, usage: UsageTable, avoid: ReadonlySet<number>): Promise<WorldAllocation[] | null> {
    const amounts = amountsOf(this.world, consumer);
    // The first DESTINATIONS candidates in stable order are weighed (best fit among them).
    const query = `resources=${[...amounts].map(([name, n]) => `${name}:${n}`).join(',')}&limit=${DESTINATIONS}`;
    const request = this.engine.parse(Object.fromEntries([...new URLSearchParams(query)].map(([k, v]) => [k, [v]])), LATEST);
    const trial = copyUsage(usage);
    addAllocations(trial, consumer.allocations, -1);
    const body = await candidatesOver(this.view, trial, request, LATEST, this.options);
    const idOfUuid = (uuid: string) => this.idOf(uuid);
    const options: { rows: WorldAllocation[]; roots: Set<number>; slack: number }[] = [];
    for (const r of body.allocation_requests as { allocations: AllocationsBody }[]) {
      const rows: WorldAllocation[] = [];
      for (const [uuid, { resources }] of Object.entries(r.allocations)) {
        for (const [name, used] of Object.entries(resources))
          rows.push({ providerId: idOfUuid(uuid), classId: this.world.classIdByName.get(name)!, used });
      }
      const roots = new Set(rows.map((a) => this.world.providers.get(a.providerId)!.rootId));
      if ([...roots].some((root) => avoid.has(root))) continue;
      // Best fit: the least room left on the providers it lands on.
      let slack = 0;
      for (const a of rows) {
        const inv = this.world.providers.get(a.providerId)!.inventories.find((i) => i.classId === a.classId)!;
        const capacity = Math.floor((inv.total - inv.reserved) * inv.allocationRatio);
        slack += (capacity - (trial.get(a.providerId)?.get(a.classId) ?? 0) - a.used) / Math.max(1, capacity);
      }
      options.push({ rows, roots, slack });
    }
    options.sort((a, b) => a.slack - b.slack);
    for (const option of options.slice(0, 16)) {
      const after = copyUsage(trial);
      addAllocations(after, option.rows, 1);
      let costs = false;
      for (const root of option.roots) {
        if (this.sharingRoots.has(root)) continue;
        if ((await this.countIn(root, after)) < (await this.countIn(root, trial))) costs = true;
      }
      if (!costs) return option.rows;
    }
    return null;
  }

  private readonly idByUuid = new Map<string, number>();
  private idOf(uuid: string): number {
    if (!this.idByUuid.size) for (const p of this.world.providers.values()) this.idByUuid.set(p.uuid, p.id);
    return this.idByUuid.get(uuid)!;
  }
}

function movedPerClass(moves: readonly DefragMove[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of moves)
    for (const { resources } of Object.values(m.from)) for (const [cls, n] of Object.entries(resources)) out[cls] = (out[cls] ?? 0) + n;
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Fewest moves reaching `need` gain (then fewest units): a knapsack over one eviction per target. */
function choose(options: Map<number, Eviction[]>, need: number, maxMoves: number): [number, Eviction][] | null {
  interface State {
    gain: number;
    units: number;
    picks: [number, Eviction][];
  }
  // best[m]: the most gain (then fewest units) with exactly m moves, over the targets seen.
  let best: (State | null)[] = Array.from({ length: maxMoves + 1 }, (_, m) => (m === 0 ? { gain: 0, units: 0, picks: [] } : null));
  for (const [root, evictions] of options) {
    const next = best.map((s) => (s ? { ...s } : null));
    for (let m = 0; m <= maxMoves; m += 1) {
      const from = best[m];
      if (!from) continue;
      for (const e of evictions) {
        const to = m + e.consumers.length;
        if (to > maxMoves) continue;
        const candidate = {
          gain: from.gain + e.gain,
          units: from.units + e.units,
          picks: [...from.picks, [root, e] as [number, Eviction]],
        };
        const seen = next[to];
        const capped = (g: number) => Math.min(g, need);
        if (
          !seen ||
          capped(candidate.gain) > capped(seen.gain) ||
          (capped(candidate.gain) === capped(seen.gain) && candidate.units < seen.units)
        ) {
          next[to] = candidate;
        }
      }
    }
    best = next;
  }
  for (let m = 1; m <= maxMoves; m += 1) if (best[m] && best[m]!.gain >= need) return best[m]!.picks;
  return null;
}

export async function defragPlan(
  reader: BatchReader,
  query: Record<string, string[]>,
  mv: Microversion,
  engine: WhatIfEngine,
): Promise<DefragPlan> {
  const { params, request } = parseDefragQuery(query, mv, engine);
  const world = await readWorld(reader, engine.hooks);
  return planOver(world, request, params, mv, engine);
}

export async function planOver(
  world: World,
  request: CandidateRequest,
  params: DefragParams,
  mv: Microversion,
  engine: WhatIfEngine,
): Promise<DefragPlan> {
  const planner = new Planner(world, request, mv, engine);
  const usage = usageOf(world);
  const before = await planner.count(usage);
  const answer = (moves: DefragMove[], after: number, feasible: boolean): DefragPlan => ({
    count: params.count,
    max_moves: params.maxMoves,
    candidates_before: before,
    candidates_after: after,
    feasible,
    moves,
    resources_moved: movedPerClass(moves),
  });
  if (before >= params.count) return answer([], before, true);
  if (params.maxMoves === 0) return answer([], before, false);
  // A consumer with a lease, or drawing from a hold (ext_hold), stays where it is unless asked.
  const movable = [...world.consumers.values()].filter(
    (c) => c.allocations.length > 0 && (params.moveLeased || (!c.leased && c.drawnFrom === null)),
  );
  // Targets: trees that could take more of the query were every movable consumer gone.
  const fixed = copyUsage(usage);
  for (const c of movable) addAllocations(fixed, c.allocations, -1);
  const possible = await planner.perTree(fixed);
  const now = await planner.perTree(usage);
  const requested = new Set(request.groups.flatMap((g) => [...g.resources.keys()].map((name) => world.classIdByName.get(name))));
  const onTree = new Map<number, WorldConsumer[]>();
  for (const c of movable) {
    const roots = new Set(c.allocations.map((a) => world.providers.get(a.providerId)?.rootId));
    for (const root of roots) {
      if (root === undefined || !possible.has(root)) continue;
      // Only consumers holding a class the query asks for on this tree can make room for it.
      if (!c.allocations.some((a) => world.providers.get(a.providerId)?.rootId === root && requested.has(a.classId))) continue;
      const list = onTree.get(root);
      if (list) list.push(c);
      else onTree.set(root, [c]);
    }
  }
  const unitsOn = (root: number) => (onTree.get(root) ?? []).reduce((sum, c) => sum + unitsOf(c), 0);
  const targets = [...possible.keys()]
    .filter((root) => (possible.get(root) ?? 0) > (now.get(root) ?? 0) && onTree.has(root))
    .sort((a, b) => unitsOn(a) - unitsOn(b) || a - b)
    .slice(0, MAX_TARGETS);
  const evictions = new Map<number, Eviction[]>();
  for (const root of targets) {
    const found = await planner.evictions(root, onTree.get(root)!, usage, params.maxMoves);
    if (found.length) evictions.set(root, found);
  }
  const need = params.count - before;
  for (let attempt = 0; attempt < 8 && evictions.size; attempt += 1) {
    const picks = choose(evictions, need, params.maxMoves);
    if (!picks) break;
    const avoid = new Set(picks.map(([root]) => root));
    const moving = copyUsage(usage);
    const moves: DefragMove[] = [];
    let failedAt: number | null = null;
    for (const [root, eviction] of picks) {
      for (const consumer of [...eviction.consumers].sort((a, b) => unitsOf(b) - unitsOf(a) || (a.uuid < b.uuid ? -1 : 1))) {
        const to = await planner.destination(consumer, moving, avoid);
        if (!to) {
          failedAt = root;
          break;
        }
        addAllocations(moving, consumer.allocations, -1);
        addAllocations(moving, to, 1);
        moves.push({
          consumer_uuid: consumer.uuid,
          project_id: consumer.projectId,
          user_id: consumer.userId,
          consumer_type: consumer.consumerType,
          consumer_generation: consumer.generation,
          from: allocationsBody(world, consumer.allocations),
          to: allocationsBody(world, to),
        });
      }
      if (failedAt !== null) break;
    }
    if (failedAt === null) {
      const after = await planner.count(moving);
      if (after >= params.count) return answer(moves, after, true);
      // Moves interfered (a shared provider, a destination counted twice): set the largest pick aside and choose again.
      failedAt = picks[picks.length - 1]![0];
    }
    evictions.delete(failedAt);
  }
  return answer([], before, false);
}
