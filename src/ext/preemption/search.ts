// GET /ext/preemption_candidates: allocation candidates for a preemptor of
// priority P, each with the consumers to evict so it fits and their cost.
//
// The candidates engine runs unchanged (its public entry, over a model built
// whole: searchEveryTreeOfModel) on the cloud as it would be with every
// consumer below P gone: any request that fits after some evictions fits
// there too. Each request it finds is then judged against the real usage:
// its shortfall per (provider, class) and the best victim set covering it
// (victims.ts: exact up to EXACT_LIMIT evictable consumers in the tree, else
// greedy with reverse minimization). Requests needing none come first, then
// by the victims' cost. Placement's own rules (traits, aggregates, nesting,
// units, suffixes) are the engine's; the read hooks' state (taints, holds,
// counters) is read as empty here and applied again by the claim itself;
// what holds hold (earlier nominations among them) counts as taken, and the
// victims of earlier preemptions as going.
import type { BatchReader } from '../../db/client.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import type { Microversion } from '../../microversion.js';
import {
  type CandidateOptions,
  type CandidatesBody,
  type FullSearch,
  findAllocationCandidates,
  searchEveryTreeOfModel,
} from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import { presentCandidates } from '../../placement/candidates/present/index.js';
import type { Usage } from '../../placement/candidates/cloud-model.js';
import type { AllocationRequest } from '../../placement/candidates/search.js';
import { MV } from '../../placement/versions.js';
import { addTo, type AllocationIndexes, type EvictableConsumer, type PreemptionCloud, readPreemptionCloud } from './cloud.js';
import {
  byId,
  chooseVictims,
  compareChoices,
  costBound,
  ranksAfter,
  useStatsOf,
  EXACT_LIMIT,
  NO_VICTIMS_COST,
  type Eligible,
  type Method,
  type ResourceKey,
  resourceKey,
  type VictimChoice,
  type VictimCost,
} from './victims.js';

/** Most requests judged per tree (a nested tree offers many equivalent ones). */
export const REQUESTS_PER_TREE = 32;

export interface VictimView {
  consumer_uuid: string;
  project_id: string;
  priority: number;
  consumer_generation: number;
  /** Everything it holds (an eviction frees all of it): provider uuid -> class -> units. */
  frees: Record<string, { resources: Record<string, number> }>;
}

export interface PreemptionCandidatesBody {
  allocation_requests: (CandidatesBody['allocation_requests'][number] & { victims: VictimView[]; cost: VictimCost; method: Method })[];
  provider_summaries: CandidatesBody['provider_summaries'];
  preemption: { priority: number; exact_limit: number; methods: Method[] };
}

interface Judged {
  request: AllocationRequest;
  choice: VictimChoice;
  method: Method;
  root: number;
}

export async function findPreemptionCandidates(
  reader: BatchReader,
  indexes: AllocationIndexes,
  held: SetAsideConstraint,
  request: CandidateRequest,
  priority: number,
  mv: Microversion,
  options: CandidateOptions,
  nowMs: number,
): Promise<PreemptionCandidatesBody> {
  // Victim-free requests come first: when the stock search alone fills `limit`, it is the answer. Its
  // first pass over the lowest trees is tried first; the whole stock search only when the judged
  // answer shows it might fill the limit: without holds, the stock search's victim-free requests are
  // among the judged ones (it counts the victims going as taken and applies the read hooks, this one
  // neither); with holds their rule is the holds' own, and the stock search runs as it always did.
  const stockFills = async (firstPassOnly: boolean): Promise<CandidatesBody | null> => {
    const stock = await findAllocationCandidates(reader, request, mv, { ...options, firstPassOnly });
    return stock.allocation_requests.length >= request.limit! ? stock : null;
  };
  const quick = request.limit === null ? null : await stockFills(true);
  if (quick) return withoutVictims(quick, priority);
  const cloud = await readPreemptionCloud(reader, indexes, held, priority, nowMs, options);
  const { kept, nodes, capped, victimFree } = await judgeEveryTree(cloud, request, mv, options);
  // Presented before any other read: the trees kept in memory may move on meanwhile.
  const answer = present(cloud, nodes, kept, request, priority, mv);
  if (request.limit !== null && (cloud.held || capped || victimFree >= request.limit)) {
    const stock = await stockFills(false);
    if (stock) return withoutVictims(stock, priority);
  }
  return answer;
}

/** The answer over a cloud read for priority `priority`: every tree's requests judged, the best first. */
export async function answerOver(
  cloud: PreemptionCloud,
  request: CandidateRequest,
  priority: number,
  mv: Microversion,
  options: CandidateOptions,
): Promise<PreemptionCandidatesBody> {
  const { kept, nodes } = await judgeEveryTree(cloud, request, mv, options);
  return present(cloud, nodes, kept, request, priority, mv);
}

