// The extensions' operations (docs/extensions.md) for GET /openapi.json:
// under /ext, Placement's envelope and microversion header, admin only.
import { HeadroomResponse, DrainListResponse, LeaseListResponse, LeaseResponse, ProviderTaintsResponse } from '../ext/responses.js';
import { putLeaseSchema, putTaintsSchema } from '../ext/schemas.js';
import type { Microversion } from '../microversion.js';
import { MV } from '../placement/versions.js';
import type { Operation, QueryParam } from './operations.js';

/** The extension parameters GET /allocation_candidates (and headroom) accept, each only when given. */
export const EXT_CANDIDATE_PARAMS: QueryParam[] = [
  {
    name: 'ext_tolerate',
    description: 'extension: taint keys (KEY[,KEY...]) whose NoSchedule/NoExecute taints this request tolerates',
  },
];

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
