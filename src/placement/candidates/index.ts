// GET /allocation_candidates, end to end below HTTP (see README.md here):
//   1. names: every class, trait, aggregate and in_tree provider the request names;
//   2. the provider-tree model, the engine's only input, and one read batch
//      (sources.ts): the shared cache while the cloud fits, else a partial
//      model of the trees the SQL prefilter keeps; the rules over it
//      (rules.ts) decide the viable trees, candidate rows and sharing
//      anchors, the installed hooks (hooks.ts) what they exclude and what
//      capacity they add (1-2 round trips as a rule, 4 at most);
//   3. search: one choice per group per tree, in stable order (search.ts),
//      kept by a RequestPicker that applies `limit` and the candidate cap;
//   4. present: the answer's shape for the microversion (present/).
import type { BatchReader } from '../../db/client.js';
import type { Deps } from '../../deps.js';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';
import { badCandidateRequest } from './errors.js';
import type { CandidateRequest } from './parse.js';
import { presentCandidates, type CandidatesBody, type Presentation } from './present/index.js';
import { candidatesJson } from './present/json.js';
import { type CloudModel, TreeCache } from './cloud-model.js';
import type { CandidateParam, CandidateReadHook, HookStates } from './hooks.js';
import type { CandidateInventories, Lookups, ProviderNode, TreePrefilter, Usage } from './research.js';
import { anchorRoots, coversEveryClass, coversSomeVariant } from './rules.js';
import { type RequestNames, type Research, researchCached, researchOfModel, researchPartial } from './sources.js';
import { AlternativesSearch, variantsOf, type TreeSearch } from './alternatives.js';
import {
  CandidateSearch,
  RequestPicker,
  type AllocationRequest,
  type GenerationStrategy,
  type ResolvedGroup,
  type SearchInput,
} from './search.js';

export type { CandidatesBody } from './present/index.js';

/** What the engine counts into (Deps['metrics']). */
export type CandidateMetrics = Pick<
  Deps['metrics'],
  'candidatesDuration' | 'candidatesReturned' | 'candidatesCut' | 'treeCacheProviders' | 'treeCacheRefreshes'
>;

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
  /** The app's tree cache (Deps.candidates); without one, the call reads into a cache of its own. */
  trees?: TreeCache;
  /** The read hooks the composition root installed (Deps.candidates: taints, counters); none without. */
  hooks?: readonly CandidateReadHook[];
  /** Where the answer's figures are counted (Deps.metrics); nowhere without. */
  metrics?: CandidateMetrics;
  /** The installed extensions' query parameters (Deps.candidates), for a caller that parses a query with these options (gangs); none without. */
  params?: ReadonlyMap<string, CandidateParam>;
  /** With a limit: answer from the first pass over the lowest trees even when it falls short (preemption tries it first). */
  firstPassOnly?: boolean;
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
 * conditions can prune trees (in SQL and over the model); with several, only request-wide ones can,
 * plus the classes each tree must offer.
 */
