// The extensions' operations (docs/extensions.md) for GET /openapi.json:
// under /ext, Placement's envelope and microversion header, admin only.
import { HeadroomResponse, DrainListResponse, LeaseListResponse, LeaseResponse, ProviderTaintsResponse } from '../ext/responses.js';
import { countersResponseSchema, putCountersSchema, putLeaseSchema, putTaintsSchema } from '../ext/schemas.js';
import type { Microversion } from '../microversion.js';
import { MV } from '../placement/versions.js';
import type { Operation, QueryParam } from './operations.js';

/** The extension parameters GET /allocation_candidates (and headroom, why-no-host) accept at `mv`, each only when given. */
export function extCandidateParams(mv: Microversion): QueryParam[] {
  return [
    {
      name: 'ext_tolerate',
      description: 'extension: taint keys (KEY[,KEY...]) whose NoSchedule/NoExecute taints this request tolerates',
    },
    // Granular groups only (1.25+).
    ...(mv.atLeast(MV.GRANULAR)
      ? [
          {
            name: 'ext_first_of',
            description:
              'extension (docs/extensions-gpu.md): granular group suffixes in order of preference, e.g. _H100,_A100,_T4; per tree only ' +
              'the first that can be satisfied there with every other group is used (mappings name it). Repeatable: independent choices.',
          },
        ]
      : []),
  ];
}

export function extOperations(candidateQuery: (mv: Microversion) => QueryParam[]): Operation[] {
  const E = (op: Omit<Operation, 'api'>): Operation => ({ api: 'diagnostics', ...op });
  return [
    E({
      method: 'get',
      path: '/ext/headroom',
      summary: 'Extension: per tree, how many first-candidate claims of this request fit now (any allocation-candidates query)',
      since: MV.ALLOCATION_CANDIDATES,
      query: candidateQuery,
      responses: { 200: 'Counts per tree and their total' },
      responseSchema: HeadroomResponse,
      responseName: 'Headroom',
    }),
    E({
      method: 'get',
      path: '/ext/resource_providers/:uuid/taints',
      summary: "Extension: a provider's device taints",
      responses: { 200: 'Taints and the provider generation' },
      responseSchema: ProviderTaintsResponse,
      responseName: 'ProviderTaints',
    }),
    E({
      method: 'put',
      path: '/ext/resource_providers/:uuid/taints',
      summary: "Extension: replace a provider's taints (generation-checked; bumps the generation)",
      body: () => putTaintsSchema,
      bodyName: 'PutProviderTaints',
      responses: { 200: 'Taints and the new provider generation' },
      responseSchema: ProviderTaintsResponse,
      responseName: 'ProviderTaints',
    }),
    E({
      method: 'get',
      path: '/ext/taints',
      summary: 'Extension: every taint with the consumers allocated on its provider (the drain list)',
      responses: { 200: 'The drain list' },
      responseSchema: DrainListResponse,
      responseName: 'DrainList',
    }),
    // Shared counters of partitionable devices (docs/extensions-gpu.md); the inventory policies guard them.
    E({
      method: 'get',
      path: '/ext/resource_providers/:uuid/counters',
      summary: "Extension: a partitionable device's shared counters, what each class consumes of them, and their load",
      responses: { 200: 'Counters' },
      responseSchema: countersResponseSchema,
      responseName: 'ExtCounters',
    }),
    E({
      method: 'put',
      path: '/ext/resource_providers/:uuid/counters',
      summary: "Extension: replace a provider's shared counters (generation-checked; classes must have inventory there)",
      body: () => putCountersSchema,
      bodyName: 'PutExtCounters',
      responses: { 200: 'Counters' },
      responseSchema: countersResponseSchema,
      responseName: 'ExtCounters',
    }),
    E({
      method: 'get',
      path: '/ext/leases',
      summary: 'Extension: the allocation leases held, soonest expiry first',
      responses: { 200: 'Leases' },
      responseSchema: LeaseListResponse,
      responseName: 'LeaseList',
    }),
    E({
      method: 'get',
      path: '/ext/leases/:consumer_uuid',
      summary: "Extension: a consumer's allocation lease",
      responses: { 200: 'The lease' },
      responseSchema: LeaseResponse,
      responseName: 'Lease',
    }),
    E({
      method: 'put',
      path: '/ext/leases/:consumer_uuid',
      summary: "Extension: put or renew a lease on a consumer's current allocations",
      body: () => putLeaseSchema,
      bodyName: 'PutLease',
      responses: { 200: 'The lease' },
      responseSchema: LeaseResponse,
      responseName: 'Lease',
    }),
    E({
      method: 'delete',
      path: '/ext/leases/:consumer_uuid',
      summary: 'Extension: confirm the allocations (the lease goes, they stay)',
      responses: { 204: 'Confirmed' },
    }),
  ];
}
