// GET /allocation_candidates, end to end below HTTP (see README.md here):
//   1. names: every class, trait, aggregate and in_tree provider the request names;
//   2. research: load candidate inventories and the viable trees (research.ts;
//      1-2 round trips as a rule, 4 at most);
//   3. search: one choice per group per tree, in stable order (search.ts),
//      kept by a RequestPicker that applies `limit` and the candidate cap;
//   4. present: the answer's shape for the microversion (present/).
import type { BatchReader } from '../../db/client.js';
import type { Microversion } from '../../microversion.js';
import { serviceMetrics } from '../../observability/service.js';
import { MV } from '../versions.js';
import { badCandidateRequest } from './errors.js';
import type { CandidateRequest } from './parse.js';
import { presentCandidates, type CandidatesBody, type Presentation } from './present/index.js';
import { candidatesJson } from './present/json.js';
import { cloudModelFor } from './cloud-model.js';
import { loadFromModel } from './model-research.js';
import {
  loadCandidates,
  loadTrees,
  type CandidateInventories,
  type Lookups,
  type ProviderNode,
  type Research,
  type TreePrefilter,
  type Usage,
} from './research.js';
import { excludedProviders } from './taints.js';
import type { LoadedCounters } from '../../ext/counters/sql.js';
import { FirstOfSearch, variantsOf, type TreeSearch } from './first-of.js';
import {
  CandidateSearch,
  RequestPicker,
  type AllocationRequest,
  type GenerationStrategy,
  type ResolvedGroup,
  type SearchInput,
} from './search.js';

export type { CandidatesBody } from './present/index.js';

export interface CandidateOptions {
  randomize: boolean;
  /** Most candidates computed; 0 = no cap (placement's max_allocation_candidates). */
  maxCandidates: number;
  /** Longest one search runs, in ms, before it answers with what it found; 0 or absent = no limit. */
  timeBudgetMs?: number;
  /** Most providers whose trees are kept in memory between requests (cloud-model.ts); 0 = none. */
  treeCacheProviders: number;
  /** Now, in ms (the model rechecks an oversized cloud once a minute). */
  now: number;
  /** Tree by tree (default), or one candidate from each tree in turn. */
  generationStrategy?: GenerationStrategy;
}

/** Everything the request names, each once, and the amounts asked per class. */
interface RequestNames {
  classes: string[];
  traits: string[];
  aggregates: string[];
  inTree: string[];
  /** Smallest and largest amount per class across groups: rows that fit neither stay in SQL. */
  amounts: Map<string, { smallest: number; largest: number }>;
}

function namesOf(request: CandidateRequest): RequestNames {
  const { groups } = request;
  const amounts = new Map<string, { smallest: number; largest: number }>();
  for (const group of groups) {
    for (const [name, amount] of group.resources) {
      const seen = amounts.get(name);
      amounts.set(
        name,
        seen
          ? { smallest: Math.min(seen.smallest, amount), largest: Math.max(seen.largest, amount) }
          : { smallest: amount, largest: amount },
      );
    }
  }
  return {
    classes: [...new Set(groups.flatMap((g) => [...g.resources.keys()]))],
    traits: [
      ...new Set([
        ...groups.flatMap((g) => [...g.requiredAnyOf.flat(), ...g.forbiddenTraits]),
        ...request.rootRequired,
        ...request.rootForbidden,
      ]),
    ],
    aggregates: [...new Set(groups.flatMap((g) => [...g.memberOf.flat(), ...g.forbiddenAggregates]))],
    inTree: [...new Set(groups.flatMap((g) => (g.inTree ? [g.inTree] : [])))],
    amounts,
  };
}

/**
 * With one group every candidate row serves it, so its tree-level
 * conditions can prune in SQL; with several, only request-wide ones can,
 * plus the classes each tree must offer.
 */
function prefilterOf(request: CandidateRequest): TreePrefilter {
  // With ext_first_of a tree need not offer every group's classes, only those of one variant.
  const variants = request.firstOf?.length ? variantsOf(request.groups, request.firstOf) : null;
  const only = request.groups.length === 1 && !variants ? request.groups[0]! : null;
  return {
    requiredAnyOf: only?.requiredAnyOf ?? [],
    forbiddenTraits: only?.forbiddenTraits ?? [],
    memberOf: only?.memberOf ?? [],
    rootRequired: request.rootRequired,
    rootForbidden: request.rootForbidden,
    everyClassInTree: only === null && !variants,
    ...(variants ? { someClassSetInTree: variants.map((groups) => [...new Set(groups.flatMap((g) => [...g.resources.keys()]))]) } : {}),
  };
}