function prefilterOf(request: CandidateRequest): TreePrefilter {
  // With alternatives a tree need not offer every group's classes, only those of one variant.
  const variants = request.alternatives?.length ? variantsOf(request.groups, request.alternatives) : null;
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
  /** False when only the lowest trees were planned and they could not fill the answer. */
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
 * The research of a request: from the shared cache when the cloud fits it,
 * else (or when the cache gives up) from a partial model of the trees the
 * prefilter keeps. `firstRoots`: only that many of the lowest viable trees.
 */
/** Where one pass gets its research: the database (the requests), or a model given whole (the warm-up). */
type ResearchSource = (plan: SearchPlan, firstRoots: number | null) => Promise<Research>;

const fromDatabase =
  (reader: BatchReader): ResearchSource =>
  (plan, firstRoots) =>
    research(reader, plan, firstRoots);

async function research(reader: BatchReader, plan: SearchPlan, firstRoots: number | null): Promise<Research> {
  const { names, prefilter, options } = plan;
  const hooks = options.hooks ?? NO_HOOKS;
  if (options.treeCacheProviders > 0) {
    const model = (options.trees ?? new TreeCache(options.metrics ?? null)).modelFor(reader, options.treeCacheProviders);
    const cached = await researchCached(reader, model, names, prefilter, firstRoots, options.now, hooks);
    if (cached) return cached;
  }
  return researchPartial(reader, names, prefilter, firstRoots, hooks);
}

/** Research, then the trees that can anchor a candidate (in stable order) with the search over them. */
async function prepare(source: ResearchSource, plan: SearchPlan, firstRoots: number | null) {
  const found = await source(plan, firstRoots);
  const { candidates, preloaded, truncatedAt } = found;
  const groups = resolveGroups(plan.request, plan.names, found.lookups);
  // The research's own map of nodes: the search adds loaded trees to it.
  const { search, covers } = treeSearchOf(plan, groups, candidates, preloaded.nodes, found.hooks);
  const anchors = [...anchorRoots(candidates)]
    .filter(covers)
    // Trees above the cut-off were not planned: they cannot be judged yet.
    .filter((root) => truncatedAt === null || root <= truncatedAt)
    .sort((a, b) => a - b);
  // Sharing providers' own trees come along: their traits decide their use.
  const sharingRoots = [...candidates.anchorsOfSharing.keys()].flatMap((id) => candidates.rootOf.get(id) ?? []);
  const wanted = [...new Set([...sharingRoots, ...anchors])].filter((root) => !preloaded.roots.has(root));
  if (wanted.length) search.addTrees((await found.loadTrees(wanted)).values()); // into preloaded.nodes too
  return { found, search, anchors };
}

/** One research + search pass. */
async function searchOnce(source: ResearchSource, plan: SearchPlan, firstRoots: number | null): Promise<Attempt> {
  const { request, options } = plan;
  const { found, search, anchors } = await prepare(source, plan, firstRoots);
  const picker = new RequestPicker(request.limit, options.randomize, options.maxCandidates, options.timeBudgetMs ?? 0);
  if (anchors.length) await picker.offer(search.requests(anchors, options.generationStrategy));
  return {
    lookups: found.lookups,
    nodes: found.preloaded.nodes,
    usage: found.usage,
    chosen: picker.result(),
    complete: found.truncatedAt === null || picker.done,
    cut: picker.cutBy,
  };
}

/**
 * The search of one request: CandidateSearch, or with alternatives one per
 * variant tried tree by tree (alternatives.ts); and the cheap cut of trees that
 * cannot anchor a candidate. The installed hooks leave the providers they
 * exclude out of either and add their capacity condition.
 */
function treeSearchOf(
  plan: SearchPlan,
  groups: ResolvedGroup[],
  candidates: CandidateInventories,
  nodes: Map<number, ProviderNode>,
  states: HookStates,
): { search: TreeSearch; covers: (root: number) => boolean } {
  const { request } = plan;
  const hooks = plan.options.hooks ?? NO_HOOKS;
  const input: SearchInput = {
    groups,
    groupPolicy: request.groupPolicy,
    sameSubtrees: request.sameSubtrees,
    rootRequired: request.rootRequired,
    rootForbidden: request.rootForbidden,
    nestedAware: plan.nestedAware,
    candidates,
    nodes,
    excluded: states.excluded(hooks, request),
    capacity: states.capacityRule(hooks, request),
  };
  if (!request.alternatives?.length) return { search: new CandidateSearch(input), covers: coversEveryClass(candidates, groups) };
  const variants = variantsOf(groups, request.alternatives);
  return { search: new AlternativesSearch(input, variants), covers: coversSomeVariant(candidates, variants) };
}

/** A search over every viable tree, each loaded: what headroom walks tree by tree. */
export interface FullSearch {
  search: TreeSearch;
  /** Trees that can anchor a candidate, in stable (root id) order. */
  anchors: number[];
  nodes: Map<number, ProviderNode>;
  /** provider id -> class id -> inventory with its current usage (headroom adds its simulated claims to `used`). */
  inventories: CandidateInventories['byProvider'];
  /** What the installed hooks read (headroom reads the shared counters' loads back). */
  hooks: HookStates;
}

/** Research and a search over every viable tree, ignoring `limit` and the candidate cap (headroom). */
export async function searchEveryTree(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<FullSearch> {
  return fullSearchOf(fromDatabase(reader), request, mv, options);
}

/** The research of a model given whole with its usage and names, no database: the hooks read as from one whose tables are empty. */
function modelSource(model: CloudModel, usage: Usage, lookups: Lookups, options: CandidateOptions): ResearchSource {
  const hooks = options.hooks ?? NO_HOOKS;
  return async (plan, firstRoots) => researchOfModel(model, lookups, usage, plan.names, plan.prefilter, firstRoots, hooks);
}

/**
 * searchEveryTree over a model given whole with its usage and names, no
 * database (what-if: a copy of the cloud with changes applied). The hooks
 * read as from a database where their tables are empty; a caller passes hooks
 * whose read() returns the state it wants applied.
 */
export async function searchEveryTreeOfModel(
  model: CloudModel,
  usage: Usage,
  lookups: Lookups,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<FullSearch> {
  return fullSearchOf(modelSource(model, usage, lookups, options), request, mv, options);
}

async function fullSearchOf(
  source: ResearchSource,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<FullSearch> {
  const plan: SearchPlan = {
    request,
    names: namesOf(request),
    prefilter: prefilterOf(request),
    nestedAware: mv.atLeast(MV.AC_NESTED),
    options,
  };
  const { found, search, anchors } = await prepare(source, plan, null);
  return { search, anchors, nodes: found.preloaded.nodes, inventories: found.candidates.byProvider, hooks: found.hooks };
}

const NO_HOOKS: readonly CandidateReadHook[] = [];

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
  source: ResearchSource,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Chosen> {
  const names = namesOf(request);
  const plan: SearchPlan = { request, names, prefilter: prefilterOf(request), nestedAware: mv.atLeast(MV.AC_NESTED), options };
  // A small stable-order limit first plans only the lowest viable trees; if
  // they cannot fill the limit, the search runs again in full. (The cap keeps
  // a prefix of the same stable order, so it changes nothing here.)
  // Breadth-first takes one candidate per tree in turn: it needs every viable tree from the start.
  const breadthFirst = options.generationStrategy === 'breadth-first';
  const tryFirstRoots = request.limit !== null && !options.randomize && names.inTree.length === 0 && !breadthFirst;
  let outcome = await searchOnce(source, plan, tryFirstRoots ? Math.max(64, request.limit! * 4) : null);
  // The lowest trees were already tried: plan every viable tree.
  if (!outcome.complete && !options.firstPassOnly) outcome = await searchOnce(source, plan, null);
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

/** The engine's answer: the candidates chosen, and why the search stopped before it had seen them all (null: it saw them all, or a limit). */
export interface CandidatesAnswer {
  body: CandidatesBody;
  stopped: 'cap' | 'time_budget' | null;
}

/** The answer as an object, with why the search stopped (callers that look into it: gangs, why-no-host, tests). */
export async function searchCandidates(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<CandidatesAnswer> {
  const { chosen, nodes, usage, classNameById, requestedClasses, shape, cut } = await chooseCandidates(
    fromDatabase(reader),
    request,
    mv,
    options,
  );
  return { body: presentCandidates(chosen, nodes, usage, classNameById, requestedClasses, shape), stopped: cut };
}

/** The answer's body alone. */
export async function findAllocationCandidates(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<CandidatesBody> {
  return (await searchCandidates(reader, request, mv, options)).body;
}

/** The same answer as JSON (UTF-8 bytes), written directly (the route's path: no object graph to build and walk). */
export async function findAllocationCandidatesJson(
  reader: BatchReader,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const started = performance.now();
  const chosen = await chooseCandidates(fromDatabase(reader), request, mv, options);
  const metrics = options.metrics;
  if (metrics) {
    metrics.candidatesDuration.observe([], (performance.now() - started) / 1000);
    metrics.candidatesReturned.observe([], chosen.chosen.length);
    if (chosen.cut) metrics.candidatesCut.inc([chosen.cut]);
  }
  return jsonOf(chosen);
}

/**
 * The answer as JSON over a model given whole with its usage and names, with
 * no database (the warm-up, warm-up.ts: the same code a request runs, from
 * the rules on). The hooks read as from a database where their tables are empty.
 */
export async function candidatesJsonFromModel(
  model: CloudModel,
  usage: Usage,
  lookups: Lookups,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  return jsonOf(await chooseCandidates(modelSource(model, usage, lookups, options), request, mv, options));
}

/** The answer as an object over a model given whole (what-if): as candidatesJsonFromModel, without the JSON. */
export async function candidatesFromModel(
  model: CloudModel,
  usage: Usage,
  lookups: Lookups,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<CandidatesBody> {
  const { chosen, nodes, classNameById, requestedClasses, shape } = await chooseCandidates(
    modelSource(model, usage, lookups, options),
    request,
    mv,
    options,
  );
  return presentCandidates(chosen, nodes, usage, classNameById, requestedClasses, shape);
}

function jsonOf({ chosen, nodes, usage, classNameById, requestedClasses, shape }: Chosen): Uint8Array<ArrayBuffer> {
  return candidatesJson(chosen, nodes, usage, classNameById, requestedClasses, shape);
}
