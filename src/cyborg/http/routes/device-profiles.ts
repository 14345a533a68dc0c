// /v2/device_profiles: create (list body), list (?name=), show by uuid (by name from 2.2), delete.
import { invalid, notFound } from '../../../errors.js';
import { authorize, cyborgError, queryList, readCyborgBody, selfLink, type CyborgContext } from '../profile.js';
import { presentDeviceProfile } from '../../present.js';
import { createDeviceProfile, deleteDeviceProfiles, findDeviceProfile, listDeviceProfiles } from '../../repo/device-profiles.js';
import { CreateDeviceProfileBody, parseGroups } from '../../schemas/device-profiles.js';
import { MV } from '../../versions.js';
import { isUuidLike } from '../../../shared/uuid.js';
import { DeviceProfileDeleteQuery, DeviceProfileListQuery } from '../../schemas/queries.js';
import { DeviceProfileListSchema, DeviceProfileSchema, DeviceProfileShowSchema } from '../../schemas/responses.js';
import { RouteTable, always, zodQuery, answers } from '../../../http/route-table.js';
import { cyborgHttp } from '../profile.js';

const link = (c: CyborgContext) => (collection: string, uuid: string) => selfLink(c, collection, uuid);

export const deviceProfileRoutes = new RouteTable('accelerator', cyborgHttp);

deviceProfileRoutes.resource('/device_profiles', {
  GET: {
    summary: 'List device profiles',
    query: () => zodQuery(DeviceProfileListQuery),
    ...answers(200, 'Device profiles', 'DeviceProfileList', DeviceProfileListSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:device_profile:get_all');
      const rows = await listDeviceProfiles(c.var.deps.store.db, queryList(c, 'name'));
      return c.json({ device_profiles: rows.map((r) => presentDeviceProfile(r, link(c))) });
    },
  },
  POST: {
    summary: 'Create a device profile',
    body: always(CreateDeviceProfileBody),
    bodyName: 'CreateDeviceProfile',
    ...answers(201, 'The profile', 'DeviceProfile', DeviceProfileSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:device_profile:create');
      const [input] = await readCyborgBody(c, CreateDeviceProfileBody);
      const groups = parseGroups(input!.groups);
      const { deps } = c.var;
      const row = await createDeviceProfile(
        deps.store,
        {
          uuid: input!.uuid ?? deps.newId(),
          name: input!.name,
          description: input!.description ?? null,
          groups,
        },
        deps.clock().toISOString(),
      );
      return c.json(presentDeviceProfile(row, link(c)), 201);
    },
  },
  DELETE: {
    summary: 'Delete device profiles by name',
    query: () => zodQuery(DeviceProfileDeleteQuery),
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, 'cyborg:device_profile:delete');
      const names = queryList(c, 'value');
      if (!names?.length) throw invalid('Device profile names to delete are needed: ?value=name1,name2');
      const missing = await deleteDeviceProfiles(c.var.deps.store, 'name', names);
      if (missing.length) throw notFound(`Device Profile not found with name=${missing.join(',')}`);
      return c.body(null, 204);
    },
  },
});

async function lookup(c: CyborgContext, key: string) {
  const isUuid = isUuidLike(key);
  if (!isUuid && !c.var.mv.atLeast(MV.PROFILE_BY_NAME)) {
    throw cyborgError(
      406,
      `Request not acceptable. The minimal required API version should be ${MV.PROFILE_BY_NAME} to get a device profile by name.`,
    );
  }
  const row = await findDeviceProfile(c.var.deps.store.db, isUuid ? { uuid: key } : { name: key });
  if (!row) throw notFound(`Device Profile not found with ${isUuid ? 'uuid' : 'name'}=${key}`);
  return row;
}

deviceProfileRoutes.resource('/device_profiles/:key', {
  GET: {
    summary: `Show a device profile (by uuid; by name from ${MV.PROFILE_BY_NAME})`,
    ...answers(200, 'The profile', 'DeviceProfileShow', DeviceProfileShowSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:device_profile:get_one');
      return c.json({ device_profile: presentDeviceProfile(await lookup(c, c.req.param('key')), link(c)) });
    },
  },
  DELETE: {
    summary: 'Delete a device profile',
    responses: { 204: 'Deleted' },
    handler: async (c) => {
      authorize(c, 'cyborg:device_profile:delete');
      const key = c.req.param('key');
      const missing = await deleteDeviceProfiles(c.var.deps.store, isUuidLike(key) ? 'uuid' : 'name', [key]);
      if (missing.length) throw notFound(`Device Profile not found with uuid=${key}`);
      return c.body(null, 204);
    },
  },
});
