// /traits, /traits/{name} and /resource_providers/{uuid}/traits (all 1.6+).
import { Hono } from 'hono';
import { ApiError, ErrorCode, webobDetail } from '../../../../src/http/api-error.js';
import type { AppEnv } from '../../../../src/http/env.js';
import { badQuery, queryParams, readBody } from '../../../../src/http/validate.js';
import { authorize, newest, setCacheHeaders } from '../../../../src/placement/http/middleware.js';
import { requireVersion } from './require-version.js';
import { resource } from '../../../../src/placement/http/profile.js';
import { pathParam } from './path-param.js';
import { bumpGeneration, isoNow, requireProvider, traitIdsByName } from '../repo/lookups.js';
import {
  deleteTrait, ensureTrait, findTrait, listTraits, providerTraits, setProviderTraits, traitInUse, type TraitListFilter,
} from '../repo/traits.js';
import { isValidCustomTrait, putProviderTraitsSchema } from '../../../../src/placement/schemas/traits.js';
import { STANDARD_TRAITS } from '../../../../src/placement/standard-names.generated.js';

export const traitRoutes = new Hono<AppEnv>();

const STANDARD = new Set(STANDARD_TRAITS);

function parseTraitListQuery(params: Record<string, string[]>): TraitListFilter {
  const unexpected = Object.keys(params).filter((k) => k !== 'name' && k !== 'associated');
  if (unexpected.length) {
    throw badQuery(`Additional properties are not allowed (${unexpected.map((k) => `'${k}'`).join(', ')} ${unexpected.length > 1 ? 'were' : 'was'} unexpected)`);
  }
  const filter: TraitListFilter = {};
  const name = params.name?.at(-1);
  if (name !== undefined) {
    if (name.startsWith('in:')) filter.names = name.slice(3).split(',').map((n) => n.trim());
    else if (name.startsWith('startswith:')) filter.prefix = name.slice('startswith:'.length);
    else {
      throw new ApiError(400, webobDetail(400,
        `Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "${name}"`));
    }
  }
  // Case-insensitive as upstream: osc-placement sends "True" (seed 002: {True|False}).
  const associated = params.associated?.at(-1)?.toLowerCase();
  if (associated !== undefined) {
    if (associated !== 'true' && associated !== 'false') {
      throw new ApiError(400, webobDetail(400, 'The query parameter "associated" only accepts "true" or "false"'));
    }
    filter.associated = associated === 'true';
  }
  return filter;
}

resource(traitRoutes, '/traits', {
  GET: async (c) => {
    requireVersion(c, 'TRAITS');
    authorize(c, 'placement:traits:list');
    const rows = await listTraits(c.var.deps.store.db, parseTraitListQuery(queryParams(c)));
    setCacheHeaders(c, newest(...rows.flatMap((r) => [r.createdAt, r.updatedAt])));
    return c.json({ traits: rows.map((r) => r.name) });
  },
});

resource(traitRoutes, '/traits/:name', {
  GET: async (c) => {
    requireVersion(c, 'TRAITS');
    authorize(c, 'placement:traits:show');
    const name = pathParam(c, 'name');
    const trait = await findTrait(c.var.deps.store.db, name);
    if (!trait) throw new ApiError(404, webobDetail(404, `No such trait(s): ${name}`));
    setCacheHeaders(c, newest(trait.createdAt, trait.updatedAt));
    return c.body(null, 204);
  },

  PUT: async (c) => {
    requireVersion(c, 'TRAITS');
    authorize(c, 'placement:traits:update');
    const name = pathParam(c, 'name');
    if (!isValidCustomTrait(name)) {
      throw new ApiError(400, webobDetail(400,
        'The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix "CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'));
    }
    const { deps } = c.var;
    const created = await deps.store.writeTx((tx) => ensureTrait(tx, name, isoNow(deps.clock)));
    const trait = await findTrait(deps.store.db, name);
    c.header('location', new URL(`/traits/${name}`, c.req.url).href);
    setCacheHeaders(c, trait ? newest(trait.createdAt, trait.updatedAt) : null);
    return c.body(null, created ? 201 : 204);
  },

  DELETE: async (c) => {
    requireVersion(c, 'TRAITS');
    authorize(c, 'placement:traits:delete');
    const name = pathParam(c, 'name');
    await c.var.deps.store.writeTx(async (tx) => {
      const trait = await findTrait(tx, name);
      if (!trait) throw new ApiError(404, webobDetail(404, `No such trait(s): ${name}`));
      if (STANDARD.has(name)) throw new ApiError(400, webobDetail(400, `Cannot delete standard trait ${name}.`));
      if (await traitInUse(tx, trait.id)) {
        throw new ApiError(409, webobDetail(409, `The trait ${name} is in use by a resource provider.`));
      }
      await deleteTrait(tx, trait.id);
    });
    return c.body(null, 204);
  },
});

resource(traitRoutes, '/resource_providers/:uuid/traits', {
  GET: async (c) => {
    requireVersion(c, 'TRAITS');
    authorize(c, 'placement:resource_providers:traits:list');
    const { db } = c.var.deps.store;
    const rp = await requireProvider(db, pathParam(c, 'uuid'));
    const rows = await providerTraits(db, rp.id);
    setCacheHeaders(c, newest(rp.updatedAt, ...rows.map((r) => r.createdAt)));
    return c.json({ traits: rows.map((r) => r.name), resource_provider_generation: rp.generation });
  },

  PUT: async (c) => {
    requireVersion(c, 'TRAITS');
    authorize(c, 'placement:resource_providers:traits:update');
    const body = await readBody(c, putProviderTraitsSchema);
    const { deps } = c.var;
    const now = isoNow(deps.clock);
    const result = await deps.store.writeTx(async (tx) => {
      const rp = await requireProvider(tx, pathParam(c, 'uuid'));
      if (rp.generation !== body.resource_provider_generation) {
        throw new ApiError(409, webobDetail(409,
          "Resource provider's generation already changed. Please update the generation and try again."), {
          code: ErrorCode.CONCURRENT_UPDATE,
        });
      }
      const names = [...new Set(body.traits)];
      const ids = await traitIdsByName(tx, names);
      const missing = names.filter((n) => !ids.has(n));
      if (missing.length) throw new ApiError(400, webobDetail(400, `No such trait(s): ${missing.join(', ')}`));
      await setProviderTraits(tx, rp.id, [...ids.values()], now);
      const generation = await bumpGeneration(tx, rp.id, rp.generation, now);
      return { names: names.sort(), generation };
    });
    setCacheHeaders(c, now);
    return c.json({ traits: result.names, resource_provider_generation: result.generation });
  },

  DELETE: async (c) => {
    requireVersion(c, 'TRAITS');
    authorize(c, 'placement:resource_providers:traits:delete');
    const { deps } = c.var;
    const now = isoNow(deps.clock);
    await deps.store.writeTx(async (tx) => {
      const rp = await requireProvider(tx, pathParam(c, 'uuid'));
      await setProviderTraits(tx, rp.id, [], now);
      await bumpGeneration(tx, rp.id, rp.generation, now);
    });
    return c.body(null, 204);
  },
});

