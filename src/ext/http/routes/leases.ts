// Allocation leases: PUT (set or renew) / GET / DELETE (confirm)
// /ext/leases/{consumer_uuid}, and GET /ext/leases. Logic in ../leases.ts.
import { Hono } from 'hono';
import { notFound } from '../../../errors.js';
import type { AppContext, AppEnv } from '../../../http/env.js';
import { readBody } from '../../../http/validate.js';
import { authorize, pathParam, resource } from '../../../placement/http/middleware.js';
import { parseUuidLike } from '../../../uuid.js';
import { confirmLease, getLease, listLeases, putLease } from '../../leases.js';
import { EXT_RULE } from '../../policy.js';
import { putLeaseSchema } from '../../schemas.js';

export const leaseRoutes = new Hono<AppEnv>();

/** The consumer a path names, in the canonical form allocations store it. */
const consumerOfPath = (c: AppContext) => {
  const raw = pathParam(c, 'consumer_uuid');
  return parseUuidLike(raw.trim()) ?? raw;
};

resource(leaseRoutes, '/leases', {
  GET: async (c) => {
    authorize(c, EXT_RULE);
    c.header('cache-control', 'no-cache');
    return c.json({ leases: await listLeases(c.var.deps.store) });
  },
});

resource(leaseRoutes, '/leases/:consumer_uuid', {
  GET: async (c) => {
    authorize(c, EXT_RULE);
    const uuid = consumerOfPath(c);
    const lease = await getLease(c.var.deps.store, uuid);
    if (!lease) throw notFound(`No lease for consumer '${uuid}'`);
    c.header('cache-control', 'no-cache');
    return c.json(lease);
  },
  PUT: async (c) => {
    authorize(c, EXT_RULE);
    const uuid = consumerOfPath(c);
    const { seconds } = await readBody(c, putLeaseSchema);
    const { deps } = c.var;
    const lease = await putLease(deps.store, uuid, seconds, deps.clock().getTime());
    if (!lease) throw notFound(`No allocations for consumer '${uuid}'`);
    return c.json(lease);
  },
  DELETE: async (c) => {
    authorize(c, EXT_RULE);
    const uuid = consumerOfPath(c);
    if (!(await confirmLease(c.var.deps.store, uuid))) throw notFound(`No lease for consumer '${uuid}'`);
    return c.body(null, 204);
  },
});