/** Groups with names turned into ids; unknown classes and traits are errors, as upstream. */
function resolveGroups(request: CandidateRequest, names: RequestNames, lookups: Lookups): ResolvedGroup[] {
  const unknownClass = names.classes.find((c) => !lookups.classIdByName.has(c));
  if (unknownClass) throw badCandidateRequest(`Invalid resource class in resources parameter: No such resource class ${unknownClass}.`);
  const unknownTraits = names.traits.filter((t) => !lookups.traitIdByName.has(t)).sort();
  if (unknownTraits.length) throw badCandidateRequest(`No such trait(s): ${unknownTraits.join(', ')}`);
  return request.groups.map((g) => ({
    suffix: g.suffix,
    resources: [...g.resources]
      .map(([name, amount]): [number, number] => [lookups.classIdByName.get(name)!, amount])
      .sort((a, b) => a[0] - b[0]),
    requiredAnyOf: g.requiredAnyOf,
    forbiddenTraits: g.forbiddenTraits,
    memberOf: g.memberOf.map((anyOf) => new Set(anyOf.flatMap((u) => lookups.aggregateIdByUuid.get(u) ?? []))),
    forbiddenAggregates: new Set(g.forbiddenAggregates.flatMap((u) => lookups.aggregateIdByUuid.get(u) ?? [])),
    inTreeRoot: g.inTree === null ? null : (lookups.rootIdByProviderUuid.get(g.inTree) ?? -1),
  }));
}

interface Attempt {
  lookups: Lookups;
  nodes: Map<number, ProviderNode>;
  usage: Usage;
  chosen: AllocationRequest[];
  /** False when only the lowest trees were read and they could not fill the answer. */
  complete: boolean;
  /** The search stopped at the cap or the time budget. */
  cut: 'cap' | 'time_budget' | null;
}

interface SearchPlan {
  request: CandidateRequest;
  names: RequestNames;
  prefilter: TreePrefilter;
  nestedAware: boolean;
  options: CandidateOptions;
}

/**
 * One research + search pass. `firstRoots`: read only that many of the
 * lowest viable trees (a small stable-order limit usually fills from them).
 * `inChunks`: with a stable-order limit and trees not preloaded, load and
 * search the lowest trees first and the rest only if the limit is not met.
 */
async function searchOnce(reader: BatchReader, plan: SearchPlan, firstRoots: number | null, inChunks: boolean): Promise<Attempt> {
  const { request, names, options } = plan;
  const stopsEarly = request.limit !== null && !options.randomize;
  // Viable trees come whole with the candidates (one round trip) unless a
  // limit may stop after a first chunk of an unbounded viable set.
  const preload = firstRoots !== null || !(stopsEarly && inChunks);
  const { first, loadTrees } = await research(reader, plan, firstRoots, preload);
  const { lookups, candidates, preloaded, truncatedAt } = first;
  const groups = resolveGroups(request, names, lookups);

  const roots = new Set(candidates.rootOf.values());
  for (const anchors of candidates.anchorsOfSharing.values()) for (const root of anchors) roots.add(root);
  // The attempt's own map of nodes (research made it for this request): the search adds loaded trees to it.
  const { search, covers } = treeSearchOf(plan, groups, candidates, preloaded.nodes, lookups);
  const picker = new RequestPicker(request.limit, options.randomize, options.maxCandidates, options.timeBudgetMs ?? 0);
  const anchors = [...roots]
    .filter(covers)
    // Trees above the cut-off were not read: they cannot be judged yet.
    .filter((root) => truncatedAt === null || root <= truncatedAt)
    .sort((a, b) => a - b);
  // Trees not preloaded: with a limit and stable order, the first few are
  // loaded alone, as they usually fill the limit; the rest, if needed, in
  // one more query (a fixed count of round trips: each is a network hop at
  // the edge).
  let chunkSize = stopsEarly && inChunks && !preloaded.roots.size ? Math.max(64, request.limit! * 4) : anchors.length;
  const nodes = preloaded.nodes;
  // Sharing providers' own trees come with the first chunk: their traits decide their use.
  const loadedRoots = new Set(preloaded.roots);
  let pending = [...candidates.anchorsOfSharing.keys()].flatMap((id) => candidates.rootOf.get(id) ?? []);
  for (let start = 0; start < anchors.length && !picker.done; start += chunkSize, chunkSize = anchors.length) {
    const chunk = anchors.slice(start, start + chunkSize);
    const wanted = [...new Set([...pending, ...chunk])].filter((root) => !loadedRoots.has(root));
    pending = [];
    const loaded = wanted.length ? await loadTrees(wanted) : new Map<number, ProviderNode>();
    for (const root of wanted) loadedRoots.add(root);
    search.addTrees(loaded.values()); // into `nodes` too
    await picker.offer(search.requests(chunk, options.generationStrategy));
  }
  return { lookups, nodes, usage: first.usage, chosen: picker.result(), complete: truncatedAt === null || picker.done, cut: picker.cutBy };
}

