// /resource_providers and /resource_providers/{uuid}: list with filters,
// create, show, update (rename, re-parent from 1.37), delete.
import { invalid } from '../../../errors.js';
import type { AppContext } from '../../../http/env.js';
import { badQuery, queryParams, readBody } from '../../../http/validate.js';
import { atLeast, authorize, newest, setCacheHeaders } from '../middleware.js';
import { presentProvider } from '../../present/providers.js';
import { isUuidLike, normalizeUuid } from '../../../shared/uuid.js';
import { parseMemberOf, parseRequired, parseResources, traitNames } from '../../candidates/parse.js';
import { isoNow, providerNotFound, resourceClassIdsByName, traitIdsByName } from '../../repo/lookups.js';
import { createProviderBatched, deleteProviderBatched, updateProviderBatched } from '../../writes/providers.js';
import { getProviderView, listProviders, type ProviderListFilter } from '../../repo/providers.js';
import { createProviderSchema, updateProviderSchema } from '../../schemas/providers.js';
import { providerListResponseSchema, providerResponseSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable, type QueryParam, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';
import type { Microversion } from '../../../microversion.js';

export const resourceProviderRoutes = new RouteTable('placement', placementHttp);

/** What the create/update bodies carry, across their microversions. */
interface ProviderBody {
  name: string;
  uuid?: string | undefined;
  parent_provider_uuid?: string | null | undefined;
}

/** Query parameters GET /resource_providers knows, by the version that added them. */
const LIST_PARAMS: [string, Parameters<typeof atLeast>[1] | null][] = [
  ['uuid', null],
  ['name', null],
  ['member_of', 'MEMBER_OF_LIST'],
  ['resources', 'RESOURCES_FILTER'],
  ['in_tree', 'NESTED'],
  ['required', 'RP_REQUIRED'],
];

const providerListQuery = (mv: Microversion): QueryParam[] =>
  LIST_PARAMS.filter(([, feature]) => !feature || mv.atLeast(MV[feature])).map(([name]) => ({ name }));

async function parseListFilter(c: AppContext): Promise<ProviderListFilter> {
  const params = queryParams(c);
  const known = LIST_PARAMS.filter(([, feature]) => !feature || atLeast(c, feature)).map(([name]) => name);
  const unexpected = Object.keys(params).filter((k) => !known.includes(k));
  if (unexpected.length) {
    throw badQuery(
      `Additional properties are not allowed (${unexpected.map((k) => `'${k}'`).join(', ')} ${unexpected.length > 1 ? 'were' : 'was'} unexpected)`,
    );
  }
  const last = (name: string) => params[name]?.[params[name]!.length - 1];
  const filter: ProviderListFilter = {};
  const { db } = c.get('deps').store;

  const uuid = last('uuid');
  if (uuid !== undefined) {
    if (!isUuidLike(uuid)) throw badQuery(`'${uuid}' is not a 'uuid'`);
    filter.uuid = uuid;
  }
  const name = last('name');
  if (name !== undefined) filter.name = name;
  const inTree = last('in_tree');
  if (inTree !== undefined) {
    if (!isUuidLike(inTree)) throw badQuery(`'${inTree}' is not a 'uuid'`);
    filter.inTree = inTree;
  }
  if (params.member_of) {
    // Repeated member_of (AND of groups) is 1.24+; parseMemberOf refuses it earlier.
    filter.memberOf = parseMemberOf(params.member_of, c.get('mv'));
  }
  if (params.required) {
    const traits = parseRequired(params.required, c.get('mv'));
    const names = traitNames(traits);
    const ids = await traitIdsByName(db, names);
    const missing = names.filter((n) => !ids.has(n));
    if (missing.length) throw invalid(`No such trait(s): ${missing.join(', ')}.`);
    filter.traits = {
      required: traits.required.map((n) => ids.get(n)!),
      forbidden: traits.forbidden.map((n) => ids.get(n)!),
      anyOf: traits.anyOf.map((group) => group.map((n) => ids.get(n)!)),
    };
  }
  const resources = last('resources');
  if (resources !== undefined) {
    const amounts = parseResources(resources);
    const ids = await resourceClassIdsByName(db, [...amounts.keys()]);
    filter.resources = new Map();
    for (const [rc, amount] of amounts) {
      const id = ids.get(rc);
      if (id === undefined) throw badQuery(`Invalid resource class in resources parameter: No such resource class ${rc}.`);
      filter.resources.set(id, amount);
    }
  }
  return filter;
}

resourceProviderRoutes.resource('/resource_providers', {
  GET: {
    summary: 'List resource providers',
    query: providerListQuery,
    ...answers(200, 'Providers', 'ResourceProviderList', providerListResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:list');
      const providers = await listProviders(c.get('deps').store.db, await parseListFilter(c));
      setCacheHeaders(c, newest(...providers.flatMap((p) => [p.createdAt, p.updatedAt])));
      return c.json({ resource_providers: providers.map((p) => presentProvider(p, c.get('mv'))) });
    },
  },
  POST: {
    summary: 'Create a resource provider',
    body: createProviderSchema,
    bodyName: 'CreateResourceProvider',
    responses: { 200: 'Created; the provider (1.20+)', 201: 'Created, no body (before 1.20)' },
    bodyless: [201],
    response: (mv) => (mv.atLeast(MV.POST_RP_RETURNS_BODY) ? providerResponseSchema(mv) : undefined),
    responseName: 'ResourceProvider',
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:create');
      const body: ProviderBody = await readBody(c, createProviderSchema(c.get('mv')));
      const deps = c.get('deps');
      const now = isoNow(deps.clock);
      const uuid = body.uuid ? normalizeUuid(body.uuid) : deps.newId();
      const parentUuid = body.parent_provider_uuid ?? null;
      const created = await createProviderBatched(deps.store, { uuid, name: body.name, parentUuid }, now);
      c.header('location', new URL(`/resource_providers/${created.uuid}`, c.req.url).href);
      if (!atLeast(c, 'POST_RP_RETURNS_BODY')) return c.body(null, 201);
      setCacheHeaders(c, created.updatedAt ?? created.createdAt);
      return c.json(presentProvider(created, c.get('mv')), 200);
    },
  },
});

