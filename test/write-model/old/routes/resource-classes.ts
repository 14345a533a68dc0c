// /resource_classes[/{name}] (1.2+): list, create, show, delete; PUT renames
// a custom class up to 1.6 and creates-or-confirms one (no body) from 1.7.
import { Hono } from 'hono';
import type { AppContext, AppEnv } from '../../../../src/http/env.js';
import { readJson, validateBody } from '../../../../src/http/validate.js';
import { atLeast, authorize, newest, setCacheHeaders } from '../../../../src/placement/http/middleware.js';
import { requireVersion } from './require-version.js';
import { resource } from '../../../../src/placement/http/profile.js';
import { presentResourceClass, resourceClassPath } from '../../../../src/placement/present/resource-classes.js';
import {
  createResourceClass,
  deleteResourceClass,
  ensureResourceClass,
  listResourceClasses,
  renameResourceClass,
  requireResourceClass,
} from '../repo/resource-classes.js';
import { isoNow } from '../repo/lookups.js';
import { resourceClassBodySchema } from '../../../../src/placement/schemas/resource-classes.js';

export const resourceClassRoutes = new Hono<AppEnv>();

const RULE = 'placement:resource_classes';
const pathName = (c: AppContext): string => c.req.param('name') ?? '';
const locationOf = (c: AppContext, name: string): string => new URL(resourceClassPath(name), c.req.url).toString();

resource(resourceClassRoutes, '/resource_classes', {
  GET: async (c) => {
    requireVersion(c, 'RESOURCE_CLASSES');
    authorize(c, `${RULE}:list`);
    const rows = await listResourceClasses(c.var.deps.store.db);
    setCacheHeaders(c, newest(...rows.flatMap((r) => [r.createdAt, r.updatedAt])));
    return c.json({ resource_classes: rows.map(presentResourceClass) });
  },

  POST: async (c) => {
    requireVersion(c, 'RESOURCE_CLASSES');
    const raw = await readJson(c);
    authorize(c, `${RULE}:create`);
    const { name } = validateBody(resourceClassBodySchema, raw);
    const { store, clock } = c.var.deps;
    const rc = await store.writeTx((tx) => createResourceClass(tx, name, isoNow(clock)));
    return c.body(null, 201, { location: locationOf(c, rc.name) });
  },
});

resource(resourceClassRoutes, '/resource_classes/:name', {
  GET: async (c) => {
    requireVersion(c, 'RESOURCE_CLASSES');
    authorize(c, `${RULE}:show`);
    const rc = await requireResourceClass(c.var.deps.store.db, pathName(c));
    setCacheHeaders(c, newest(rc.createdAt, rc.updatedAt));
    return c.json(presentResourceClass(rc));
  },

  PUT: async (c) => {
    requireVersion(c, 'RESOURCE_CLASSES');
    const { store, clock } = c.var.deps;
    if (atLeast(c, 'RC_PUT_CREATES')) {
      authorize(c, `${RULE}:update`);
      // The path name gets the body schema's checks (pattern, length).
      const { name } = validateBody(resourceClassBodySchema, { name: pathName(c) });
      const { rc, created } = await store.writeTx((tx) => ensureResourceClass(tx, name, isoNow(clock)));
      return c.body(null, created ? 201 : 204, { location: locationOf(c, rc.name) });
    }
    const raw = await readJson(c);
    authorize(c, `${RULE}:update`);
    const { name: newName } = validateBody(resourceClassBodySchema, raw);
    const rc = await store.writeTx((tx) => renameResourceClass(tx, pathName(c), newName, isoNow(clock)));
    return c.json(presentResourceClass(rc));
  },

  DELETE: async (c) => {
    requireVersion(c, 'RESOURCE_CLASSES');
    authorize(c, `${RULE}:delete`);
    await c.var.deps.store.writeTx((tx) => deleteResourceClass(tx, pathName(c)));
    return c.body(null, 204);
  },
});