/**
 * The research context from the trees kept in memory when the cloud fits the
 * cache (model-research.ts), else from SQL alone (research.ts): the same
 * FirstLoad either way, and a loader for trees outside it.
 */
async function research(reader: BatchReader, plan: SearchPlan, firstRoots: number | null, preload: boolean): Promise<Research> {
  const { names, prefilter, options } = plan;
  if (options.treeCacheProviders > 0) {
    const model = cloudModelFor(reader, options.treeCacheProviders);
    const viaModel = await loadFromModel(reader, model, names, names.amounts, prefilter, firstRoots, options.now);
    if (viaModel) return viaModel;
  }
  const first = await loadCandidates(reader, names, names.amounts, prefilter, firstRoots, preload);
  return { first, loadTrees: (roots) => loadTrees(reader, roots, first.usage) };
}

/**
 * The search of one request: CandidateSearch, or with ext_first_of one per
 * variant tried tree by tree (first-of.ts); and the cheap cut of trees that
 * cannot anchor a candidate. Device taints (the research batch's) leave the
 * providers they exclude out of either.
 */
function treeSearchOf(
  plan: SearchPlan,
  groups: ResolvedGroup[],
  candidates: CandidateInventories,
  nodes: Map<number, ProviderNode>,
  lookups: Lookups,
): { search: TreeSearch; covers: (root: number) => boolean } {
  const { request } = plan;
  const input: SearchInput = {
    groups,
    groupPolicy: request.groupPolicy,
    sameSubtrees: request.sameSubtrees,
    rootRequired: request.rootRequired,
    rootForbidden: request.rootForbidden,
    nestedAware: plan.nestedAware,
    candidates,
    nodes,
    excluded: excludedProviders(lookups.taints, request.tolerate ?? NO_TOLERATIONS),
  };
  if (!request.firstOf?.length) return { search: new CandidateSearch(input), covers: coversEveryClass(candidates, groups) };
  const variants = variantsOf(groups, request.firstOf);
  return { search: new FirstOfSearch(input, variants), covers: coversSomeVariant(candidates, variants) };
}

/** A search over every viable tree, each loaded: what headroom walks tree by tree. */
export interface FullSearch {
  search: TreeSearch;
  /** Trees that can anchor a candidate, in stable (root id) order. */
  anchors: number[];
  nodes: Map<number, ProviderNode>;
  /** provider id -> class id -> inventory with its current usage (headroom adds its simulated claims to `used`). */
  inventories: CandidateInventories['byProvider'];
  /** provider id -> shared counters with their current loads (headroom adds its simulated claims to `loads`). */
  counters: Map<number, LoadedCounters>;
}

