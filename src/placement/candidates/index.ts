// GET /allocation_candidates, end to end below HTTP (see README.md here):
//   1. names: every class, trait, aggregate and in_tree provider the request names;
//   2. the provider-tree model, the engine's only input, and one read batch
//      (the research, below): the shared cache while the cloud fits, else a partial
//      model of the trees the SQL prefilter keeps; the rules over it
//      (rules.ts) decide the viable trees, candidate rows and sharing
//      anchors, the installed hooks (below) what they exclude and what
//      capacity they add (1-2 round trips as a rule, 4 at most);
//   3. search: one choice per group per tree, in stable order (search.ts),
//      kept by a RequestPicker that applies `limit` and the candidate cap;
//   4. present: the answer's shape for the microversion (present/).
// The same file holds the engine object of one app (CandidateEngine, at the
// end): its settings, tree cache and installed extensions, and the options
// every caller's search takes from it.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { ALLOC, EPOCH, RP, TREE_CHANGE, USAGE_CHANGE } from '../../db/columns.js';
import type { Deps } from '../../deps.js';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';
import { AlternativesSearch, type TreeSearch, variantsOf } from './alternatives.js';
import {
  addUsage,
  type CandidateInventories,
  CloudModel,
  groupedUsage,
  LOOKUPS_COLUMNS,
  LOOKUPS_EXPRESSIONS,
  type Lookups,
  lookupsArgs,
  lookupsOf,
  lookupsStatement,
  type ProviderNode,
  TreeCache,
  type TreePrefilter,
  type Usage,
  USAGE_ROW,
  usageOf,
} from './cloud-model.js';
import { badCandidateRequest } from './errors.js';
import { keepTreeModelFresh, type ModelRefresher, type RewarmKind, refreshTreeModel } from './model-refresh.js';
import { type CandidateRequest, parseCandidateRequestWithExt } from './parse.js';
import { treesStatement } from './prefilter.js';
import { type CandidatesBody, type Presentation, presentCandidates } from './present/index.js';
import { candidatesJson, KeptBytes, spliceTrees, type TreeSpan, TreeSpans } from './present/json.js';
import { type Amounts, anchorRoots, candidatesOf, coversEveryClass, coversSomeVariant, planTrees, type TreePlan } from './rules.js';
import {
  type AllocationRequest,
  CandidateSearch,
  type GenerationStrategy,
  RequestPicker,
  type ResolvedGroup,
  type SearchInput,
} from './search.js';
import type { PackedRow } from '../../db/rows.js';

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
  /** The app's kept answers (Deps.candidates): a JSON answer is reused while what it was computed from reads the same; none without. */
  answers?: KeptAnswers;
  /** The app's presentation bytes kept between answers (Deps.candidates); an answer's own without. */
  keptBytes?: KeptBytes;
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
  /** What the answer was computed from, when it may be kept (answerState). */
  state: ResearchState | null;
  /** The viable trees (they depend on the trees, never on usage). */
  viable: readonly number[];
  /** Every candidate lies in one tree (no sharing provider offers a requested class): trees' shares of the answer are apart. */
  treesApart: boolean;
}

interface SearchPlan {
  request: CandidateRequest;
  names: RequestNames;
  prefilter: TreePrefilter;
  nestedAware: boolean;
  mv: Microversion;
  options: CandidateOptions;
  /** A kept answer of the same request: taken instead of the rules and search when the research reads what it was computed from. */
  kept?: KeptAnswer;
}

/**
 * The research of a request: from the shared cache when the cloud fits it,
 * else (or when the cache gives up) from a partial model of the trees the
 * prefilter keeps. `firstRoots`: only that many of the lowest viable trees.
 */
/** Where one pass gets its research: the database (the requests), or a model given whole (the warm-up). */
type ResearchSource = (plan: SearchPlan, firstRoots: number | null) => Promise<Research | KeptHit>;

const fromDatabase =
  (reader: BatchReader): ResearchSource =>
  (plan, firstRoots) =>
    research(reader, plan, firstRoots);

async function research(reader: BatchReader, plan: SearchPlan, firstRoots: number | null): Promise<Research | KeptHit> {
  const { names, prefilter, options } = plan;
  const hooks = options.hooks ?? NO_HOOKS;
  if (options.treeCacheProviders > 0) {
    const model = (options.trees ?? new TreeCache(options.metrics ?? null)).modelFor(reader, options.treeCacheProviders);
    const kept = plan.kept ? { state: plan.kept.state, inert: (states: HookStates) => hooksInert(plan, states) } : undefined;
    const cached = await researchCached(reader, model, names, prefilter, firstRoots, options.now, hooks, kept);
    if (cached) return cached;
  }
  return researchPartial(reader, names, prefilter, firstRoots, hooks);
}

/** Research, then the trees that can anchor a candidate (in stable order) with the search over them. */
async function prepare(source: ResearchSource, plan: SearchPlan, firstRoots: number | null) {
  const found = await source(plan, firstRoots);
  if ('hit' in found) throw new Error('a kept answer where none was offered');
  return { found, ...(await decide(found, plan)) };
}

/** Whether the installed hooks change nothing for `request` now: no provider left out, no capacity rule (the usual cloud). */
function hooksInert(plan: SearchPlan, states: HookStates): boolean {
  const hooks = plan.options.hooks ?? NO_HOOKS;
  return (
    hooks.length === 0 ||
    (states.excluded(hooks, plan.request).size === 0 && states.capacityRule(hooks, plan.request, plan.options.now) === null)
  );
}

/** The rules over the research: the trees that can anchor a candidate (in stable order) with the search over them. */
async function decide(found: Research, plan: SearchPlan) {
  const { candidates, preloaded } = found.rules();
  const { truncatedAt } = found;
  const groups = resolveGroups(plan.request, plan.names, found.lookups);
  // The research's own map of nodes: the search adds loaded trees to it.
  const { search, covers, capacity } = treeSearchOf(plan, groups, candidates, preloaded.nodes, found.hooks);
  const anchors: number[] = [];
  for (const root of anchorRoots(candidates)) {
    // Trees above the cut-off were not planned: they cannot be judged yet.
    if (covers(root) && (truncatedAt === null || root <= truncatedAt)) anchors.push(root);
  }
  anchors.sort((a, b) => a - b);
  // Sharing providers' own trees come along (their traits decide their use); the research preloaded all but a few, if any.
  let missing: Set<number> | null = null;
  for (const id of candidates.anchorsOfSharing.keys()) {
    const root = candidates.rootOf.get(id);
    if (root !== undefined && !preloaded.roots.has(root)) (missing ??= new Set()).add(root);
  }
  for (const root of anchors) if (!preloaded.roots.has(root)) (missing ??= new Set()).add(root);
  const wanted = missing === null ? [] : [...missing];
  if (wanted.length) search.addTrees((await found.loadTrees(wanted)).values()); // into preloaded.nodes too
  // Trees loaded after the research may come from a later model or batch: such an answer is not kept.
  return { search, anchors, capacity, keepable: wanted.length === 0 };
}

