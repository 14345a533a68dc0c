// /v2/devices and /v2/deployables, as host agents reported them; admins can
// take a device out of service (disable: status maintaining) and back.
import { notFound } from '../../../errors.js';
import { authorize, selfLink, type CyborgContext } from '../profile.js';
import { presentDeployable, presentDevice } from '../../present.js';
import { findDeployable, findDevice, listDeployables, listDevices, setDeviceStatus } from '../../repo/devices.js';
import { DeviceListQuery, parseQuery } from '../../schemas/queries.js';
import { MV } from '../../versions.js';
import { DeployableListSchema, DeployableSchema, deviceListSchema, deviceSchema } from '../../schemas/responses.js';
import { RouteTable, zodQuery, answers } from '../../../http/route-table.js';
import { cyborgHttp } from '../profile.js';

const link = (c: CyborgContext) => (collection: string, uuid: string) => selfLink(c, collection, uuid);
export const deviceRoutes = new RouteTable('accelerator', cyborgHttp);

deviceRoutes.resource('/devices', {
  GET: {
    summary: 'List devices',
    query: () => zodQuery(DeviceListQuery),
    ...answers(200, 'Devices', 'DeviceList', (mv) => deviceListSchema(mv.atLeast(MV.DEVICE_STATUS))),
    handler: async (c) => {
      authorize(c, 'cyborg:device:get_all');
      const rows = await listDevices(c.var.deps.store.db, parseQuery(DeviceListQuery, c.req.query()));
      return c.json({ devices: rows.map((r) => presentDevice(r, link(c), c.var.mv.atLeast(MV.DEVICE_STATUS))) });
    },
  },
});
deviceRoutes.resource('/devices/:uuid', {
  GET: {
    summary: 'Show a device',
    ...answers(200, 'The device', 'Device', (mv) => deviceSchema(mv.atLeast(MV.DEVICE_STATUS))),
    handler: async (c) => {
      authorize(c, 'cyborg:device:get_one');
      const row = await findDevice(c.var.deps.store.db, c.req.param('uuid'));
      if (!row) throw notFound(`Device ${c.req.param('uuid')} could not be found.`);
      return c.json(presentDevice(row, link(c), c.var.mv.atLeast(MV.DEVICE_STATUS)));
    },
  },
});
for (const [action, status, summary, done] of [
  ['enable', 'enabled', 'Enable a device', 'Enabled (no body)'],
  ['disable', 'maintaining', 'Disable a device', 'Disabled (no body)'],
] as const) {
  deviceRoutes.resource(`/devices/:uuid/${action}`, {
    POST: {
      summary,
      responses: { 200: done },
      bodyless: [200],
      handler: async (c) => {
        authorize(c, `cyborg:device:${action}`);
        const uuid = c.req.param('uuid');
        const { deps } = c.var;
        const row = await setDeviceStatus(deps.store, uuid, status, deps.clock().toISOString());
        if (!row) throw notFound(`Device ${uuid} could not be found.`);
        return c.body(null, 200);
      },
    },
  });
}
deviceRoutes.resource('/deployables', {
  GET: {
    summary: 'List deployables',
    ...answers(200, 'Deployables', 'DeployableList', DeployableListSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:deployable:get_all');
      const rows = await listDeployables(c.var.deps.store.db);
      return c.json({ deployables: rows.map((r) => presentDeployable(r.deployable, r.deviceUuid, link(c))) });
    },
  },
});
deviceRoutes.resource('/deployables/:uuid', {
  GET: {
    summary: 'Show a deployable',
    ...answers(200, 'The deployable', 'Deployable', DeployableSchema),
    handler: async (c) => {
      authorize(c, 'cyborg:deployable:get_one');
      const row = await findDeployable(c.var.deps.store.db, c.req.param('uuid'));
      if (!row) throw notFound(`Deployable ${c.req.param('uuid')} could not be found.`);
      return c.json(presentDeployable(row.deployable, row.deviceUuid, link(c)));
    },
  },
});