/** Research and a search over every viable tree, ignoring `limit` and the candidate cap (headroom). */
export async function searchEveryTree(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<FullSearch> {
  const names = namesOf(request);
  const plan: SearchPlan = { request, names, prefilter: prefilterOf(request), nestedAware: mv.atLeast(MV.AC_NESTED), options };
  const { first, loadTrees } = await research(reader, plan, null, true);
  const { lookups, candidates, preloaded } = first;
  const groups = resolveGroups(request, names, lookups);
  const roots = new Set(candidates.rootOf.values());
  for (const anchors of candidates.anchorsOfSharing.values()) for (const root of anchors) roots.add(root);
  const { search, covers } = treeSearchOf(plan, groups, candidates, preloaded.nodes, lookups);
  const anchors = [...roots].filter(covers).sort((a, b) => a - b);
  const sharingRoots = [...candidates.anchorsOfSharing.keys()].flatMap((id) => candidates.rootOf.get(id) ?? []);
  const wanted = [...new Set([...sharingRoots, ...anchors])].filter((root) => !preloaded.roots.has(root));
  if (wanted.length) search.addTrees((await loadTrees(wanted)).values());
  return { search, anchors, nodes: preloaded.nodes, inventories: candidates.byProvider, counters: candidates.counters };
}

const NO_TOLERATIONS: readonly string[] = [];

/** What a request chose, with what its presentation needs. */
interface Chosen {
  chosen: AllocationRequest[];
  nodes: Map<number, ProviderNode>;
  usage: Usage;
  classNameById: Map<number, string>;
  requestedClasses: Set<string>;
  shape: Presentation;
  cut: 'cap' | 'time_budget' | null;
}

async function chooseCandidates(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Chosen> {
  const names = namesOf(request);
  const plan: SearchPlan = { request, names, prefilter: prefilterOf(request), nestedAware: mv.atLeast(MV.AC_NESTED), options };
  // A small stable-order limit first reads only the lowest viable trees; if
  // they cannot fill the limit, the search runs again in full. (The cap keeps
  // a prefix of the same stable order, so it changes nothing here.)
  // Breadth-first takes one candidate per tree in turn: it needs every viable tree from the start.
  const breadthFirst = options.generationStrategy === 'breadth-first';
  const tryFirstRoots = request.limit !== null && !options.randomize && names.inTree.length === 0 && !breadthFirst;
  let outcome = await searchOnce(reader, plan, tryFirstRoots ? Math.max(64, request.limit! * 4) : null, !breadthFirst);
  // The lowest trees were already tried: load the rest in one go.
  if (!outcome.complete) outcome = await searchOnce(reader, plan, null, false);

  const { lookups, nodes, usage, chosen } = outcome;
  return {
    cut: outcome.cut,
    chosen,
    nodes,
    usage,
    classNameById: new Map([...lookups.classIdByName].map(([name, id]) => [id, name])),
    requestedClasses: new Set(names.classes),
    shape: {
      nestedAware: plan.nestedAware,
      allResources: mv.atLeast(MV.AC_ALL_RESOURCES_IN_SUMMARY),
      withTraits: mv.atLeast(MV.AC_REQUIRED),
      dictShape: mv.atLeast(MV.ALLOC_DICT),
      withMappings: mv.atLeast(MV.MAPPINGS),
    },
  };
}

/** The answer as an object (callers that look into it: why-no-host, tests). */
export async function findAllocationCandidates(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<CandidatesBody> {
  const { chosen, nodes, usage, classNameById, requestedClasses, shape } = await chooseCandidates(reader, request, mv, options);
  return presentCandidates(chosen, nodes, usage, classNameById, requestedClasses, shape);
}

/** The same answer as JSON (UTF-8 bytes), written directly (the route's path: no object graph to build and walk). */
export async function findAllocationCandidatesJson(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const started = performance.now();
  const { chosen, nodes, usage, classNameById, requestedClasses, shape, cut } = await chooseCandidates(reader, request, mv, options);
  serviceMetrics.candidatesDuration.observe([], (performance.now() - started) / 1000);
  serviceMetrics.candidatesReturned.observe([], chosen.length);
  if (cut) serviceMetrics.candidatesCut.inc([cut]);
  return candidatesJson(chosen, nodes, usage, classNameById, requestedClasses, shape);
}

/** coversEveryClass for ext_first_of: a tree that covers the classes of one variant may anchor a candidate. */
function coversSomeVariant(candidates: CandidateInventories, variants: ResolvedGroup[][]): (root: number) => boolean {
  const tests = variants.map((groups) => coversEveryClass(candidates, groups));
  return (root) => tests.some((covers) => covers(root));
}

/**
 * A tree can only anchor a candidate if its own providers plus the sharing
 * providers it is anchored to offer every requested class: a cheap cut made
 * before any tree is loaded.
 */
function coversEveryClass(candidates: CandidateInventories, groups: ResolvedGroup[]): (root: number) => boolean {
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
