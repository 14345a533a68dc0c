// FROZEN COPY of src/placement/candidates/ as it was before the engine rebuild
//: the oracle of test/placement/candidates-differential.test.ts.
// Do not improve it; change it only to mirror a deliberate semantic fix made to
// the live engine, and say so in the commit.
// GET /allocation_candidates, end to end below HTTP: resolve names, load the
// research context (1-2 round trips as a rule, 4 at most), search in memory, shape the answer for
// the requested microversion.
import type { Client } from '@libsql/client';
import { ApiError, webobDetail } from '../../../src/http/api-error.js';
import type { Microversion } from '../../../src/http/microversion.js';
import { MV } from '../../../src/placement/versions.js';
import type { CandidateRequest } from './parse.js';
import { loadCandidates, loadTrees, type CandidateInventories, type Lookups, type ProviderNode, type TreePrefilter } from './research.js';
import { CandidateSearch, RequestPicker, type AllocationRequest, type ResolvedGroup } from './search.js';

export interface CandidateOptions {
  randomize: boolean;
  /** 0 = no cap (placement's max_allocation_candidates). */
  maxCandidates: number;
}

type ResourceAmounts = Record<string, number>;
type ListAllocation = { resource_provider: { uuid: string }; resources: ResourceAmounts };
export interface CandidatesBody {
  allocation_requests: ({ allocations: ListAllocation[] } | { allocations: Record<string, { resources: ResourceAmounts }>; mappings?: Record<string, string[]> })[];
  provider_summaries: Record<string, {
    resources: Record<string, { capacity: number; used: number }>;
    traits?: string[];
    parent_provider_uuid?: string | null;
    root_provider_uuid?: string;
  }>;
}

const bad = (message: string) => new ApiError(400, webobDetail(400, message));

