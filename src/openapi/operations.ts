// Every operation the app serves, for GET /openapi.json. Bodies and query
// parameters are never restated here: each entry points at the zod schema (or
// the schema(mv) function, or the parser's key table) the handler validates
// with; document.ts samples those at every microversion to find the ranges.
// A test compares this list with the routes the app registers.
import { z } from 'zod';
import { AttributeListQuery, CreateAttributeBody } from '../cyborg/schemas/attributes.js';
import { HostDevicesReport, ProgrammedReport } from '../cyborg/schemas/agent.js';
import { CreateArqBody, PatchArqsBody } from '../cyborg/schemas/arqs.js';
import { CreateDeviceProfileBody } from '../cyborg/schemas/device-profiles.js';
import {
  ArqDeleteQuery,
  ArqListQuery,
  DeviceListQuery,
  DeviceProfileDeleteQuery,
  DeviceProfileListQuery,
  OutboxQuery,
} from '../cyborg/schemas/queries.js';
import {
  ArqListSchema,
  ArqSchema,
  AttributeListSchema,
  AttributeSchema,
  DeployableListSchema,
  DeployableSchema,
  DeviceProfileListSchema,
  DeviceProfileSchema,
  DeviceProfileShowSchema,
  deviceListSchema,
  deviceSchema,
  HostReportSchema,
  OutboxListSchema,
  ReportedDevicesSchema,
  V2VersionSchema,
  VersionsSchema,
} from '../cyborg/schemas/responses.js';
import { MV as CYBORG_MV } from '../cyborg/versions.js';
import { SummaryQueryString, SummaryResponse } from '../dashboard/schema.js';
import { AuditQuery, AuditRepairsRequest, AuditRepairsResult, AuditReport } from '../diagnostics/audit.js';
import { Diagnosis } from '../diagnostics/why-no-host.js';
import type { Microversion } from '../microversion.js';
import { allowedKeys as candidateQueryKeys } from '../placement/candidates/parse.js';
import { LIST_PARAMS } from '../placement/http/routes/resource-providers.js';
import { putAggregatesSchema } from '../placement/schemas/aggregates.js';
import { postAllocationsSchema, putAllocationsSchema } from '../placement/schemas/allocations.js';
import { postInventorySchema, putInventoriesSchema, putInventorySchema } from '../placement/schemas/inventories.js';
import { createProviderSchema, updateProviderSchema } from '../placement/schemas/providers.js';
import { reshaperSchema } from '../placement/schemas/reshaper.js';
import { resourceClassBodySchema } from '../placement/schemas/resource-classes.js';
import { putProviderTraitsSchema } from '../placement/schemas/traits.js';
import {
  aggregatesResponseSchema,
  allocationCandidatesResponseSchema,
  consumerAllocationsResponseSchema,
  inventoriesSchema,
  inventoryResponseSchema,
  providerAllocationsResponseSchema,
  providerListResponseSchema,
  providerResponseSchema,
  providerTraitsResponseSchema,
  providerUsagesSchema,
  resourceClassListSchema,
  resourceClassSchema,
  traitListResponseSchema,
  usagesResponseSchema,
  versionDocumentSchema,
} from '../placement/schemas/responses.js';
import { usagesQuerySchema } from '../placement/schemas/usages.js';
import { MV } from '../placement/versions.js';
import { extCandidateParams, extOperations } from './ext-operations.js';

/** Which API an operation belongs to: its microversion header and error envelope. */
export type ApiName = 'placement' | 'accelerator' | 'diagnostics' | 'meta';
export type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';

/** A query parameter as the handler knows it; `schema` when a zod schema checks it. */
export interface QueryParam {
  name: string;
  description?: string;
  schema?: z.ZodType;
  required?: boolean;
  /** Keys matched by pattern (granular request groups), as a regex source. */
  pattern?: string;
}