const byCostThenTree = (a: Judged, b: Judged) => compareChoices(a.choice, b.choice) || a.root - b.root;

/** The first `n` of what is offered, as a stable sort by `order` would put them, without sorting them all. */
class FirstInOrder<T> {
  readonly items: T[] = [];

  constructor(
    private readonly n: number,
    private readonly order: (a: T, b: T) => number,
  ) {}

  /** The last of the first `n`, once there are `n`: what a newcomer must rank before. */
  get last(): T | undefined {
    return this.n > 0 && this.items.length === this.n ? this.items[this.n - 1] : undefined;
  }

  offer(item: T): void {
    const first = this.items;
    if (this.n <= 0 || (first.length === this.n && this.order(item, first[this.n - 1]!) >= 0)) return;
    // After every one it does not rank before: equals keep the order they came in.
    let at = first.length;
    while (at > 0 && this.order(item, first[at - 1]!) < 0) at -= 1;
    first.splice(at, 0, item);
    if (first.length > this.n) first.pop();
  }
}

/** Every tree's requests over the cloud without the evictable consumers, each with its best victim set under the real usage. */
async function judgeEveryTree(
  cloud: PreemptionCloud,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<{ kept: Judged[]; nodes: FullSearch['nodes']; capped: boolean; victimFree: number }> {
  cloud.derived.relaxed ??= relaxedUsage(cloud.taken, cloud.evictable);
  const relaxed = cloud.derived.relaxed;
  const full = await searchEveryTreeOfModel(
    { model: cloud.model, usage: relaxed, lookups: cloud.lookups },
    { ...request, limit: null },
    mv,
    {
      ...options,
      randomize: false,
      maxCandidates: 0,
      treeCacheProviders: 0,
      trees: undefined,
      metrics: undefined,
    },
  );
  cloud.derived.byRoot ??= byRoot(cloud);
  const evictableByRoot = cloud.derived.byRoot;
  cloud.derived.statsByRoot ??= [];
  const statsByRoot = cloud.derived.statsByRoot;
  // With a limit only the first `limit` are kept, and a tree none of whose victim sets can rank
  // before the last of them is not judged (its victim-free requests always are).
  const first = request.limit === null ? null : new FirstInOrder<Judged>(request.limit, byCostThenTree);
  const judged: Judged[] = [];
  let capped = false;
  let victimFree = 0;
  for (const root of full.anchors) {
    const evictable = evictableByRoot.get(root) ?? [];
    const method: Method = evictable.length <= EXACT_LIMIT ? 'exact' : 'greedy';
    let seen = 0;
    for (const found of full.search.requests([root])) {
      if (!found) continue;
      const shortfall = shortfallOf(found, cloud);
      const last = first?.last;
      let choice: VictimChoice | null;
      if (last && shortfall.size > 0) {
        // Judged only if some victim set might rank before the last kept: its cost bound does not rank after it.
        const bound = costBound(shortfall, (statsByRoot[root] ??= useStatsOf(evictable)));
        choice = bound && !ranksAfter(bound, last.choice) ? chooseVictims(shortfall, evictable, method) : null;
      } else choice = chooseVictims(shortfall, evictable, method);
      if (choice) {
        if (choice.victims.length === 0) victimFree += 1;
        const item = { request: found, choice, method, root };
        if (first) first.offer(item);
        else judged.push(item);
      }
      seen += 1;
      if (seen >= REQUESTS_PER_TREE) {
        capped = true;
        break;
      }
    }
  }
  return { kept: first ? first.items : judged.sort(byCostThenTree), nodes: full.nodes, capped, victimFree };
}

/** Usage with every evictable consumer's allocations taken out. */
function relaxedUsage(usage: Usage, evictable: readonly EvictableConsumer[]): Usage {
  const relaxed: Usage = new Map([...usage].map(([rp, perClass]) => [rp, new Map(perClass)]));
  for (const consumer of evictable) for (const a of consumer.allocations) addTo(relaxed, a.providerId, a.classId, -a.used);
  return relaxed;
}

/** The evictable consumers of each tree (a consumer on several trees, through a sharing provider, is in each), as the rule takes them. */
function byRoot(cloud: PreemptionCloud): Map<number, Eligible[]> {
  const roots = new Map<number, Eligible[]>();
  for (const consumer of cloud.evictable) {
    const eligible: Eligible = { consumer: consumer.uuid, priority: consumer.priority, uses: consumer.uses };
    let first = -1;
    for (const a of consumer.allocations) {
      const root = cloud.model.provider(a.providerId)!.rootId;
      // Most consumers sit on one tree: only a second one needs the list searched.
      if (root === first || (first !== -1 && roots.get(root)?.at(-1) === eligible)) continue;
      if (first === -1) first = root;
      const list = roots.get(root);
      if (list) list.push(eligible);
      else roots.set(root, [eligible]);
    }
  }
  // In id order, as the exact rule takes them (it then needs no sorted copy per request).
  for (const list of roots.values()) list.sort(byId);
  return roots;
}

/** What a provider offers of a class: (total - reserved) * allocation ratio; 0 without an inventory. */
function capacityOf(cloud: PreemptionCloud, providerId: number, classId: number): number {
  for (const inventory of cloud.model.provider(providerId)?.inventories ?? []) if (inventory.classId === classId) return inventory.capacity;
  return 0;
}

/** Per (provider, class) the request uses: how much more than what is free now it needs. */
function shortfallOf(found: AllocationRequest, cloud: PreemptionCloud): Map<ResourceKey, number> {
  const shortfall = new Map<ResourceKey, number>();
  const pieces = found.pieces;
  // A request has few pieces: each (provider, class) is summed at its first piece, without a map of keys.
  for (let i = 0; i < pieces.length; i += 1) {
    const { providerId, classId } = pieces[i]!;
    let first = true;
    for (let j = 0; j < i && first; j += 1) first = pieces[j]!.providerId !== providerId || pieces[j]!.classId !== classId;
    if (!first) continue;
    let amount = 0;
    for (let j = i; j < pieces.length; j += 1)
      if (pieces[j]!.providerId === providerId && pieces[j]!.classId === classId) amount += pieces[j]!.amount;
    const used = cloud.taken.get(providerId)?.get(classId) ?? 0;
    const short = used + amount - capacityOf(cloud, providerId, classId);
    if (short > 0) shortfall.set(resourceKey(providerId, classId), short);
  }
  return shortfall;
}

function present(
  cloud: PreemptionCloud,
  nodes: FullSearch['nodes'],
  judged: readonly Judged[],
  request: CandidateRequest,
  priority: number,
  mv: Microversion,
): PreemptionCandidatesBody {
  const body = presentCandidates(
    judged.map((j) => j.request),
    nodes,
    cloud.usage,
    cloud.classNameById,
    new Set(request.groups.flatMap((g) => [...g.resources.keys()])),
    {
      nestedAware: mv.atLeast(MV.AC_NESTED),
      allResources: mv.atLeast(MV.AC_ALL_RESOURCES_IN_SUMMARY),
      withTraits: mv.atLeast(MV.AC_REQUIRED),
      dictShape: mv.atLeast(MV.ALLOC_DICT),
      withMappings: mv.atLeast(MV.MAPPINGS),
    },
  );
  cloud.derived.byUuid ??= new Map(cloud.evictable.map((c) => [c.uuid, c]));
  const byUuid = cloud.derived.byUuid;
  return {
    allocation_requests: body.allocation_requests.map((shown, i) => {
      const { choice, method } = judged[i]!;
      return { ...shown, victims: choice.victims.map((v) => victimView(byUuid.get(v.consumer)!, cloud)), cost: choice.cost, method };
    }),
    provider_summaries: body.provider_summaries,
    preemption: { priority, exact_limit: EXACT_LIMIT, methods: [...new Set(judged.map((j) => j.method))].sort() },
  };
}

/** The stock answer as a preemption answer: every request without victims. */
function withoutVictims(stock: CandidatesBody, priority: number): PreemptionCandidatesBody {
  return {
    allocation_requests: stock.allocation_requests.map((shown) => ({
      ...shown,
      victims: [],
      cost: NO_VICTIMS_COST,
      method: 'exact' as const,
    })),
    provider_summaries: stock.provider_summaries,
    preemption: { priority, exact_limit: EXACT_LIMIT, methods: stock.allocation_requests.length ? ['exact'] : [] },
  };
}

function victimView(consumer: EvictableConsumer, cloud: PreemptionCloud): VictimView {
  const frees: VictimView['frees'] = {};
  for (const a of consumer.allocations) {
    const resources = (frees[cloud.model.provider(a.providerId)!.uuid] ??= { resources: {} }).resources;
    const name = cloud.classNameById.get(a.classId)!;
    resources[name] = (resources[name] ?? 0) + a.used;
  }
  return {
    consumer_uuid: consumer.uuid,
    project_id: consumer.project,
    priority: consumer.priority,
    consumer_generation: consumer.generation,
    frees,
  };
}
