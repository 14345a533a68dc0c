// /v2/devices and /v2/deployables, as host agents reported them; admins can
// take a device out of service (disable: status maintaining) and back.
import { Hono } from 'hono';
import { notFound } from '../../../errors.js';
import { authorize, resource, selfLink, type CyborgContext, type CyborgEnv } from '../profile.js';
import { presentDeployable, presentDevice } from '../../present.js';
import { findDeployable, findDevice, listDeployables, listDevices, setDeviceStatus } from '../../repo/devices.js';
import { DeviceListQuery, parseQuery } from '../../schemas/queries.js';
import { MV } from '../../versions.js';

const link = (c: CyborgContext) => (collection: string, uuid: string) => selfLink(c, collection, uuid);
export const deviceRoutes = new Hono<CyborgEnv>();

resource(deviceRoutes, '/devices', {
  GET: async (c) => {
    authorize(c, 'cyborg:device:get_all');
    const rows = await listDevices(c.var.deps.store.db, parseQuery(DeviceListQuery, c.req.query()));
    return c.json({ devices: rows.map((r) => presentDevice(r, link(c), c.var.mv.atLeast(MV.DEVICE_STATUS))) });
  },
});
resource(deviceRoutes, '/devices/:uuid', {
  GET: async (c) => {
    authorize(c, 'cyborg:device:get_one');
    const row = await findDevice(c.var.deps.store.db, c.req.param('uuid') ?? '');
    if (!row) throw notFound(`Device ${c.req.param('uuid')} could not be found.`);
    return c.json(presentDevice(row, link(c), c.var.mv.atLeast(MV.DEVICE_STATUS)));
  },
});
for (const [action, status] of [
  ['enable', 'enabled'],
  ['disable', 'maintaining'],
] as const) {
  resource(deviceRoutes, `/devices/:uuid/${action}`, {
    POST: async (c) => {
      authorize(c, `cyborg:device:${action}`);
      const uuid = c.req.param('uuid') ?? '';
      const { deps } = c.var;
      const row = await setDeviceStatus(deps.store, uuid, status, deps.clock().toISOString());
      if (!row) throw notFound(`Device ${uuid} could not be found.`);
      return c.body(null, 200);
    },
  });
}
resource(deviceRoutes, '/deployables', {
  GET: async (c) => {
    authorize(c, 'cyborg:deployable:get_all');
    const rows = await listDeployables(c.var.deps.store.db);
    return c.json({ deployables: rows.map((r) => presentDeployable(r.deployable, r.deviceUuid, link(c))) });
  },
});
resource(deviceRoutes, '/deployables/:uuid', {
  GET: async (c) => {
    authorize(c, 'cyborg:deployable:get_one');
    const row = await findDeployable(c.var.deps.store.db, c.req.param('uuid') ?? '');
    if (!row) throw notFound(`Deployable ${c.req.param('uuid')} could not be found.`);
    return c.json(presentDeployable(row.deployable, row.deviceUuid, link(c)));
  },
});