export interface Operation {
  api: ApiName;
  method: Method;
  /** Hono form (`/resource_providers/:uuid`), as registered. */
  path: string;
  summary: string;
  /** The operation answers 404 (or 405) below this microversion. */
  since?: string;
  /** No token needed. */
  public?: boolean;
  /** The request body schema at a microversion; undefined where it takes none. */
  body?: (mv: Microversion) => z.ZodType | undefined;
  /** Name for the body's component schemas (suffixed with the version range). */
  bodyName?: string;
  query?: (mv: Microversion) => QueryParam[];
  /** Success statuses and what they mean. */
  responses: Record<number, string>;
  /** Success statuses that carry no body (202 and 204 never do). */
  bodyless?: number[];
  /** The success body's schema, where one exists, and its component name. */
  responseSchema?: z.ZodType;
  /** The success body's schema at a microversion (instead of responseSchema), named after responseName. */
  response?: (mv: Microversion) => z.ZodType | undefined;
  responseName?: string;
  /** Media types of the success body when it is not JSON (the dashboard's page and assets). */
  mediaTypes?: string[];
}

/** The dashboard's page and assets: text. */
const TEXT = z.string();

/** /healthz and /readyz: a status, and on a 503 the reason. */
const HealthSchema = z.object({ status: z.string(), reason: z.string().optional() });

/** This document, as far as its consumers rely on it. */
const OpenApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.looseObject({ schemas: z.record(z.string(), z.unknown()) }),
});

const always = (schema: z.ZodType) => () => schema;
const names =
  (...list: [string, string][]) =>
  () =>
    list.map(([name, description]) => ({ name, description }));

/** The query keys of a strict zod object, each with its schema. */
function zodQuery(schema: z.ZodType): QueryParam[] {
  const shape =
    (schema as unknown as { shape?: Record<string, z.ZodType> }).shape ??
    (schema as unknown as { def?: { in?: { shape?: Record<string, z.ZodType> } } }).def?.in?.shape ??
    {};
  return Object.entries(shape).map(([name, field]) => ({
    name,
    schema: field,
    required: !(field as unknown as { isOptional(): boolean }).isOptional(),
  }));
}

const providerListQuery = (mv: Microversion): QueryParam[] =>
  LIST_PARAMS.filter(([, feature]) => !feature || mv.atLeast(MV[feature])).map(([name]) => ({ name }));

const candidateQuery = (mv: Microversion): QueryParam[] => {
  const keys = candidateQueryKeys(mv);
  return [
    ...extCandidateParams(mv),
    ...keys.plain.map((name) => ({ name })),
    ...keys.patterns.map((pattern) => {
      const numbered = pattern.includes('[1-9]');
      return {
        name: `${/^\^([a-z_]+)/.exec(pattern)?.[1] ?? pattern}${numbered ? '{N}' : '{suffix}'}`,
        pattern,
        description: numbered
          ? 'a numbered request group (N = 1, 2, ...)'
          : 'a request group: the key with an optional suffix of 1-64 characters [a-zA-Z0-9_-]',
      };
    }),
  ];
};

const P = (op: Omit<Operation, 'api'>): Operation => ({ api: 'placement', ...op });
const A = (op: Omit<Operation, 'api' | 'path'> & { path: string }): Operation => ({
  ...op,
  api: 'accelerator',
  path: `/accelerator${op.path}`,
});

