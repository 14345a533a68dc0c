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
import type { Usage } from '../../placement/candidates/research.js';
import type { AllocationRequest } from '../../placement/candidates/search.js';
import { MV } from '../../placement/versions.js';
import { addTo, type EvictableConsumer, type PreemptionCloud, readPreemptionCloud } from './cloud.js';
import {
  chooseVictims,
  compareChoices,
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
  const cloud = await readPreemptionCloud(reader, priority, nowMs, options);
  const { judged, nodes, capped } = await judgeEveryTree(cloud, request, mv, options);
  if (request.limit !== null && (cloud.held || capped || judged.filter((j) => j.choice.victims.length === 0).length >= request.limit)) {
    const stock = await stockFills(false);
    if (stock) return withoutVictims(stock, priority);
  }
  return ordered(cloud, nodes, judged, request, priority, mv);
}

/** The answer over a cloud read for priority `priority`: every tree's requests judged, the best first. */
export async function answerOver(
  cloud: PreemptionCloud,
  request: CandidateRequest,
  priority: number,
  mv: Microversion,
  options: CandidateOptions,
): Promise<PreemptionCandidatesBody> {
  const { judged, nodes } = await judgeEveryTree(cloud, request, mv, options);
  return ordered(cloud, nodes, judged, request, priority, mv);
}

function ordered(
  cloud: PreemptionCloud,
  nodes: FullSearch['nodes'],
  judged: Judged[],
  request: CandidateRequest,
  priority: number,
  mv: Microversion,
): PreemptionCandidatesBody {
  judged.sort((a, b) => compareChoices(a.choice, b.choice) || a.root - b.root);
  const kept = request.limit === null ? judged : judged.slice(0, request.limit);
  return present(cloud, nodes, kept, request, priority, mv);
}

/** Every tree's requests over the cloud without the evictable consumers, each with its best victim set under the real usage. */
async function judgeEveryTree(
  cloud: PreemptionCloud,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<{ judged: Judged[]; nodes: FullSearch['nodes']; capped: boolean }> {
  const relaxed = relaxedUsage(cloud.taken, cloud.evictable);
  const full = await searchEveryTreeOfModel(cloud.model, relaxed, cloud.lookups, { ...request, limit: null }, mv, {
    ...options,
    randomize: false,
    maxCandidates: 0,
    treeCacheProviders: 0,
    trees: undefined,
    metrics: undefined,
  });
  const evictableByRoot = byRoot(cloud);
  const judged: Judged[] = [];
  let capped = false;
  for (const root of full.anchors) {
    const evictable = evictableByRoot.get(root) ?? [];
    const method: Method = evictable.length <= EXACT_LIMIT ? 'exact' : 'greedy';
    let seen = 0;
    for (const found of full.search.requests([root])) {
      if (!found) continue;
      const choice = chooseVictims(shortfallOf(found, cloud), evictable, method);
      if (choice) judged.push({ request: found, choice, method, root });
      seen += 1;
      if (seen >= REQUESTS_PER_TREE) {
        capped = true;
        break;
      }
    }
  }
  return { judged, nodes: full.nodes, capped };
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
  return roots;
}

/** What a provider offers of a class: (total - reserved) * allocation ratio; 0 without an inventory. */
function capacityOf(cloud: PreemptionCloud, providerId: number, classId: number): number {
  for (const inventory of cloud.model.provider(providerId)?.inventories ?? []) if (inventory.classId === classId) return inventory.capacity;
  return 0;
}

/** Per (provider, class) the request uses: how much more than what is free now it needs. */
function shortfallOf(found: AllocationRequest, cloud: PreemptionCloud): Map<ResourceKey, number> {
  const amounts = new Map<ResourceKey, number>();
  for (const piece of found.pieces) {
    const key = resourceKey(piece.providerId, piece.classId);
    amounts.set(key, (amounts.get(key) ?? 0) + piece.amount);
  }
  const shortfall = new Map<ResourceKey, number>();
  for (const piece of found.pieces) {
    const key = resourceKey(piece.providerId, piece.classId);
    const used = cloud.taken.get(piece.providerId)?.get(piece.classId) ?? 0;
    const short = used + amounts.get(key)! - capacityOf(cloud, piece.providerId, piece.classId);
    if (short > 0) shortfall.set(key, short);
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
  const shown = new Set(judged.flatMap((j) => j.choice.victims.map((v) => v.consumer)));
  const byUuid = new Map(cloud.evictable.filter((c) => shown.has(c.uuid)).map((c) => [c.uuid, c]));
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
