// Shapes the chosen allocation requests and the summaries of their providers
// for the requested microversion: a list per provider before 1.12, a dict
// from 1.12, mappings from 1.34; summaries of the providers used before 1.29,
// of every provider of the trees used from 1.29 (with parent and root), all
// their resources from 1.27, traits from 1.17. Written for speed: a full
// answer at N=1000 holds ~1000 requests and ~1000 summaries, so no Maps or
// Object.fromEntries per request.
import { type ProviderNode, type Usage, usedOf } from '../cloud-model.js';
import type { CandidatesJson, DictAllocationRequestJson, ListAllocationJson, ProviderSummaryJson } from '../../schemas/responses.js';
import type { AllocationRequest } from '../search.js';

// The wire shapes, as ../../schemas/responses.ts describes them per microversion.
export type ResourceAmounts = Record<string, number>;
type ListAllocation = ListAllocationJson;
type DictAllocation = DictAllocationRequestJson;
export type ProviderSummary = ProviderSummaryJson;
export type CandidatesBody = CandidatesJson;

/** What the answer's shape depends on, decided from the microversion by the caller. */
export interface Presentation {
  /** 1.29+: summaries of whole trees, with parent and root uuids. */
  nestedAware: boolean;
  /** 1.27+: every resource of a summarised provider, not just the requested ones. */
  allResources: boolean;
  /** 1.17+: traits in summaries. */
  withTraits: boolean;
  /** 1.12+: allocations keyed by provider uuid. */
  dictShape: boolean;
  /** 1.34+: which providers satisfied each group. */
  withMappings: boolean;
}

export function presentCandidates(
  chosen: AllocationRequest[],
  nodes: ReadonlyMap<number, ProviderNode>,
  usage: Usage,
  classNameById: ReadonlyMap<number, string>,
  requestedClasses: ReadonlySet<string>,
  shape: Presentation,
): CandidatesBody {
  const uuidOf = (id: number) => nodes.get(id)!.uuid;
  const allocationRequests: CandidatesBody['allocation_requests'] = new Array(chosen.length);
  const usedProviders = new Set<number>();
  for (let i = 0; i < chosen.length; i += 1) {
    const request = chosen[i]!;
    for (const piece of request.pieces) usedProviders.add(piece.providerId);
    allocationRequests[i] = shape.dictShape
      ? dictRequest(request, uuidOf, classNameById, shape.withMappings)
      : listRequest(request, uuidOf, classNameById);
  }
  return { allocation_requests: allocationRequests, provider_summaries: summaries(usedProviders, nodes, usage, requestedClasses, shape) };
}

function dictRequest(
  request: AllocationRequest,
  uuidOf: (id: number) => string,
  classNameById: ReadonlyMap<number, string>,
  withMappings: boolean,
): DictAllocation {
  const allocations: DictAllocation['allocations'] = {};
  for (const piece of request.pieces) {
    const uuid = uuidOf(piece.providerId);
    (allocations[uuid] ??= { resources: {} }).resources[classNameById.get(piece.classId)!] = piece.amount;
  }
  if (!withMappings) return { allocations };
  const mappings: Record<string, string[]> = {};
  for (const [suffix, ids] of request.mappings) mappings[suffix] = ids.map(uuidOf);
  return { allocations, mappings };
}

function listRequest(
  request: AllocationRequest,
  uuidOf: (id: number) => string,
  classNameById: ReadonlyMap<number, string>,
): { allocations: ListAllocation[] } {
  const byProvider = new Map<number, ResourceAmounts>();
  for (const piece of request.pieces) {
    let resources = byProvider.get(piece.providerId);
    if (!resources) byProvider.set(piece.providerId, (resources = {}));
    resources[classNameById.get(piece.classId)!] = piece.amount;
  }
  const allocations: ListAllocation[] = [];
  for (const [id, resources] of byProvider) allocations.push({ resource_provider: { uuid: uuidOf(id) }, resources });
  return { allocations };
}

/** Every provider of the trees used (1.29+), or just the providers used before. */
function summaries(
  usedProviders: ReadonlySet<number>,
  nodes: ReadonlyMap<number, ProviderNode>,
  usage: Usage,
  requestedClasses: ReadonlySet<string>,
  shape: Presentation,
): Record<string, ProviderSummary> {
  const usedRoots = new Set<number>();
  if (shape.nestedAware) for (const id of usedProviders) usedRoots.add(nodes.get(id)!.rootId);
  const out: Record<string, ProviderSummary> = {};
  for (const node of nodes.values()) {
    if (shape.nestedAware ? !usedRoots.has(node.rootId) : !usedProviders.has(node.id)) continue;
    const resources: ProviderSummary['resources'] = {};
    for (const inv of node.inventories) {
      if (shape.allResources || requestedClasses.has(inv.className))
        resources[inv.className] = { capacity: inv.capacity, used: usedOf(usage, node.id, inv.classId) };
    }
    const entry: ProviderSummary = { resources };
    if (shape.withTraits) entry.traits = [...node.traits]; // trait id order, as upstream lists them
    if (shape.nestedAware) {
      entry.parent_provider_uuid = node.parentId === null ? null : (nodes.get(node.parentId)?.uuid ?? null);
      entry.root_provider_uuid = nodes.get(node.rootId)?.uuid ?? node.uuid;
    }
    out[node.uuid] = entry;
  }
  return out;
}