export async function findAllocationCandidates(
  client: Client,
  request: CandidateRequest,
  mv: Microversion,
  options: CandidateOptions,
): Promise<CandidatesBody> {
  const classes = [...new Set(request.groups.flatMap((g) => [...g.resources.keys()]))];
  const traitNames = [...new Set([
    ...request.groups.flatMap((g) => [...g.requiredAnyOf.flat(), ...g.forbiddenTraits]),
    ...request.rootRequired, ...request.rootForbidden,
  ])];
  const aggregates = [...new Set(request.groups.flatMap((g) => [...g.memberOf.flat(), ...g.forbiddenAggregates]))];
  const inTree = [...new Set(request.groups.flatMap((g) => (g.inTree ? [g.inTree] : [])))];
  const amounts = new Map<string, { smallest: number; largest: number }>();
  for (const group of request.groups) {
    for (const [name, amount] of group.resources) {
      const seen = amounts.get(name);
      amounts.set(name, seen
        ? { smallest: Math.min(seen.smallest, amount), largest: Math.max(seen.largest, amount) }
        : { smallest: amount, largest: amount });
    }
  }

  // With one group every candidate row serves it, so its tree-level
  // conditions can prune in SQL; with several, only request-wide ones can,
  // plus the classes each tree must offer.
  const only = request.groups.length === 1 ? request.groups[0]! : null;
  const prefilter: TreePrefilter = {
    requiredAnyOf: only?.requiredAnyOf ?? [],
    forbiddenTraits: only?.forbiddenTraits ?? [],
    memberOf: only?.memberOf ?? [],
    rootRequired: request.rootRequired,
    rootForbidden: request.rootForbidden,
    everyClassInTree: only === null,
  };
  type Attempt = { lookups: Lookups; nodes: Map<number, ProviderNode>; chosen: AllocationRequest[]; complete: boolean };
  const stopsEarly = request.limit !== null && !options.randomize;
  const attempt = async (firstRoots: number | null, inChunks: boolean): Promise<Attempt> => {
    // Viable trees come whole with the candidates (one round trip) unless a
    // limit may stop after a first chunk of an unbounded viable set.
    const preload = firstRoots !== null || !(stopsEarly && inChunks);
    const { lookups, candidates, preloaded, truncatedAt } = await loadCandidates(
      client, { classes, traits: traitNames, aggregates, inTree }, amounts, prefilter, firstRoots, preload,
    );
    const unknownClass = classes.find((c) => !lookups.classIdByName.has(c));
    if (unknownClass) throw bad(`Invalid resource class in resources parameter: No such resource class ${unknownClass}.`);
    const unknownTraits = traitNames.filter((t) => !lookups.traitIdByName.has(t)).sort();
    if (unknownTraits.length) throw bad(`No such trait(s): ${unknownTraits.join(', ')}`);

    const groups: ResolvedGroup[] = request.groups.map((g) => ({
      suffix: g.suffix,
      resources: [...g.resources].map(([name, amount]): [number, number] => [lookups.classIdByName.get(name)!, amount])
        .sort((a, b) => a[0] - b[0]),
      requiredAnyOf: g.requiredAnyOf,
      forbiddenTraits: g.forbiddenTraits,
      memberOf: g.memberOf.map((anyOf) => new Set(anyOf.flatMap((u) => lookups.aggregateIdByUuid.get(u) ?? []))),
      forbiddenAggregates: new Set(g.forbiddenAggregates.flatMap((u) => lookups.aggregateIdByUuid.get(u) ?? [])),
      inTreeRoot: g.inTree === null ? null : (lookups.rootIdByProviderUuid.get(g.inTree) ?? -1),
    }));

    const roots = new Set(candidates.rootOf.values());
    for (const anchors of candidates.anchorsOfSharing.values()) for (const root of anchors) roots.add(root);
    const search = new CandidateSearch({
      groups,
      groupPolicy: request.groupPolicy,
      sameSubtrees: request.sameSubtrees,
      rootRequired: request.rootRequired,
      rootForbidden: request.rootForbidden,
      nestedAware: mv.atLeast(MV.AC_NESTED),
      candidates,
      nodes: new Map(preloaded.nodes),
    });
    const picker = new RequestPicker(request.limit, options.randomize, options.maxCandidates);
    // Trees not preloaded: with a limit and stable order, the first few are
    // loaded alone, as they usually fill the limit; the rest, if needed, in
    // one more query (a fixed count of round trips: each is a network hop at
    // the edge).
    const anchors = [...roots].filter(coversEveryClass(candidates, groups))
      // Trees above the cut-off were not read: they cannot be judged yet.
      .filter((root) => truncatedAt === null || root <= truncatedAt)
      .sort((a, b) => a - b);
    // Preloaded: whatever else anchors a candidate (trees reached only
    // through a sharing provider) comes in one query.
    let chunkSize = stopsEarly && inChunks && !preloaded.roots.size ? Math.max(64, request.limit! * 4) : anchors.length;
    const nodes = new Map(preloaded.nodes);
    // Sharing providers' own trees come with the first chunk: their traits decide their use.
    const loadedRoots = new Set(preloaded.roots);
    let pending = [...candidates.anchorsOfSharing.keys()].flatMap((id) => candidates.rootOf.get(id) ?? []);
    for (let start = 0; start < anchors.length && !picker.done; start += chunkSize, chunkSize = anchors.length) {
      const chunk = anchors.slice(start, start + chunkSize);
      const wanted = [...new Set([...pending, ...chunk])].filter((root) => !loadedRoots.has(root));
      pending = [];
      const loaded = wanted.length ? await loadTrees(client, wanted) : new Map<number, ProviderNode>();
      for (const root of wanted) loadedRoots.add(root);
      for (const [id, node] of loaded) nodes.set(id, node);
      search.addTrees(loaded.values());
      picker.offer(search.requests(chunk));
    }
    return { lookups, nodes, chosen: picker.result(), complete: truncatedAt === null || picker.done };
  };
  // A small stable-order limit first reads only the lowest
  // viable trees; if they cannot fill the limit, the search runs again in full.
  const tryFirstRoots = request.limit !== null && !options.randomize && inTree.length === 0
    && options.maxCandidates === 0;
  let outcome = await attempt(tryFirstRoots ? Math.max(64, request.limit! * 4) : null, true);
  // The lowest trees were already tried: load the rest in one go.
  if (!outcome.complete) outcome = await attempt(null, false);
  const { lookups, nodes, chosen } = outcome;

  // Summaries: every provider of the trees used (1.29+), or just the providers used before.
  const usedProviders = new Set(chosen.flatMap((r) => r.pieces.map((p) => p.providerId)));
  const usedRoots = new Set([...usedProviders].map((id) => nodes.get(id)!.rootId));
  const nestedAware = mv.atLeast(MV.AC_NESTED);
  const allResources = mv.atLeast(MV.AC_ALL_RESOURCES_IN_SUMMARY);
  const withTraits = mv.atLeast(MV.AC_REQUIRED);
  const requested = new Set(classes);
  const classNameById = new Map([...lookups.classIdByName].map(([name, id]) => [id, name]));

  const summaries: CandidatesBody['provider_summaries'] = {};
  const summarized = [...nodes.values()].filter((n) => (nestedAware ? usedRoots.has(n.rootId) : usedProviders.has(n.id)));
  for (const node of summarized) {
    const entry: CandidatesBody['provider_summaries'][string] = { resources: {} };
    if (withTraits) entry.traits = [...node.traits]; // trait id order, as upstream lists them
    if (nestedAware) {
      entry.parent_provider_uuid = node.parentId === null ? null : (nodes.get(node.parentId)?.uuid ?? null);
      entry.root_provider_uuid = nodes.get(node.rootId)?.uuid ?? node.uuid;
    }
    summaries[node.uuid] = entry;
  }
  for (const node of summarized) {
    const entry = summaries[node.uuid]!;
    for (const inv of node.inventories) {
      if (!allResources && !requested.has(inv.className)) continue;
      entry.resources[inv.className] = { capacity: inv.capacity, used: inv.used };
    }
  }

  const uuidOf = (id: number) => nodes.get(id)!.uuid;
  const dictShape = mv.atLeast(MV.ALLOC_DICT);
  const withMappings = mv.atLeast(MV.MAPPINGS);
  const present = (r: AllocationRequest) => {
    const byProvider = new Map<string, ResourceAmounts>();
    for (const piece of r.pieces) {
      const uuid = uuidOf(piece.providerId);
      const resources = byProvider.get(uuid) ?? {};
      resources[classNameById.get(piece.classId)!] = piece.amount;
      byProvider.set(uuid, resources);
    }
    if (!dictShape) {
      return { allocations: [...byProvider].map(([uuid, resources]) => ({ resource_provider: { uuid }, resources })) };
    }
    const allocations = Object.fromEntries([...byProvider].map(([uuid, resources]) => [uuid, { resources }]));
    if (!withMappings) return { allocations };
    const mappings = Object.fromEntries([...r.mappings].map(([suffix, ids]) => [suffix, ids.map(uuidOf)]));
    return { allocations, mappings };
  };
  return { allocation_requests: chosen.map(present), provider_summaries: summaries };
}

/**
 * A tree can only anchor a candidate if its own providers plus the sharing
 * providers it is anchored to offer every requested class: a cheap cut made
 * before any tree is loaded.
 */
function coversEveryClass(candidates: CandidateInventories, groups: ResolvedGroup[]): (root: number) => boolean {
  const needed = [...new Set(groups.flatMap((g) => g.resources.map(([classId]) => classId)))];
  const offered = new Map<number, Set<number>>();
  const offer = (root: number, classes: Iterable<number>) => {
    let set = offered.get(root);
    if (!set) offered.set(root, (set = new Set()));
    for (const c of classes) set.add(c);
  };
  for (const [providerId, perClass] of candidates.byProvider) offer(candidates.rootOf.get(providerId)!, perClass.keys());
  for (const [sharing, anchors] of candidates.anchorsOfSharing) {
    const classes = [...(candidates.byProvider.get(sharing)?.keys() ?? [])];
    for (const anchor of anchors) offer(anchor, classes);
  }
  return (root) => needed.every((c) => offered.get(root)?.has(c) ?? false);
}