/** One research + search pass; the kept answer instead when the research reads what it was computed from. */
async function searchOnce(source: ResearchSource, plan: SearchPlan, firstRoots: number | null): Promise<Attempt | KeptAnswer> {
  const { request, options, kept } = plan;
  const found = await source(plan, firstRoots);
  if ('hit' in found) {
    options.answers?.countHit();
    // The same bytes; kept again with the newer usage it was checked against, when the batch read a newer one.
    return found.hit === kept!.state ? kept! : { ...kept!, state: found.hit };
  }
  const inert = found.state !== null && hooksInert(plan, found.hooks);
  if (kept?.trees && inert && found.usageChanged && sameButUsage(kept.state, found.state!)) {
    const spliced = await spliceKept(found, plan, kept, kept.trees, found.usageChanged);
    if (spliced) {
      options.answers?.countSplice();
      return spliced;
    }
  }
  const { search, anchors, keepable } = await decide(found, plan);
  const picker = new RequestPicker(request.limit, options.randomize, options.maxCandidates, options.timeBudgetMs ?? 0);
  if (anchors.length) await picker.offer(search.requests(anchors, options.generationStrategy));
  const { candidates, preloaded } = found.rules();
  const { nodes } = preloaded;
  const cut = picker.cutBy;
  return {
    viable: found.viable,
    treesApart: candidates.anchorsOfSharing.size === 0,
    lookups: found.lookups,
    nodes,
    usage: found.usage,
    chosen: picker.result(),
    complete: found.truncatedAt === null || picker.done,
    cut,
    // A cut answer (the time budget) or one whose hooks constrained it is never kept.
    state: inert && keepable && cut === null ? found.state : null,
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
): { search: TreeSearch; covers: (root: number) => boolean; capacity: CapacityRule | null } {
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
    capacity: states.capacityRule(hooks, request, plan.options.now),
  };
  const capacity = input.capacity ?? null;
  if (!request.alternatives?.length) return { search: new CandidateSearch(input), covers: coversEveryClass(candidates, groups), capacity };
  const variants = variantsOf(groups, request.alternatives);
  return { search: new AlternativesSearch(input, variants), covers: coversSomeVariant(candidates, variants), capacity };
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
  /** The hooks' capacity rule of the request (headroom repeats a claim within its room); null when none constrains it. */
  capacity: CapacityRule | null;
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

/**
 * A model given whole with its usage and names, the input of the entry points
 * below that need no database (what-if, holds' availability, preemption, the
 * warm-up) where the others take a BatchReader.
 */
export interface GivenModel {
  model: CloudModel;
  usage: Usage;
  lookups: Lookups;
}

/** The research of a model given whole, no database: the hooks read as from one whose tables are empty. */
function modelSource({ model, usage, lookups }: GivenModel, options: CandidateOptions): ResearchSource {
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
  given: GivenModel,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<FullSearch> {
  return fullSearchOf(modelSource(given, options), request, mv, options);
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
    mv,
    options,
  };
  const { found, search, anchors, capacity } = await prepare(source, plan, null);
  const { candidates, preloaded } = found.rules();
  return { search, anchors, nodes: preloaded.nodes, inventories: candidates.byProvider, hooks: found.hooks, capacity };
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
  /** What the answer was computed from, when it may be kept: one pass, one snapshot, nothing cut, no hook constraining it. */
  state: ResearchState | null;
  /** When the answer may be put together again tree by tree (KeptTrees); else null. */
  trees: KeptTrees | null;
}

async function chooseCandidates(
  source: ResearchSource,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
  kept?: KeptAnswer,
): Promise<Chosen | KeptAnswer> {
  const { names, prefilter } = namesAndPrefilterOf(request);
  const plan: SearchPlan = { request, names, prefilter, nestedAware: mv.atLeast(MV.AC_NESTED), mv, options, kept };
  // A small stable-order limit first plans only the lowest viable trees; if
  // they cannot fill the limit, the search runs again in full. (The cap keeps
  // a prefix of the same stable order, so it changes nothing here.)
  // Breadth-first takes one candidate per tree in turn: it needs every viable tree from the start.
  const breadthFirst = options.generationStrategy === 'breadth-first';
  const tryFirstRoots = request.limit !== null && !options.randomize && names.inTree.length === 0 && !breadthFirst;
  const first = await searchOnce(source, plan, tryFirstRoots ? Math.max(64, request.limit! * 4) : null);
  if (!('complete' in first)) return first;
  let outcome = first;
  // The lowest trees were already tried: plan every viable tree (a second snapshot: that answer is not kept).
  if (!first.complete && !options.firstPassOnly) {
    const second = await searchOnce(source, { ...plan, kept: undefined }, null);
    if (!('complete' in second)) throw new Error('a kept answer offered on a second pass');
    outcome = { ...second, state: null };
  }
  const { lookups, nodes, usage, chosen } = outcome;
  return {
    state: outcome.state,
    cut: outcome.cut,
    chosen,
    nodes,
    usage,
    // Trees apart, in stable order and every one of them searched (no limit): the answer can be put together by tree.
    trees:
      outcome.state !== null && outcome.treesApart && request.limit === null && !breadthFirst ? { viable: new Set(outcome.viable) } : null,
    ...presentationOf(plan, lookups),
  };
}

/** How the answer is written for the request's microversion, with the names it looked up. */
function presentationOf(plan: SearchPlan, lookups: Lookups): Pick<Chosen, 'classNameById' | 'requestedClasses' | 'shape'> {
  const { mv } = plan;
  return {
    classNameById: new Map([...lookups.classIdByName].map(([name, id]) => [id, name])),
    requestedClasses: new Set(plan.names.classes),
    shape: {
      nestedAware: plan.nestedAware,
      allResources: mv.atLeast(MV.AC_ALL_RESOURCES_IN_SUMMARY),
      withTraits: mv.atLeast(MV.AC_REQUIRED),
      dictShape: mv.atLeast(MV.ALLOC_DICT),
      withMappings: mv.atLeast(MV.MAPPINGS),
    },
  };
}

/**
 * A kept answer with the share of the trees whose usage changed since it
 * was written computed again (the rules, search and JSON of those trees
 * only): the same bytes a whole search gives, when every candidate lies in
 * one tree, the trees and names are as the kept answer's, and no limit, cap
 * or time budget stops the search. Null when the search must run whole.
 */
async function spliceKept(
  found: Research,
  plan: SearchPlan,
  kept: KeptAnswer,
  trees: KeptTrees,
  usageChanged: ReadonlySet<number>,
): Promise<KeptAnswer | null> {
  const { options, request } = plan;
  const model = found.state!.model;
  const changed = new Set<number>();
  for (const providerId of usageChanged) {
    const root = model.provider(providerId)?.rootId;
    if (root !== undefined && trees.viable.has(root)) changed.add(root);
  }
  const roots = [...changed].sort((a, b) => a - b);
  const { candidates, preloaded } = found.rulesOf(roots);
  if (candidates.anchorsOfSharing.size) return null;
  const groups = resolveGroups(request, plan.names, found.lookups);
  const { search, covers } = treeSearchOf(plan, groups, candidates, preloaded.nodes, found.hooks);
  const anchors = [...anchorRoots(candidates)].filter(covers).sort((a, b) => a - b);
  if (anchors.some((root) => !preloaded.roots.has(root))) return null;
  const picker = new RequestPicker(null, false, 0, options.timeBudgetMs ?? 0);
  if (anchors.length) await picker.offer(search.requests(anchors, 'depth-first'));
  if (picker.cutBy) return null;
  const { classNameById, requestedClasses, shape } = presentationOf(plan, found.lookups);
  const spans = new TreeSpans();
  const fresh = candidatesJson(
    picker.result(),
    preloaded.nodes,
    found.usage,
    classNameById,
    requestedClasses,
    shape,
    keptBytesOf(options),
    spans,
  );
  if (!spans.split) return null;
  const joined = spliceTrees({ bytes: kept.bytes, trees: kept.spans }, changed, { bytes: fresh, trees: spans.trees() });
  let count = 0;
  for (const tree of joined.trees) count += tree.count;
  // A whole search would stop at the cap: it runs, and its answer is not kept.
  if (options.maxCandidates > 0 && count >= options.maxCandidates) return null;
  return {
    state: found.state!,
    bytes: joined.bytes,
    count,
    cut: null,
    trees,
    spans: joined.trees,
  };
}

/** Whether two research states differ at most in their usage (same model version, trees read and names). */
const sameButUsage = (a: ResearchState, b: ResearchState): boolean =>
  a.model === b.model && a.version === b.version && a.scope === b.scope && a.lookups === b.lookups;

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
  const { chosen, nodes, usage, classNameById, requestedClasses, shape, cut } = chosenOf(
    await chooseCandidates(fromDatabase(reader), request, mv, options),
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
  const answers = options.answers;
  const key = answers ? answerKey(request, mv, options) : null;
  const plainKept = key === null ? undefined : answers!.get(key);
  const outcome = await chooseCandidates(fromDatabase(reader), request, mv, options, plainKept);
  if ('bytes' in outcome && outcome !== plainKept && key !== null) answers!.keep(key, outcome);
  const answer = 'bytes' in outcome ? outcome : keepAnswer(answers, key, outcome, options);
  const metrics = options.metrics;
  if (metrics) {
    metrics.candidatesDuration.observe([], (performance.now() - started) / 1000);
    metrics.candidatesReturned.observe([], answer.count);
    if (answer.cut) metrics.candidatesCut.inc([answer.cut]);
  }
  return answer.bytes;
}

/** The answer's figures and bytes, kept under `key` when what it was computed from may be read again (KeptAnswers). */
function keepAnswer(
  answers: KeptAnswers | undefined,
  key: string | null,
  chosen: Chosen,
  options: CandidateOptions,
): { bytes: Uint8Array<ArrayBuffer>; count: number; cut: Chosen['cut'] } {
  const { state, cut } = chosen;
  // The model moved on while the search ran (another request's batch): what the answer came from is gone.
  const keep = answers !== undefined && key !== null && state !== null && state.model.version === state.version;
  const spans = keep && chosen.trees ? new TreeSpans() : undefined;
  const bytes = jsonOf(chosen, options, spans);
  const answer = { bytes, count: chosen.chosen.length, cut };
  if (keep) {
    const trees = spans?.split ? chosen.trees : null;
    answers!.keep(key!, { ...answer, state: state!, trees, spans: trees ? spans!.trees() : [] });
  }
  return answer;
}

/** A chooseCandidates outcome without a kept answer offered: always what it chose. */
function chosenOf(outcome: Chosen | KeptAnswer): Chosen {
  if ('bytes' in outcome) throw new Error('a kept answer where none was offered');
  return outcome;
}

/**
 * The answer as JSON over a model given whole with its usage and names, with
 * no database (the warm-up, warm-up.ts: the same code a request runs, from
 * the rules on). The hooks read as from a database where their tables are empty.
 */
export async function candidatesJsonFromModel(
  given: GivenModel,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<Uint8Array<ArrayBuffer>> {
  const chosen = chosenOf(await chooseCandidates(modelSource(given, options), request, mv, options));
  // A full answer notes its trees' shares as the route's does for an answer it keeps, so that the warm-up
  // runs that code too: compiled without it, the JSON writer was thrown back to the interpreter by the first
  // client answer that did.
  return jsonOf(chosen, options, request.limit === null ? new TreeSpans() : undefined);
}

/** The answer as an object over a model given whole (what-if): as candidatesJsonFromModel, without the JSON. */
export async function candidatesFromModel(
  given: GivenModel,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<CandidatesBody> {
  const { chosen, nodes, classNameById, requestedClasses, shape } = chosenOf(
    await chooseCandidates(modelSource(given, options), request, mv, options),
  );
  return presentCandidates(chosen, nodes, given.usage, classNameById, requestedClasses, shape);
}

function jsonOf(
  { chosen, nodes, usage, classNameById, requestedClasses, shape }: Chosen,
  options: CandidateOptions,
  byTree?: TreeSpans,
): Uint8Array<ArrayBuffer> {
  return candidatesJson(chosen, nodes, usage, classNameById, requestedClasses, shape, keptBytesOf(options), byTree);
}

/** The app's kept presentation bytes, or an answer's own (which starts no slab). */
const keptBytesOf = (options: CandidateOptions): KeptBytes => options.keptBytes ?? KeptBytes.forOneAnswer();

// --- The research ------------------------------------------------------------
// The research: where a request's provider-tree model comes from, and the one read batch
// that fills it (plus the installed hooks' statements, below, in the same
// snapshot):
// - the shared cache (cloud-model.ts) while the cloud fits
//   PLACEMENT_CANDIDATE_TREE_CACHE: the batch reads the name lookups, the
//   trees changed since the model's seq and the usage of the trees the plan
//   guessed from the model as it stands (of everything when the guess covers
//   half the cloud). The plan is made again with the fresh trees and names;
//   if it needs a tree whose usage was not read, another batch reads it (rare:
//   a write created or changed a tree in between).
// - above it (or with the cache set to 0): a partial model of exactly the
//   trees the SQL prefilter keeps (prefilter.ts), read whole with their usage
//   in the same one batch.
// Either way the same rules (rules.ts) then decide over the model.

export interface RequestNames {
  classes: string[];
  traits: string[];
  aggregates: string[];
  inTree: string[];
  /** Smallest and largest amount per class across groups. */
  amounts: Amounts;
}

/** The rules' decision over a research: candidate rows and sharing anchors, and the trees given whole from the start. */
interface Decided {
  candidates: CandidateInventories;
  preloaded: { roots: Set<number>; nodes: Map<number, ProviderNode> };
}

/** What one research pass gives the search: the model's trees the request uses, decided by the rules. */
export interface Research {
  lookups: Lookups;
  /** What the installed hooks read in the same batch. */
  hooks: HookStates;
  /**
   * The rules over the research (candidate rows, sharing anchors) and the trees given whole
   * from the start: the viable ones and the sharing providers' own. Decided on first call,
   * so a kept answer taken instead pays none of it.
   */
  rules(): Decided;
  /** The same rules over some of the viable trees only (a kept answer's trees whose usage changed). */
  rulesOf(viable: readonly number[]): Decided;
  /** The viable trees, in root order. */
  viable: readonly number[];
  /** What the research read, when an answer computed from it may be kept (the shared cache's one snapshot); else null. */
  state: ResearchState | null;
  /** When only the first roots were planned: the highest root planned (trees above it are unknown). */
  truncatedAt: number | null;
  /** Usage of the trees read (loadTrees adds to it). */
  usage: Usage;
  /**
   * With a kept answer of the same model version offered: the providers whose usage differs from
   * the usage it was computed from (the batch read only what changed since); else null.
   */
  usageChanged: ReadonlySet<number> | null;
  /** Trees outside the first load (anchors of sharing providers the search reaches). */
  loadTrees(roots: number[]): Promise<Map<number, ProviderNode>>;
}

/** The model's providers serve as the request's nodes as they are: usage is looked up apart. */
function nodesOf(model: CloudModel, roots: Iterable<number>): Map<number, ProviderNode> {
  const nodes = new Map<number, ProviderNode>();
  for (const root of roots) for (const p of model.tree(root)) nodes.set(p.id, p);
  return nodes;
}

/** The research of a model and the plan's viable trees. */
function researchOf(
  model: CloudModel,
  lookups: Lookups,
  hooks: HookStates,
  usage: Usage,
  plan: TreePlan,
  truncatedAt: number | null,
  prefilter: TreePrefilter,
  amounts: Amounts,
  loadTrees: (roots: number[]) => Promise<Map<number, ProviderNode>>,
  state: ResearchState | null = null,
  usageChanged: ReadonlySet<number> | null = null,
): Research {
  let decided: Decided | undefined;
  const rulesOf = (viable: readonly number[]): Decided => {
    const { candidates, treeRoots } = candidatesOf(model, viable, lookups.classIdByName, usage, prefilter.forbiddenTraits, amounts);
    const nodes = nodesOf(
      model,
      [...treeRoots].sort((a, b) => a - b),
    );
    return { candidates, preloaded: { roots: treeRoots, nodes } };
  };
  return {
    lookups,
    hooks,
    rules() {
      decided ??= rulesOf(plan.viable);
      return decided;
    },
    rulesOf,
    viable: plan.viable,
    state,
    truncatedAt,
    usage,
    usageChanged,
    loadTrees,
  };
}

/**
 * A request's partial model: the trees the SQL prefilter keeps (the lowest
 * `firstRoots` viable ones when given), read whole with their usage, in one batch.
 */
export async function researchPartial(
  reader: BatchReader,
  names: RequestNames,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  hooks: readonly CandidateReadHook[],
): Promise<Research> {
  const [lookupRows, trees, ...results] = await reader.readBatch([
    lookupsStatement(names),
    treesStatement(prefilter, names.amounts, firstRoots),
    ...hookStatements(hooks, names.classes),
  ]);
  const lookups = lookupsOf(Array.from(lookupRows!.rows[0] as ArrayLike<unknown>));
  const loaded = JSON.parse(String(trees!.rows[0]![0])) as {
    providers: PackedRow[];
    inventories: PackedRow[];
    truncatedAt: number | null;
  };
  const usage: Usage = new Map();
  const model = CloudModel.partial(loaded.providers, loaded.inventories, usage);
  // Every loaded tree is judged by the rules; trees above a truncated set were not loaded.
  const plan = planTrees(model, names.classes, names.amounts, prefilter, lookups.aggregateIdByUuid, false, null);
  return researchOf(
    model,
    lookups,
    readHooks(hooks, results),
    usage,
    plan,
    loaded.truncatedAt ?? null,
    prefilter,
    names.amounts,
    async (roots) => nodesOf(model, roots),
  );
}

/**
 * The research over a model given whole, with no database (the warm-up): the
 * hooks read as from a database where their tables are empty.
 */
export function researchOfModel(
  model: CloudModel,
  lookups: Lookups,
  usage: Usage,
  names: RequestNames,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  hooks: readonly CandidateReadHook[],
): Research {
  const plan = planTrees(model, names.classes, names.amounts, prefilter, lookups.aggregateIdByUuid, false, firstRoots);
  return researchOf(model, lookups, readHooks(hooks, []), usage, plan, plan.truncatedAt, prefilter, names.amounts, async (roots) =>
    nodesOf(model, roots),
  );
}

/** Usage of which trees one batch read: 'all', or the listed roots plus those the refresh re-read. */
type UsageScope = 'all' | Set<number>;

/** A kept answer's research read again: the state it now holds for (the same, or a newer usage snapshot that differs nowhere it reads). */
export interface KeptHit {
  hit: ResearchState;
}

/**
 * The research from the shared cache; its loader serves trees outside the
 * first load with the usage already read. Null when the cloud is over the
 * cache's cap: a partial model answers. With a kept answer over the model as
 * it stands, the batch reads only the usage that changed since the answer's
 * (placement_usage_changes, raised by triggers on every allocation write),
 * not every tree's: `{hit}` when nothing the answer reads changed.
 */
export async function researchCached(
  reader: BatchReader,
  model: CloudModel,
  names: RequestNames,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  now: number,
  hooks: readonly CandidateReadHook[],
  kept?: { state: ResearchState; inert: (states: HookStates) => boolean },
): Promise<Research | KeptHit | null> {
  let lookups: Lookups | null = null;
  for (let attempt = 0; attempt < 4; attempt += 1) {
    if (!model.usable(now)) return null;
    // A kept answer over the model as it stands: its scope is the guess this model makes (read again, not made again).
    const known = attempt === 0 && kept !== undefined && kept.state.model === model && kept.state.version === model.version;
    // Before the batch: guess the trees from the model as it stands.
    const guess =
      model.loaded && !known ? planTrees(model, names.classes, names.amounts, prefilter, model.knownAggregates, true, firstRoots) : null;
    const guessedOver = guess && { version: model.version, aggregates: memberOfIds(prefilter, model.knownAggregates) };
    const wanted: UsageScope = known
      ? scopeOf(kept.state.scope)
      : guess === null || attempt >= 2 || guess.reads.size * 2 >= model.roots().length
        ? 'all'
        : guess.reads;
    // Every provider's usage wanted, and the model holds it as of an earlier batch: only what changed since is read.
    const held = !known && wanted === 'all' ? model.held : null;
    const clears = model.clearCount;
    // Names (on the first batch), the trees changed and the usage: one statement, one row.
    const [row, hookResults] = await readOneRow(
      reader,
      known
        ? [keptReadStatement(names, model, kept.state.usageSeq)]
        : [
            ...(lookups ? [] : [lookupsStatement(names)]),
            model.refreshStatement(),
            held ? usageChangesStatement(held.seq, model) : usageStatement(wanted, model),
          ],
      hooks,
      names,
    );
    // Another request moved the model while this kept read was out (reads may come back out of order): the row's
    // null names and trees say "as of the kept answer's model", which is gone; read again, names and all.
    if (known && model.version !== kept.state.version) continue;
    const at = lookups ? 0 : LOOKUPS_COLUMNS;
    const namesKept = known && row[0] === null;
    // Null: no tree changed since the model's seq (keptReadStatement).
    const changed = row[at] === null ? new Set<number>() : model.apply(String(row[at]), now);
    if (changed === 'oversize') return null;
    // The held usage may be another database's when another batch cleared the model meanwhile: read again.
    if (changed === 'reload' || (held && model.clearCount !== clears)) {
      if (!namesKept) lookups ??= lookupsRead(model, row);
      continue;
    }
    const usageSeq = Number(row[at + 2] ?? 0);
    const usageRead = JSON.parse(String(row[at + 1] ?? '[]')) as PackedRow[];
    const since = known ? usageSince(kept.state.usage, usageRead) : held ? usageSince(held.usage, usageRead) : null;
    // The trees and names of the kept answer: its plan is this one's (the viable trees depend on them, never on usage).
    const samePlan = known && namesKept && model.version === kept.state.version;
    // The same trees and names as the kept answer's, and no usage it reads changed, in one snapshot: it is the answer, unless a hook now constrains it.
    if (samePlan && !touches(model, since!.changed, kept.state.plan.reads) && kept.inert(readHooks(hooks, hookResults))) {
      return { hit: usageSeq === kept.state.usageSeq ? kept.state : { ...kept.state, usageSeq, usage: since!.usage } };
    }
    lookups ??= namesKept ? kept!.state.lookups : lookupsRead(model, row);
    const scope: UsageScope = wanted === 'all' ? 'all' : new Set([...wanted, ...changed]);
    // The research's own map (loadTrees adds to it), never a kept answer's; every provider's (the held one's too) is never added to.
    const usage = since === null ? usageOf(usageRead) : known && since.usage === kept.state.usage ? new Map(since.usage) : since.usage;
    if (wanted === 'all') model.hold(usageSeq, usage, clears);
    // After it: the trees the request really needs, with the names it named.
    const plan = samePlan
      ? kept.state.plan
      : (guessStands(guess, guessedOver, model, memberOfIds(prefilter, lookups.aggregateIdByUuid)) ??
        planTrees(model, names.classes, names.amounts, prefilter, lookups.aggregateIdByUuid, false, firstRoots));
    if (!covers(scope, plan.reads)) continue;
    const states = readHooks(hooks, hookResults);
    // Anchor trees are in the usage read (plan.reads); should the search reach another tree, its usage is read then.
    // Names, trees and usage from one batch (the first): what an answer computed from them reads again while they hold.
    const state: ResearchState | null =
      attempt === 0 ? { model, version: model.version, scope: scopeKey(scope), usageSeq, usage, lookups, plan } : null;
    return researchOf(
      model,
      lookups,
      states,
      usage,
      plan,
      plan.truncatedAt,
      prefilter,
      names.amounts,
      async (roots) => {
        if (!covers(scope, roots)) {
          const [rows] = await reader.readBatch([usageStatement(new Set(roots), model)]);
          for (const [rp, perClass] of usageOf(JSON.parse(String(rows!.rows[0]?.[0] ?? '[]')) as PackedRow[])) usage.set(rp, perClass);
        }
        return nodesOf(model, roots);
      },
      state,
      known ? since!.changed : null,
    );
  }
  // Four batches lost to concurrent tree changes: a partial model answers.
  return null;
}

/** The lookups of a row that starts with lookupsStatement()'s columns, the model learning their aggregates. */
function lookupsRead(model: CloudModel, row: readonly unknown[]): Lookups {
  const lookups = lookupsOf(row.slice(0, LOOKUPS_COLUMNS));
  model.learnAggregates(lookups.aggregateIdByUuid);
  return lookups;
}

/**
 * One read batch: `parts`, statements of one row each (names, trees, usage),
 * as one statement whose one row is their columns side by side (each
 * statement costs its own step and result, whatever it reads), then the
 * installed hooks' statements. The row's values, and the hooks' results.
 */
async function readOneRow(
  reader: BatchReader,
  parts: InStatement[],
  hooks: readonly CandidateReadHook[],
  names: RequestNames,
): Promise<[unknown[], ResultSet[]]> {
  const args: Record<string, InValue> = {};
  for (const part of parts) {
    if (typeof part === 'string' || Array.isArray(part.args)) throw new Error('a part of the one row takes named arguments');
    for (const [name, value] of Object.entries(part.args ?? {})) {
      if (name in args && args[name] !== value) throw new Error(`two parts of the one row bind :${name} differently`);
      args[name] = value;
    }
  }
  const sqlOf = (part: InStatement) => (typeof part === 'string' ? part : part.sql);
  const sql =
    parts.length === 1 ? sqlOf(parts[0]!) : `SELECT * FROM ${parts.map((part, i) => `(${sqlOf(part)}) AS part${i}`).join(' CROSS JOIN ')}`;
  const [one, ...hookResults] = await reader.readBatch([{ sql, args }, ...hookStatements(hooks, names.classes)]);
  return [Array.from(one!.rows[0] as ArrayLike<unknown>), hookResults];
}

/** The aggregate ids member_of's uuids resolve to, in order (undefined: a uuid not known, whose condition a guess leaves out). */
const memberOfIds = (prefilter: TreePrefilter, ids: ReadonlyMap<string, number>): (number | undefined)[] =>
  prefilter.memberOf.flatMap((anyOf) => anyOf.map((uuid) => ids.get(uuid)));

/**
 * The guess as the plan, when planTrees would give it again: the batch
 * changed no tree (the model's version is the guess's) and the lookups
 * resolve every member_of uuid as the guess did. Else null.
 */
function guessStands(
  guess: TreePlan | null,
  over: { version: number; aggregates: (number | undefined)[] } | null,
  model: CloudModel,
  aggregates: (number | undefined)[],
): TreePlan | null {
  if (guess === null || over === null || over.version !== model.version) return null;
  return over.aggregates.every((id, i) => id !== undefined && id === aggregates[i]) ? guess : null;
}

const covers = (scope: UsageScope, roots: Iterable<number>): boolean => {
  if (scope === 'all') return true;
  for (const root of roots) if (!scope.has(root)) return false;
  return true;
};

/** Whether any of `providers` lies in one of `roots` (a provider the model no longer holds counts: its tree changed). */
function touches(model: CloudModel, providers: ReadonlySet<number>, roots: ReadonlySet<number>): boolean {
  for (const id of providers) {
    const root = model.provider(id)?.rootId;
    if (root === undefined || roots.has(root)) return true;
  }
  return false;
}

const ALL_USAGE_SQL = groupedUsage('allocations a');

/** Current usage per provider and class: of every provider, or of the given trees and those the refresh re-reads. */
const usageStatement = (scope: UsageScope, model: CloudModel): InStatement =>
  scope === 'all' ? { sql: ALL_USAGE_SQL, args: {} } : model.treesUsageStatement(scope);

/**
 * A kept answer's research read again, in one statement of one row laid out
 * as lookupsStatement(), refreshStatement() and the usage's two columns side
 * by side: the tree changes' and usage changes' highest seqs and the
 * database's epoch read once, and the rest only where they moved since the
 * model's seq and `usageSeq` (the usual repeated request reads three index
 * probes). Names: null while no tree changed (every write that changes what a
 * name resolves to marks a tree change, migrations 0003 and 0016; an aggregate
 * created unused changes no answer). Trees: null while none changed in the
 * same database. Usage: of every provider whose allocations changed since
 * `usageSeq`, and of every provider of a tree changed since the model's seq
 * (it may have come into the trees read), a row with a null class for one that
 * has none now; driven from the change rows (seq indexes). Change rows
 * numbered below `usageSeq` (a database restored under the service, or a
 * replica behind the snapshot the answer was kept from): every provider's.
 */
function keptReadStatement(names: RequestNames, model: CloudModel, usageSeq: number): InStatement {
  const refresh = model.refreshStatement();
  if (typeof refresh === 'string' || Array.isArray(refresh.args)) throw new Error('the refresh takes named arguments');
  const treesSame = 'k.trees IS :treeSeq';
  return {
    sql: `WITH k(trees, usage, epoch) AS (SELECT (SELECT COALESCE(MAX(${TREE_CHANGE.seq}), 0) FROM placement_tree_changes),
        (SELECT COALESCE(MAX(${USAGE_CHANGE.seq}), 0) FROM placement_usage_changes),
        (SELECT ${EPOCH.token} FROM placement_epoch WHERE ${EPOCH.id} = 1))
      SELECT ${LOOKUPS_EXPRESSIONS.map((sql, i) => `CASE WHEN ${treesSame} THEN NULL ELSE ${sql} END AS names${i}`).join(', ')},
        CASE WHEN ${treesSame} AND k.epoch IS :epoch THEN NULL ELSE (${refresh.sql}) END AS trees,
        CASE WHEN ${treesSame} AND k.usage = :usageSeq THEN '[]' ELSE (SELECT usage_rows FROM (${usageChangesSql})) END AS usage_rows,
        k.usage AS usage_seq
      FROM k`,
    args: { ...lookupsArgs(names), ...refresh.args, epoch: model.appliedEpoch, usageSeq, treeSeq: model.appliedSeq },
  };
}

const usageChangesSql = `WITH touched(id) AS (
        SELECT ${USAGE_CHANGE.providerId} FROM placement_usage_changes WHERE ${USAGE_CHANGE.seq} > :usageSeq
        UNION SELECT p.${RP.id} FROM placement_tree_changes c CROSS JOIN resource_providers p ON p.${RP.rootProviderId} = c.${TREE_CHANGE.rootId}
          WHERE c.${TREE_CHANGE.seq} > :treeSeq
        UNION SELECT p.${RP.id} FROM (SELECT 1 WHERE (SELECT COALESCE(MAX(${USAGE_CHANGE.seq}), 0) FROM placement_usage_changes) < :usageSeq)
          CROSS JOIN resource_providers p)
      ${groupedUsage(`touched t LEFT JOIN allocations a ON a.${ALLOC.resourceProviderId} = t.id`, 't.id')}`;

/** The usage changed since `usageSeq` (and of the trees changed since the model's seq), as usageStatement lays it out. */
const usageChangesStatement = (usageSeq: number, model: CloudModel): InStatement => ({
  sql: usageChangesSql,
  args: { usageSeq, treeSeq: model.appliedSeq },
});

/**
 * `base` with the providers of `rows` (keptReadStatement) read afresh: a new
 * map (`base` is a kept answer's, never changed), and the providers whose usage differs.
 */
function usageSince(base: Usage, rows: PackedRow[]): { usage: Usage; changed: Set<number> } {
  const fresh: Usage = new Map();
  const at = USAGE_ROW.at;
  for (const row of rows) {
    const rp = Number(row[at.rp]);
    if (row[at.cls] === null) fresh.set(rp, fresh.get(rp) ?? new Map());
    else addUsage(fresh, rp, Number(row[at.cls]), Number(row[at.used]));
  }
  const changed = new Set<number>();
  for (const [rp, perClass] of fresh) if (!sameUsage(base.get(rp), perClass)) changed.add(rp);
  if (changed.size === 0) return { usage: base, changed };
  const usage = new Map(base);
  for (const rp of changed) {
    const perClass = fresh.get(rp)!;
    if (perClass.size) usage.set(rp, perClass);
    else usage.delete(rp);
  }
  return { usage, changed };
}

/** Whether a provider's usage reads the same (no entry and an empty one alike). */
function sameUsage(kept: ReadonlyMap<number, number> | undefined, fresh: ReadonlyMap<number, number>): boolean {
  if ((kept?.size ?? 0) !== fresh.size) return false;
  for (const [classId, used] of fresh) if (kept!.get(classId) !== used) return false;
  return true;
}

// --- Kept answers ------------------------------------------------------------
// A full answer over the shared cache is a function of the request, the
// microversion, the engine's settings, the trees (the model's version), the
// names the request looked up and the usage of the trees it read; the
// installed hooks too, unless they leave nothing out and add no capacity rule
// at the request's instant (checked again at every request: holds and leases
// open and close with the clock). Every request still sends its one read
// batch; it reads the usage changed since the answer kept for the same
// request (triggers number every allocation write in placement_usage_changes,
// whichever process writes). When it reads the same names over the same
// model version and no usage changed in the trees the answer reads, the kept
// bytes are the answer (another process's writes move the usage changes or
// the trees' seq, so they are seen the same way). Never kept: an answer cut by
// the time budget, a random order, a second pass or a second batch (another
// snapshot), a partial model (over the cache's size), extension parameters.

/** What an answer was computed from: one batch's names and usage, over one version of the model. */
export interface ResearchState {
  model: CloudModel;
  version: number;
  /** The trees whose usage the batch read ('all', or their roots). */
  scope: string;
  /** The highest usage change seq (placement_usage_changes) in the batch's snapshot: `usage` is as of it. */
  usageSeq: number;
  /** The usage of the trees in `scope` (and maybe more) as of `usageSeq`: never changed once kept (a later state is a copy). */
  usage: Usage;
  /** The request's names as looked up: they read the same while the model's version does (lookupsStatement). */
  lookups: Lookups;
  /** The trees planned over them (rules.ts planTrees): the same while the model's version and the names are. */
  plan: TreePlan;
}

const scopeKey = (scope: UsageScope): string => (scope === 'all' ? 'all' : [...scope].join(','));
const scopeOf = (key: string): UsageScope => (key === 'all' ? 'all' : new Set(key === '' ? [] : key.split(',').map(Number)));

/** The JSON text of requests parsed once and shared unchanged (CandidateEngine.parseRepeated), written when parsed. */
const sharedRequestTexts = new WeakMap<CandidateRequest, string>();

const requestText = (request: CandidateRequest): string =>
  sharedRequestTexts.get(request) ??
  JSON.stringify(request, (_key, value: unknown) => (value instanceof Map || value instanceof Set ? [...value] : value));

/** The names and prefilter of requests parsed once and shared unchanged, made at their first search. */
const sharedRequestParts = new WeakMap<CandidateRequest, { names: RequestNames; prefilter: TreePrefilter }>();

/** A request's names and prefilter; a shared request's (CandidateEngine.parseRepeated) made once. */
function namesAndPrefilterOf(request: CandidateRequest): { names: RequestNames; prefilter: TreePrefilter } {
  const known = sharedRequestParts.get(request);
  if (known) return known;
  const parts = { names: namesOf(request), prefilter: prefilterOf(request) };
  if (sharedRequestTexts.has(request)) sharedRequestParts.set(request, parts);
  return parts;
}

/** What a request's answer depends on besides what it reads; null for a request whose answer is never kept. */
function answerKey(request: CandidateRequest, mv: Microversion, options: CandidateOptions): string | null {
  if (options.randomize || options.firstPassOnly || options.treeCacheProviders <= 0 || (request.ext?.size ?? 0) > 0) return null;
  const settings = [options.maxCandidates, options.timeBudgetMs ?? 0, options.generationStrategy ?? 'depth-first'];
  return `${mv.toString()} ${settings.join(' ')} ${requestText(request)}`;
}

/** A JSON answer as kept. */
export interface KeptAnswer {
  state: ResearchState;
  bytes: Uint8Array<ArrayBuffer>;
  count: number;
  cut: 'cap' | 'time_budget' | null;
  /** When it can be put together again tree by tree (spliceKept): its viable trees and the usage it read; else null. */
  trees: KeptTrees | null;
  /** Each tree's share of `bytes`, in root order (empty when `trees` is null). */
  spans: TreeSpan[];
}

/** What a kept answer's trees were computed from, beside its state: the viable trees. */
export interface KeptTrees {
  viable: ReadonlySet<number>;
}

/** Most answers kept, and most bytes they hold in all (a scheduler asks a few distinct queries; an answer above half of it is not kept). */
const KEPT_ANSWERS = 32;
const KEPT_ANSWER_BYTES = 16 << 20;

/** About what a kept answer holds: its bytes, the usage it read (~200 bytes a provider) and its trees' spans. */
const sizeOf = (answer: KeptAnswer): number => answer.bytes.length + answer.state.usage.size * 200 + answer.spans.length * 64;

/** The kept answers of one app (Deps.candidates), by answerKey, least recently used first. */
export class KeptAnswers {
  private readonly answers = new Map<string, KeptAnswer>();
  private bytes = 0;
  private hitCount = 0;
  private spliceCount = 0;

  get(key: string): KeptAnswer | undefined {
    const answer = this.answers.get(key);
    if (answer) {
      this.answers.delete(key);
      this.answers.set(key, answer);
    }
    return answer;
  }

  keep(key: string, answer: KeptAnswer): void {
    this.drop(key);
    if (sizeOf(answer) > KEPT_ANSWER_BYTES / 2) return;
    this.answers.set(key, answer);
    this.bytes += sizeOf(answer);
    for (const oldest of this.answers.keys()) {
      if (this.answers.size <= KEPT_ANSWERS && this.bytes <= KEPT_ANSWER_BYTES) break;
      this.drop(oldest);
    }
  }

  /** Answers kept now. */
  get size(): number {
    return this.answers.size;
  }

  /** Requests answered with a kept answer so far (tests, benches). */
  get hits(): number {
    return this.hitCount;
  }

  /** Counts a request answered with a kept answer. */
  countHit(): void {
    this.hitCount += 1;
  }

  /** Requests answered with a kept answer whose changed trees were computed again, so far (tests, benches). */
  get splices(): number {
    return this.spliceCount;
  }

  /** Counts a request answered by splicing. */
  countSplice(): void {
    this.spliceCount += 1;
  }

  private drop(key: string): void {
    const old = this.answers.get(key);
    if (!old) return;
    this.bytes -= sizeOf(old);
    this.answers.delete(key);
  }
}

// --- What extensions add: the hooks ----------------------------------------
// What an extension may add to the candidates engine: query parameters, a
// read beside the trees (providers left out, a capacity rule) and a gate that
// answers a request with none before any search. The engine defines these
// hooks and calls them; src/ext implements them and the composition root
// (src/compose.ts) installs them. Nothing in this folder imports src/ext.
/**
 * A query parameter an extension adds to GET /allocation_candidates (and to
 * what takes the same query: headroom, why-no-host, gangs). Taken out of the
 * query before upstream's parser sees it; any `ext_` name no installed
 * extension declares is left in, so upstream's parser refuses it with its
 * usual 400 (a stock request never changes meaning).
 */
export interface CandidateParam<T = unknown> {
  /** The query key, `ext_...`. */
  readonly name: string;
  /** The microversion it needs: below it the key is left to upstream's parser, which refuses it as any unknown key. */
  readonly since?: string;
  /** What GET /openapi.json says of it; a parameter without one is accepted but not listed. */
  readonly description?: string;
  /**
   * Its value, from every value the query gives it and the stock request
   * parsed so far (throws invalidQuery or badCandidateRequest, errors.ts).
   * Kept on the request's `ext`, under `name` (extParam reads it back).
   */
  parse(values: string[], request: CandidateRequest): T;
}

/** What the request carries for `param` (undefined when not given). */
export const extParam = <T>(request: CandidateRequest, param: CandidateParam<T>): T | undefined =>
  request.ext?.get(param.name) as T | undefined;

/** Who asks: the gates' context. */
export interface Caller {
  projectId: string | null;
}

/**
 * A request an extension answers with no candidates at all, before any search
 * (project limits: the request alone would cross the caller's limit).
 */
export interface CandidateGate {
  readonly name: string;
  /** The key why-no-host reports the refusal under. */
  readonly diagnosisKey: string;
  /** Why this request gets none; null: the search goes on. */
  refusal(request: CandidateRequest, caller: Caller): Promise<string | null>;
}

/** One piece of a candidate: an amount of a class on a provider. */
export interface Piece {
  providerId: number;
  classId: number;
  amount: number;
}

/** Amounts a search walk has taken so far, by provider (several groups may use one provider). */
export interface TakenView {
  forEachOn(providerId: number, visit: (classId: number, amount: number) => void): void;
}

/** A capacity condition beside the inventories' own (shared counters: several classes draw on one counter). */
export interface CapacityRule {
  /**
   * Whether `pieces` fit beside current usage. With `taken`, what the walk
   * holds on each piece's provider is what must fit (it includes the pieces).
   */
  fits(pieces: readonly Piece[], taken?: TakenView): boolean;
  /**
   * Where the rule bounds a pair by amount alone: the most that successive
   * claims of this request may add on (provider, class) beside the usage the
   * batch read (headroom repeats a claim within it); undefined where it does not.
   */
  room?(providerId: number, classId: number): number | undefined;
}

/**
 * A read-side extension of GET /allocation_candidates (and of what runs its
 * search: headroom, why-no-host). Its statement joins every read batch the
 * request makes, so it costs no round trip and reads the same snapshot as
 * the trees and their usage.
 */
export interface CandidateReadHook<State = unknown> {
  /** A name for errors and tests. */
  readonly name: string;
  /** The statement, given the class names the request asks for. */
  statement(classNames: readonly string[]): InStatement;
  /** Its result, read back. */
  read(result: ResultSet | undefined): State;
  /** Providers the request leaves out: never a choice, and a root here takes its whole tree out. */
  excludeProviders?(state: State, request: CandidateRequest): ReadonlySet<number>;
  /**
   * A capacity condition the search applies to every choice of `request`,
   * judged at `nowMs` (the request's instant, on the app's clock); null when
   * it constrains nothing (the usual cloud).
   */
  capacityRule?(state: State, request: CandidateRequest, nowMs: number): CapacityRule | null;
}

/** What the installed hooks read in one batch, by hook (headroom reads the counters' state back). */
export class HookStates {
  private readonly states = new Map<CandidateReadHook, unknown>();

  set<State>(hook: CandidateReadHook<State>, state: State): void {
    this.states.set(hook as CandidateReadHook, state);
  }

  get<State>(hook: CandidateReadHook<State>): State | undefined {
    return this.states.get(hook as CandidateReadHook) as State | undefined;
  }

  /** The union of every hook's excluded providers (empty without any). */
  excluded(hooks: readonly CandidateReadHook[], request: CandidateRequest): ReadonlySet<number> {
    let excluded: Set<number> | null = null;
    for (const hook of hooks) {
      if (!hook.excludeProviders) continue;
      const some = hook.excludeProviders(this.states.get(hook), request);
      if (!some.size) continue;
      excluded ??= new Set();
      for (const id of some) excluded.add(id);
    }
    return excluded ?? NONE;
  }

  /** Every hook's capacity rule, as one; null when none constrains anything (the search then pays nothing). */
  capacityRule(hooks: readonly CandidateReadHook[], request: CandidateRequest, nowMs: number): CapacityRule | null {
    const rules: CapacityRule[] = [];
    for (const hook of hooks) {
      const rule = hook.capacityRule?.(this.states.get(hook), request, nowMs);
      if (rule) rules.push(rule);
    }
    if (rules.length <= 1) return rules[0] ?? null;
    return {
      fits: (pieces, taken) => rules.every((rule) => rule.fits(pieces, taken)),
      room(providerId, classId) {
        let least: number | undefined;
        for (const rule of rules) {
          const room = rule.room?.(providerId, classId);
          if (room !== undefined && (least === undefined || room < least)) least = room;
        }
        return least;
      },
    };
  }
}

const NONE: ReadonlySet<number> = new Set();

/** The hooks' statements, to append to a read batch. */
export const hookStatements = (hooks: readonly CandidateReadHook[], classNames: readonly string[]): InStatement[] =>
  hooks.map((hook) => hook.statement(classNames));

/** Reads the hooks' results (the batch's last `hooks.length` results). */
export function readHooks(hooks: readonly CandidateReadHook[], results: readonly (ResultSet | undefined)[]): HookStates {
  const states = new HookStates();
  hooks.forEach((hook, i) => {
    states.set(hook, hook.read(results[i]));
  });
  return states;
}

// --- The engine object --------------------------------------------------------
// The engine of one app (Deps.candidates): its settings, its tree
// cache, what the installed extensions add (query parameters, read hooks,
// gates; the composition root installs them) and where it counts.
// Every caller (the route, headroom, why-no-host, the warm-up) takes its
// CandidateOptions from here, so two apps in one process share nothing.

/** What the installed extensions add to the engine (the hooks, above), each list in installation order. */
export interface CandidateExtensions {
  params: readonly CandidateParam[];
  hooks: readonly CandidateReadHook[];
  gates: readonly CandidateGate[];
}

/** The settings of the engine (PLACEMENT_* in config.ts; compose.ts maps them). */
export interface CandidateSettings {
  randomize: boolean;
  maxCandidates: number;
  timeBudgetMs: number;
  treeCacheProviders: number;
  generationStrategy: GenerationStrategy;
}

/** Most stock queries an engine keeps parsed (parseRepeated). */
const PARSED_QUERIES = 64;

export class CandidateEngine {
  /** The provider trees kept in memory between requests, one model per database handle. */
  readonly trees: TreeCache;
  /** The presentation's bytes kept between answers, by provider node of the trees above. */
  readonly keptBytes = new KeptBytes();
  /** Whole JSON answers kept while what they were computed from reads the same (KeptAnswers). */
  readonly answers = new KeptAnswers();
  /** The installed read hooks, joined to every read batch of a search. */
  readonly hooks: readonly CandidateReadHook[];
  /** The installed extensions' query parameters, by name. */
  readonly params: ReadonlyMap<string, CandidateParam>;
  private readonly gates: readonly CandidateGate[];
  /** Stock queries parsed by parseRepeated, by microversion and text, oldest first. */
  private readonly parsedQueries = new Map<string, CandidateRequest>();

  constructor(
    readonly settings: CandidateSettings,
    extensions: CandidateExtensions,
    private readonly metrics: CandidateMetrics | undefined,
    private readonly clock: () => number = Date.now,
  ) {
    this.trees = new TreeCache(metrics ?? null);
    this.hooks = extensions.hooks;
    this.gates = extensions.gates;
    this.params = new Map(extensions.params.map((param) => [param.name, param]));
  }

  /** A candidates query, parsed: upstream's keys and the installed extensions' (parse.ts); throws DomainError('invalid'). */
  parse(query: Record<string, string[]>, mv: Microversion): CandidateRequest {
    return parseCandidateRequestWithExt(query, mv, this.params);
  }

  /**
   * parse(), for a caller that never changes the request it gets (the
   * route): a stock query (no extension parameter) of the same text and
   * microversion as one parsed before is the same request, parsed once (a
   * scheduler repeats a few queries). `query` gives the parameters of `text`.
   */
  parseRepeated(text: string, mv: Microversion, query: () => Record<string, string[]>): Readonly<CandidateRequest> {
    const key = `${mv.toString()} ${text}`;
    const seen = this.parsedQueries.get(key);
    if (seen) return seen;
    const request = this.parse(query(), mv);
    if (request.ext === undefined && request.alternatives === undefined) {
      sharedRequestTexts.set(request, requestText(request));
      if (this.parsedQueries.size >= PARSED_QUERIES) this.parsedQueries.delete(this.parsedQueries.keys().next().value!);
      this.parsedQueries.set(key, request);
    }
    return request;
  }

  /** The first installed gate that answers `request` with none, and why; null when the search goes on. */
  async refusal(request: CandidateRequest, caller: Caller): Promise<{ gate: CandidateGate; reason: string } | null> {
    for (const gate of this.gates) {
      const reason = await gate.refusal(request, caller);
      if (reason !== null) return { gate, reason };
    }
    return null;
  }

  /** The options of one request, now (`overrides`: what a caller changes, e.g. headroom's uncapped search). */
  options(overrides: Partial<CandidateOptions> = {}): CandidateOptions {
    const { randomize, maxCandidates, timeBudgetMs, treeCacheProviders, generationStrategy } = this.settings;
    return {
      randomize,
      maxCandidates,
      timeBudgetMs,
      treeCacheProviders,
      generationStrategy,
      now: this.clock(),
      trees: this.trees,
      keptBytes: this.keptBytes,
      answers: this.answers,
      hooks: this.hooks,
      params: this.params,
      ...(this.metrics ? { metrics: this.metrics } : {}),
      ...overrides,
    };
  }

  /** Reads the trees changed since the cache's last refresh (every tree the first time); nothing with the cache off. */
  async refresh(reader: BatchReader): Promise<void> {
    const cap = this.settings.treeCacheProviders;
    if (cap > 0) await refreshTreeModel(reader, this.trees.modelFor(reader, cap), this.clock(), this.keptBytes);
  }

  /**
   * Refreshes the cache every `everyMs` off the request path (Node mode), and
   * runs `rewarm` when the trees took a new shape (model-refresh.ts); a no-op
   * with the cache off or `everyMs` 0.
   */
  keepFresh(
    reader: BatchReader,
    everyMs: number,
    onError: (err: unknown) => void,
    rewarm?: (kind: RewarmKind) => Promise<void>,
  ): ModelRefresher {
    const cap = this.settings.treeCacheProviders;
    if (cap <= 0 || everyMs <= 0) return { stop: () => {} };
    return keepTreeModelFresh(reader, this.trees.modelFor(reader, cap), everyMs, onError, this.keptBytes, rewarm);
  }
}