export const OPERATIONS: Operation[] = [
  // --- Placement --------------------------------------------------------------
  P({
    method: 'get',
    path: '/',
    summary: 'Version document',
    public: true,
    responses: { 200: 'The supported microversions' },
    responseSchema: versionDocumentSchema,
    responseName: 'PlacementVersions',
  }),
  P({
    method: 'get',
    path: '/resource_providers',
    summary: 'List resource providers',
    query: providerListQuery,
    responses: { 200: 'Providers' },
    response: providerListResponseSchema,
    responseName: 'ResourceProviderList',
  }),
  P({
    method: 'post',
    path: '/resource_providers',
    summary: 'Create a resource provider',
    body: createProviderSchema,
    bodyName: 'CreateResourceProvider',
    responses: { 200: 'Created; the provider (1.20+)', 201: 'Created, no body (before 1.20)' },
    bodyless: [201],
    response: (mv) => (mv.atLeast(MV.POST_RP_RETURNS_BODY) ? providerResponseSchema(mv) : undefined),
    responseName: 'ResourceProvider',
  }),
  P({
    method: 'get',
    path: '/resource_providers/:uuid',
    summary: 'Show a resource provider',
    responses: { 200: 'The provider' },
    response: providerResponseSchema,
    responseName: 'ResourceProvider',
  }),
  P({
    method: 'put',
    path: '/resource_providers/:uuid',
    summary: 'Update a resource provider',
    body: updateProviderSchema,
    bodyName: 'UpdateResourceProvider',
    responses: { 200: 'The provider' },
    response: providerResponseSchema,
    responseName: 'ResourceProvider',
  }),
  P({ method: 'delete', path: '/resource_providers/:uuid', summary: 'Delete a resource provider', responses: { 204: 'Deleted' } }),
  P({
    method: 'get',
    path: '/resource_providers/:uuid/aggregates',
    summary: "A provider's aggregates",
    since: MV.AGGREGATES,
    responses: { 200: 'Aggregates' },
    response: aggregatesResponseSchema,
    responseName: 'Aggregates',
  }),
  P({
    method: 'put',
    path: '/resource_providers/:uuid/aggregates',
    summary: "Replace a provider's aggregates",
    since: MV.AGGREGATES,
    body: putAggregatesSchema,
    bodyName: 'PutAggregates',
    responses: { 200: 'Aggregates' },
    response: aggregatesResponseSchema,
    responseName: 'Aggregates',
  }),
  P({
    method: 'get',
    path: '/traits',
    summary: 'List traits',
    since: MV.TRAITS,
    query: names(['name', 'in:NAME1,NAME2 or startswith:PREFIX'], ['associated', 'true or false']),
    responses: { 200: 'Traits' },
    responseSchema: traitListResponseSchema,
    responseName: 'TraitList',
  }),
  P({ method: 'get', path: '/traits/:name', summary: 'Whether a trait exists', since: MV.TRAITS, responses: { 204: 'It exists' } }),
  P({
    method: 'put',
    path: '/traits/:name',
    summary: 'Create a custom trait',
    since: MV.TRAITS,
    responses: { 201: 'Created', 204: 'Already there' },
    bodyless: [201],
  }),
  P({ method: 'delete', path: '/traits/:name', summary: 'Delete a custom trait', since: MV.TRAITS, responses: { 204: 'Deleted' } }),
  P({
    method: 'get',
    path: '/resource_providers/:uuid/traits',
    summary: "A provider's traits",
    since: MV.TRAITS,
    responses: { 200: 'Traits' },
    responseSchema: providerTraitsResponseSchema,
    responseName: 'ProviderTraits',
  }),
  P({
    method: 'put',
    path: '/resource_providers/:uuid/traits',
    summary: "Replace a provider's traits",
    since: MV.TRAITS,
    body: always(putProviderTraitsSchema),
    bodyName: 'PutProviderTraits',
    responses: { 200: 'Traits' },
    responseSchema: providerTraitsResponseSchema,
    responseName: 'ProviderTraits',
  }),
  P({
    method: 'delete',
    path: '/resource_providers/:uuid/traits',
    summary: "Remove a provider's traits",
    since: MV.TRAITS,
    responses: { 204: 'Removed' },
  }),
  P({
    method: 'post',
    path: '/allocations',
    summary: 'Claim for several consumers at once',
    since: MV.POST_ALLOCATIONS,
    body: postAllocationsSchema,
    bodyName: 'PostAllocations',
    responses: { 204: 'Claimed' },
  }),
  P({
    method: 'get',
    path: '/allocations/:consumer_uuid',
    summary: "A consumer's allocations",
    responses: { 200: 'Allocations' },
    response: consumerAllocationsResponseSchema,
    responseName: 'ConsumerAllocations',
  }),
  P({
    method: 'put',
    path: '/allocations/:consumer_uuid',
    summary: "Replace a consumer's allocations",
    body: putAllocationsSchema,
    bodyName: 'PutAllocations',
    responses: { 204: 'Claimed' },
  }),
  P({ method: 'delete', path: '/allocations/:consumer_uuid', summary: "Delete a consumer's allocations", responses: { 204: 'Deleted' } }),
  P({
    method: 'get',
    path: '/resource_providers/:uuid/allocations',
    summary: 'Allocations against a provider',
    responses: { 200: 'Allocations' },
    response: providerAllocationsResponseSchema,
    responseName: 'ProviderAllocations',
  }),
  P({
    method: 'get',
    path: '/allocation_candidates',
    summary: 'Where a request fits',
    since: MV.ALLOCATION_CANDIDATES,
    query: candidateQuery,
    responses: { 200: 'Allocation requests and provider summaries' },
    response: allocationCandidatesResponseSchema,
    responseName: 'AllocationCandidates',
  }),
  P({
    method: 'get',
    path: '/resource_providers/:uuid/inventories',
    summary: "A provider's inventories",
    responses: { 200: 'Inventories' },
    responseSchema: inventoriesSchema,
    responseName: 'Inventories',
  }),
  P({
    method: 'post',
    path: '/resource_providers/:uuid/inventories',
    summary: 'Add one inventory',
    body: always(postInventorySchema),
    bodyName: 'PostInventory',
    responses: { 201: 'The inventory' },
    responseSchema: inventoryResponseSchema,
    responseName: 'Inventory',
  }),
  P({
    method: 'put',
    path: '/resource_providers/:uuid/inventories',
    summary: "Replace a provider's inventories",
    body: always(putInventoriesSchema),
    bodyName: 'PutInventories',
    responses: { 200: 'Inventories' },
    responseSchema: inventoriesSchema,
    responseName: 'Inventories',
  }),
  P({
    method: 'delete',
    path: '/resource_providers/:uuid/inventories',
    summary: "Delete a provider's inventories",
    since: MV.DELETE_ALL_INVENTORY,
    responses: { 204: 'Deleted' },
  }),
  P({
    method: 'get',
    path: '/resource_providers/:uuid/inventories/:resource_class',
    summary: 'Show one inventory',
    responses: { 200: 'The inventory' },
    responseSchema: inventoryResponseSchema,
    responseName: 'Inventory',
  }),
  P({
    method: 'put',
    path: '/resource_providers/:uuid/inventories/:resource_class',
    summary: 'Update one inventory',
    body: always(putInventorySchema),
    bodyName: 'PutInventory',
    responses: { 200: 'The inventory' },
    responseSchema: inventoryResponseSchema,
    responseName: 'Inventory',
  }),
  P({
    method: 'delete',
    path: '/resource_providers/:uuid/inventories/:resource_class',
    summary: 'Delete one inventory',
    responses: { 204: 'Deleted' },
  }),
  P({
    method: 'post',
    path: '/reshaper',
    summary: 'Move inventories and allocations atomically',
    since: MV.RESHAPER,
    body: reshaperSchema,
    bodyName: 'Reshape',
    responses: { 204: 'Reshaped' },
  }),
  P({
    method: 'get',
    path: '/resource_classes',
    summary: 'List resource classes',
    since: MV.RESOURCE_CLASSES,
    responses: { 200: 'Resource classes' },
    responseSchema: resourceClassListSchema,
    responseName: 'ResourceClassList',
  }),
  P({
    method: 'post',
    path: '/resource_classes',
    summary: 'Create a custom resource class',
    since: MV.RESOURCE_CLASSES,
    body: always(resourceClassBodySchema),
    bodyName: 'ResourceClassName',
    responses: { 201: 'Created' },
    bodyless: [201],
  }),
  P({
    method: 'get',
    path: '/resource_classes/:name',
    summary: 'Show a resource class',
    since: MV.RESOURCE_CLASSES,
    responses: { 200: 'The class' },
    responseSchema: resourceClassSchema,
    responseName: 'ResourceClass',
  }),
  P({
    method: 'put',
    path: '/resource_classes/:name',
    summary: 'Rename (before 1.7) or create (1.7+) a custom resource class',
    since: MV.RESOURCE_CLASSES,
    body: (mv) => (mv.atLeast(MV.RC_PUT_CREATES) ? undefined : resourceClassBodySchema),
    bodyName: 'ResourceClassName',
    responses: { 200: 'Renamed (before 1.7)', 201: 'Created (1.7+)', 204: 'Already there (1.7+)' },
    bodyless: [201],
    response: (mv) => (mv.atLeast(MV.RC_PUT_CREATES) ? undefined : resourceClassSchema),
    responseName: 'ResourceClass',
  }),
  P({
    method: 'delete',
    path: '/resource_classes/:name',
    summary: 'Delete a custom resource class',
    since: MV.RESOURCE_CLASSES,
    responses: { 204: 'Deleted' },
  }),
  P({
    method: 'get',
    path: '/resource_providers/:uuid/usages',
    summary: "A provider's usage",
    responses: { 200: 'Usages' },
    responseSchema: providerUsagesSchema,
    responseName: 'ProviderUsages',
  }),
  P({
    method: 'get',
    path: '/usages',
    summary: "A project's usage",
    since: MV.USAGES,
    query: (mv) => zodQuery(usagesQuerySchema(mv)),
    responses: { 200: 'Usages' },
    response: usagesResponseSchema,
    responseName: 'Usages',
  }),

  // --- Accelerator (Cyborg v2) ------------------------------------------------
  A({
    method: 'get',
    path: '/',
    summary: 'Version document',
    public: true,
    responses: { 200: 'Versions' },
    responseSchema: VersionsSchema,
    responseName: 'AcceleratorVersions',
  }),
  A({
    method: 'get',
    path: '/v2',
    summary: 'The v2 API',
    public: true,
    responses: { 200: 'The v2 version' },
    responseSchema: V2VersionSchema,
    responseName: 'AcceleratorV2Version',
  }),
  A({
    method: 'get',
    path: '/v2/device_profiles',
    summary: 'List device profiles',
    query: () => zodQuery(DeviceProfileListQuery),
    responses: { 200: 'Device profiles' },
    responseSchema: DeviceProfileListSchema,
    responseName: 'DeviceProfileList',
  }),
  A({
    method: 'post',
    path: '/v2/device_profiles',
    summary: 'Create a device profile',
    body: always(CreateDeviceProfileBody),
    bodyName: 'CreateDeviceProfile',
    responses: { 201: 'The profile' },
    responseSchema: DeviceProfileSchema,
    responseName: 'DeviceProfile',
  }),
  A({
    method: 'delete',
    path: '/v2/device_profiles',
    summary: 'Delete device profiles by name',
    query: () => zodQuery(DeviceProfileDeleteQuery),
    responses: { 204: 'Deleted' },
  }),
  A({
    method: 'get',
    path: '/v2/device_profiles/:key',
    summary: `Show a device profile (by uuid; by name from ${CYBORG_MV.PROFILE_BY_NAME})`,
    responses: { 200: 'The profile' },
    responseSchema: DeviceProfileShowSchema,
    responseName: 'DeviceProfileShow',
  }),
  A({ method: 'delete', path: '/v2/device_profiles/:key', summary: 'Delete a device profile', responses: { 204: 'Deleted' } }),
  A({
    method: 'get',
    path: '/v2/accelerator_requests',
    summary: 'List accelerator requests',
    query: () => zodQuery(ArqListQuery),
    responses: { 200: 'ARQs', 423: 'bind_state=resolved: some ARQ of the instance is still binding (no body)' },
    bodyless: [423],
    responseSchema: ArqListSchema,
    responseName: 'ArqList',
  }),
  A({
    method: 'post',
    path: '/v2/accelerator_requests',
    summary: 'Create accelerator requests',
    body: always(CreateArqBody),
    bodyName: 'CreateArqs',
    responses: { 201: 'The ARQs' },
    responseSchema: ArqListSchema,
    responseName: 'ArqList',
  }),
  A({
    method: 'patch',
    path: '/v2/accelerator_requests',
    summary: 'Bind or unbind ARQs',
    body: always(PatchArqsBody),
    bodyName: 'PatchArqs',
    responses: { 202: 'Accepted; binding runs asynchronously' },
  }),
  A({
    method: 'delete',
    path: '/v2/accelerator_requests',
    summary: 'Delete ARQs',
    query: () => zodQuery(ArqDeleteQuery),
    responses: { 204: 'Deleted' },
  }),
  A({
    method: 'get',
    path: '/v2/accelerator_requests/:uuid',
    summary: 'Show an ARQ',
    responses: { 200: 'The ARQ' },
    responseSchema: ArqSchema,
    responseName: 'Arq',
  }),
  A({
    method: 'patch',
    path: '/v2/accelerator_requests/:uuid',
    summary: 'Bind or unbind ARQs',
    body: always(PatchArqsBody),
    bodyName: 'PatchArqs',
    responses: { 202: 'Accepted' },
  }),
  A({ method: 'delete', path: '/v2/accelerator_requests/:uuid', summary: 'Delete an ARQ', responses: { 204: 'Deleted' } }),
  A({
    method: 'get',
    path: '/v2/devices',
    summary: 'List devices',
    query: () => zodQuery(DeviceListQuery),
    responses: { 200: 'Devices' },
    response: (mv) => deviceListSchema(mv.atLeast(CYBORG_MV.DEVICE_STATUS)),
    responseName: 'DeviceList',
  }),
  A({
    method: 'get',
    path: '/v2/devices/:uuid',
    summary: 'Show a device',
    responses: { 200: 'The device' },
    response: (mv) => deviceSchema(mv.atLeast(CYBORG_MV.DEVICE_STATUS)),
    responseName: 'Device',
  }),
  A({
    method: 'post',
    path: '/v2/devices/:uuid/enable',
    summary: 'Enable a device',
    responses: { 200: 'Enabled (no body)' },
    bodyless: [200],
  }),
  A({
    method: 'post',
    path: '/v2/devices/:uuid/disable',
    summary: 'Disable a device',
    responses: { 200: 'Disabled (no body)' },
    bodyless: [200],
  }),
  A({
    method: 'get',
    path: '/v2/deployables',
    summary: 'List deployables',
    responses: { 200: 'Deployables' },
    responseSchema: DeployableListSchema,
    responseName: 'DeployableList',
  }),
  A({
    method: 'get',
    path: '/v2/deployables/:uuid',
    summary: 'Show a deployable',
    responses: { 200: 'The deployable' },
    responseSchema: DeployableSchema,
    responseName: 'Deployable',
  }),
  A({
    method: 'get',
    path: '/v2/attributes',
    summary: 'List attributes',
    query: () => zodQuery(AttributeListQuery),
    responses: { 200: 'Attributes' },
    responseSchema: AttributeListSchema,
    responseName: 'AttributeList',
  }),
  A({
    method: 'post',
    path: '/v2/attributes',
    summary: 'Create an attribute',
    body: always(CreateAttributeBody),
    bodyName: 'CreateAttribute',
    responses: { 201: 'The attribute' },
    responseSchema: AttributeSchema,
    responseName: 'Attribute',
  }),
  A({
    method: 'get',
    path: '/v2/attributes/:uuid',
    summary: 'Show an attribute',
    responses: { 200: 'The attribute' },
    responseSchema: AttributeSchema,
    responseName: 'Attribute',
  }),
  A({ method: 'delete', path: '/v2/attributes/:uuid', summary: 'Delete an attribute', responses: { 204: 'Deleted' } }),
  A({
    method: 'get',
    path: '/v2/hosts/:hostname/devices',
    summary: "A host's devices as its agent last reported them",
    responses: { 200: 'The report' },
    responseSchema: HostReportSchema,
    responseName: 'StoredHostDevicesReport',
  }),
  A({
    method: 'put',
    path: '/v2/hosts/:hostname/devices',
    summary: "Report a host's devices (host agent)",
    body: always(HostDevicesReport),
    bodyName: 'HostDevicesReport',
    responses: { 200: 'The devices' },
    responseSchema: ReportedDevicesSchema,
    responseName: 'ReportedDevices',
  }),
  A({
    method: 'put',
    path: '/v2/deployables/:uuid/programmed',
    summary: 'Report what a deployable is programmed with (host agent)',
    body: always(ProgrammedReport),
    bodyName: 'ProgrammedReport',
    responses: { 200: 'The deployable' },
    responseSchema: DeployableSchema,
    responseName: 'Deployable',
  }),
  A({
    method: 'get',
    path: '/v2/outbox',
    summary: 'Outbox rows (bind jobs, Nova events)',
    query: () => zodQuery(OutboxQuery),
    responses: { 200: 'Rows' },
    responseSchema: OutboxListSchema,
    responseName: 'OutboxList',
  }),

  // --- Operator diagnostics ---------------------------------------------------
  {
    api: 'diagnostics',
    method: 'get',
    path: '/diagnostics/audit',
    summary: 'Audit: over-capacity providers, empty consumers, stuck ARQs, dead letters',
    query: () => zodQuery(AuditQuery),
    responses: { 200: 'The report' },
    responseSchema: AuditReport,
    responseName: 'AuditReport',
  },
  {
    api: 'diagnostics',
    method: 'post',
    path: '/diagnostics/audit/repairs',
    summary: 'Apply (or dry-run) the safe repairs',
    body: always(AuditRepairsRequest),
    bodyName: 'AuditRepairs',
    responses: { 200: 'What was (or would be) done' },
    responseSchema: AuditRepairsResult,
    responseName: 'AuditRepairsResult',
  },

  {
    api: 'diagnostics',
    method: 'get',
    path: '/diagnostics/allocation_candidates',
    since: MV.ALLOCATION_CANDIDATES,
    summary: 'Why no host: the funnel of an allocation-candidates query, and why each named host fails',
    query: (mv) => [
      ...candidateQuery(mv),
      { name: 'host', description: 'a provider name or uuid whose tree to explain (repeatable, at most 50)' },
    ],
    responses: { 200: 'Counts after each constraint, and a verdict per host' },
    responseSchema: Diagnosis,
    responseName: 'Diagnosis',
  },

  // --- Extensions (docs/extensions.md) ----------------------------------------
  ...extOperations(candidateQuery),

  // --- Capacity dashboard -----------------------------------------------------
  {
    api: 'meta',
    method: 'get',
    path: '/dashboard',
    summary: 'The capacity dashboard (HTML page)',
    public: true,
    responses: { 200: 'The page', 304: 'Not modified' },
    mediaTypes: ['text/html'],
    responseSchema: TEXT,
    responseName: 'Text',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/dashboard/assets/:file',
    summary: "The dashboard's script and stylesheet",
    public: true,
    responses: { 200: 'The asset', 304: 'Not modified' },
    mediaTypes: ['text/javascript', 'text/css'],
    responseSchema: TEXT,
    responseName: 'Text',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/dashboard/api/summary',
    summary: 'Capacity summary behind the dashboard (admin): trees, totals, usage per project',
    query: () => zodQuery(SummaryQueryString),
    responses: { 200: 'The summary' },
    responseSchema: SummaryResponse,
    responseName: 'DashboardSummary',
  },

  // --- This document ----------------------------------------------------------
  {
    api: 'meta',
    method: 'get',
    path: '/openapi.json',
    summary: 'This OpenAPI document',
    public: true,
    responses: { 200: 'OpenAPI 3.1' },
    responseSchema: OpenApiDocumentSchema,
    responseName: 'OpenApiDocument',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/healthz',
    summary: 'Liveness: the process serves (reads nothing)',
    public: true,
    responses: { 200: 'Serving' },
    responseSchema: HealthSchema,
    responseName: 'Health',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/readyz',
    summary: 'Readiness: the database answers, migrations are applied, standard names are synced (503 with the reason otherwise)',
    public: true,
    responses: { 200: 'Ready' },
    responseSchema: HealthSchema,
    responseName: 'Health',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus text exposition (open in noauth2; otherwise an admin token or PLACEMENT_METRICS_TOKEN)',
    responses: { 200: 'The metrics' },
    mediaTypes: ['text/plain'],
    responseSchema: TEXT,
    responseName: 'Text',
  },
];
