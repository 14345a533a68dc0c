// /traits, /traits/{name} and /resource_providers/{uuid}/traits (all 1.6+).
import { conflict, invalid, notFound } from '../../../errors.js';
import { badQuery, queryParams, readBody } from '../../../http/validate.js';
import { authorize, newest, setCacheHeaders } from '../middleware.js';
import { isoNow, requireProvider } from '../../repo/lookups.js';
import { deleteTraitBatched, ensureTraitBatched, replaceProviderTraits } from '../../writes/traits.js';
import { findTrait, listTraits, providerTraits, type TraitListFilter } from '../../repo/traits.js';
import type { ProviderTraitsJson, TraitListJson } from '../../schemas/responses.js';
import { isValidCustomTrait, putProviderTraitsSchema } from '../../schemas/traits.js';
import { STANDARD_TRAITS } from '../../standard-names.generated.js';
import { providerTraitsResponseSchema, traitListResponseSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable, always, named, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const traitRoutes = new RouteTable('placement', placementHttp);

const STANDARD = new Set(STANDARD_TRAITS);

function parseTraitListQuery(params: Record<string, string[]>): TraitListFilter {
  const unexpected = Object.keys(params).filter((k) => k !== 'name' && k !== 'associated');
  if (unexpected.length) {
    throw badQuery(
      `Additional properties are not allowed (${unexpected.map((k) => `'${k}'`).join(', ')} ${unexpected.length > 1 ? 'were' : 'was'} unexpected)`,
    );
  }
  const filter: TraitListFilter = {};
  const name = params.name?.at(-1);
  if (name !== undefined) {
    if (name.startsWith('in:'))
      filter.names = name
        .slice(3)
        .split(',')
        .map((n) => n.trim());
    else if (name.startsWith('startswith:')) filter.prefix = name.slice('startswith:'.length).trim();
    else {
      throw invalid(
        `Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "${name}"`,
      );
    }
  }
  // Case-insensitive as upstream: osc-placement sends "True" (seed 002: {True|False}).
  const associated = params.associated?.at(-1)?.toLowerCase();
  if (associated !== undefined) {
    if (associated !== 'true' && associated !== 'false') {
      throw invalid('The query parameter "associated" only accepts "true" or "false"');
    }
    filter.associated = associated === 'true';
  }
  return filter;
}

traitRoutes.resource('/traits', {
  GET: {
    summary: 'List traits',
    since: MV.TRAITS,
    query: named(['name', 'in:NAME1,NAME2 or startswith:PREFIX'], ['associated', 'true or false']),
    ...answers(200, 'Traits', 'TraitList', traitListResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:traits:list');
      const rows = await listTraits(c.get('deps').store.db, parseTraitListQuery(queryParams(c)));
      setCacheHeaders(c, newest(...rows.flatMap((r) => [r.createdAt, r.updatedAt])));
      return c.json({ traits: rows.map((r) => r.name) } satisfies TraitListJson);
    },
  },
});

traitRoutes.resource('/traits/:name', {
  GET: {
    summary: 'Whether a trait exists',
    since: MV.TRAITS,
    responses: { 204: 'It exists' },
    handler: async (c) => {
      authorize(c, 'placement:traits:show');
      const name = c.req.param('name');
      const trait = await findTrait(c.get('deps').store.db, name);
      if (!trait) throw notFound(`No such trait(s): ${name}`);
      setCacheHeaders(c, newest(trait.createdAt, trait.updatedAt));
      return c.body(null, 204);
    },
  },
  PUT: {
    summary: 'Create a custom trait',
    since: MV.TRAITS,
    responses: { 201: 'Created', 204: 'Already there' },
    bodyless: [201],
    handler: async (c) => {
      authorize(c, 'placement:traits:update');
      const name = c.req.param('name');
      if (!isValidCustomTrait(name)) {
        throw invalid(
          'The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"',
        );
      }
      const deps = c.get('deps');
      const trait = await ensureTraitBatched(deps.store, name, isoNow(deps.clock));
      c.header('location', new URL(`/traits/${name}`, c.req.url).href);
      setCacheHeaders(c, newest(trait.createdAt, trait.updatedAt));
      return c.body(null, trait.created ? 201 : 204);
    },
  },
  DELETE: {
    summary: 'Delete a custom trait',
    since: MV.TRAITS,
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, 'placement:traits:delete');
      const name = c.req.param('name');
      const outcome = await deleteTraitBatched(c.get('deps').store, name, STANDARD.has(name));
      if (outcome === 'not_found') throw notFound(`No such trait(s): ${name}`);
      if (outcome === 'standard') throw invalid(`Cannot delete standard trait ${name}.`);
      if (outcome === 'in_use') throw conflict(`The trait ${name} is in use by a resource provider.`);
      return c.body(null, 204);
    },
  },
});

traitRoutes.resource('/resource_providers/:uuid/traits', {
  GET: {
    summary: "A provider's traits",
    since: MV.TRAITS,
    ...answers(200, 'Traits', 'ProviderTraits', providerTraitsResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:traits:list');
      const { db } = c.get('deps').store;
      const rp = await requireProvider(db, c.req.param('uuid'));
      const rows = await providerTraits(db, rp.id);
      setCacheHeaders(c, newest(rp.updatedAt, ...rows.map((r) => r.createdAt)));
      return c.json({ traits: rows.map((r) => r.name), resource_provider_generation: rp.generation } satisfies ProviderTraitsJson);
    },
  },
  PUT: {
    summary: "Replace a provider's traits",
    since: MV.TRAITS,
    body: always(putProviderTraitsSchema),
    bodyName: 'PutProviderTraits',
    ...answers(200, 'Traits', 'ProviderTraits', providerTraitsResponseSchema),
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:traits:update');
      const body = await readBody(c, putProviderTraitsSchema);
      const deps = c.get('deps');
      const now = isoNow(deps.clock);
      const names = [...new Set(body.traits)];
      const generation = await replaceProviderTraits(deps.store, c.req.param('uuid'), body.resource_provider_generation, names, now);
      setCacheHeaders(c, now);
      return c.json({ traits: names.sort(), resource_provider_generation: generation } satisfies ProviderTraitsJson);
    },
  },
  DELETE: {
    summary: "Remove a provider's traits",
    since: MV.TRAITS,
    responses: { 204: 'Removed' },
    handler: async (c) => {
      authorize(c, 'placement:resource_providers:traits:delete');
      await replaceProviderTraits(c.get('deps').store, c.req.param('uuid'), undefined, [], isoNow(c.get('deps').clock));
      return c.body(null, 204);
    },
  },
});
