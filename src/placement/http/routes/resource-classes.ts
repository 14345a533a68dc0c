// /resource_classes[/{name}] (1.2+): list, create, show, delete; PUT renames
// a custom class up to 1.6 and creates-or-confirms one (no body) from 1.7.
// Each write is one libSQL round trip (writes/resource-classes.ts).
import type { AppContext } from '../../../http/env.js';
import { readJson, validateBody } from '../../../http/validate.js';
import { atLeast, authorize, newest, setCacheHeaders } from '../middleware.js';
import { presentResourceClass, resourceClassPath } from '../../present/resource-classes.js';
import {
  createResourceClassBatched,
  deleteResourceClassBatched,
  ensureResourceClassBatched,
  renameResourceClassBatched,
} from '../../writes/resource-classes.js';
import { listResourceClasses, requireResourceClass } from '../../repo/resource-classes.js';
import { isoNow } from '../../repo/lookups.js';
import { resourceClassBodySchema } from '../../schemas/resource-classes.js';
import { resourceClassListSchema, resourceClassSchema } from '../../schemas/responses.js';
import { MV } from '../../versions.js';
import { RouteTable, always, answers } from '../../../http/route-table.js';
import { placementHttp } from '../profile.js';

export const resourceClassRoutes = new RouteTable('placement', placementHttp);

const RULE = 'placement:resource_classes';
const locationOf = (c: AppContext, name: string): string => new URL(resourceClassPath(name), c.req.url).toString();

resourceClassRoutes.resource('/resource_classes', {
  GET: {
    summary: 'List resource classes',
    since: MV.RESOURCE_CLASSES,
    ...answers(200, 'Resource classes', 'ResourceClassList', resourceClassListSchema),
    handler: async (c) => {
      authorize(c, `${RULE}:list`);
      const rows = await listResourceClasses(c.get('deps').store.db);
      setCacheHeaders(c, newest(...rows.flatMap((r) => [r.createdAt, r.updatedAt])));
      return c.json({ resource_classes: rows.map(presentResourceClass) });
    },
  },
  POST: {
    summary: 'Create a custom resource class',
    since: MV.RESOURCE_CLASSES,
    body: always(resourceClassBodySchema),
    bodyName: 'ResourceClassName',
    responses: { 201: 'Created' },
    bodyless: [201],
    handler: async (c) => {
      const raw = await readJson(c);
      authorize(c, `${RULE}:create`);
      const { name } = validateBody(resourceClassBodySchema, raw);
      const { store, clock } = c.get('deps');
      const rc = await createResourceClassBatched(store, name, isoNow(clock));
      return c.body(null, 201, { location: locationOf(c, rc.name) });
    },
  },
});

resourceClassRoutes.resource('/resource_classes/:name', {
  GET: {
    summary: 'Show a resource class',
    since: MV.RESOURCE_CLASSES,
    ...answers(200, 'The class', 'ResourceClass', resourceClassSchema),
    handler: async (c) => {
      authorize(c, `${RULE}:show`);
      const rc = await requireResourceClass(c.get('deps').store.db, c.req.param('name'));
      setCacheHeaders(c, newest(rc.createdAt, rc.updatedAt));
      return c.json(presentResourceClass(rc));
    },
  },
  PUT: {
    summary: 'Rename (before 1.7) or create (1.7+) a custom resource class',
    since: MV.RESOURCE_CLASSES,
    body: (mv) => (mv.atLeast(MV.RC_PUT_CREATES) ? undefined : resourceClassBodySchema),
    bodyName: 'ResourceClassName',
    responses: { 200: 'Renamed (before 1.7)', 201: 'Created (1.7+)', 204: 'Already there (1.7+)' },
    bodyless: [201],
    response: (mv) => (mv.atLeast(MV.RC_PUT_CREATES) ? undefined : resourceClassSchema),
    responseName: 'ResourceClass',
    handler: async (c) => {
      const { store, clock } = c.get('deps');
      if (atLeast(c, 'RC_PUT_CREATES')) {
        authorize(c, `${RULE}:update`);
        // The path name gets the body schema's checks (pattern, length).
        const { name } = validateBody(resourceClassBodySchema, { name: c.req.param('name') });
        const { rc, created } = await ensureResourceClassBatched(store, name, isoNow(clock));
        return c.body(null, created ? 201 : 204, { location: locationOf(c, rc.name) });
      }
      const raw = await readJson(c);
      authorize(c, `${RULE}:update`);
      const { name: newName } = validateBody(resourceClassBodySchema, raw);
      const rc = await renameResourceClassBatched(store, c.req.param('name'), newName, isoNow(clock));
      return c.json(presentResourceClass(rc));
    },
  },
  DELETE: {
    summary: 'Delete a custom resource class',
    since: MV.RESOURCE_CLASSES,
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, `${RULE}:delete`);
      await deleteResourceClassBatched(c.get('deps').store, c.req.param('name'));
      return c.body(null, 204);
    },
  },
});