resourceProviderRoutes.resource('/resource_providers/:uuid', {
  GET: {
    summary: 'Show a resource provider',
    ...answers(200, 'The provider', 'ResourceProvider', providerResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:show');
      const uuid = c.req.param('uuid');
      const rp = await getProviderView(c.get('deps').store.db, uuid);
      if (!rp) throw providerNotFound(uuid);
      setCacheHeaders(c, newest(rp.createdAt, rp.updatedAt));
      return c.json(presentProvider(rp, c.get('mv')));
    },
  },
  PUT: {
    summary: 'Update a resource provider',
    body: updateProviderSchema,
    bodyName: 'UpdateResourceProvider',
    ...answers(200, 'The provider', 'ResourceProvider', providerResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:update');
      const body: ProviderBody = await readBody(c, updateProviderSchema(c.get('mv')));
      const deps = c.get('deps');
      const uuid = c.req.param('uuid');
      const updated = await updateProviderBatched(
        deps.store,
        uuid,
        { name: body.name, parentUuid: body.parent_provider_uuid, allowReparent: atLeast(c, 'REPARENT') },
        isoNow(deps.clock),
      );
      setCacheHeaders(c, newest(updated.createdAt, updated.updatedAt));
      return c.json(presentProvider(updated, c.get('mv')));
    },
  },
  DELETE: {
    summary: 'Delete a resource provider',
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:delete');
      await deleteProviderBatched(c.get('deps').store, c.req.param('uuid'));
      return c.body(null, 204);
    },
  },
});
