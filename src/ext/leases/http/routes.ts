// Allocation leases: PUT (set or renew) / GET / DELETE (confirm)
// /ext/leases/{consumer_uuid}, and GET /ext/leases. Logic in ../leases.ts.
import { notFound } from '../../../errors.js';
import { readBody } from '../../../http/validate.js';
import { consumerOfPath } from '../../../shared/uuid.js';
import { confirmLease, getLease, listLeases, putLease } from '../leases.js';
import { LeaseListResponse, LeaseResponse, putLeaseSchema } from '../schemas.js';
import { RouteTable } from '../../../http/route-table.js';
import { adminOnly } from '../../http/admin-only.js';
import { placementHttp } from '../../../placement/http/profile.js';

export const leaseRoutes = new RouteTable('extensions', placementHttp);

leaseRoutes.resource('/leases', {
  GET: adminOnly({
    summary: 'Extension: the allocation leases held, soonest expiry first',
    responses: { 200: 'Leases' },
    responseSchema: LeaseListResponse,
    responseName: 'LeaseList',
    handler: async (c) => {
      c.header('cache-control', 'no-cache');
      return c.json({ leases: await listLeases(c.var.deps.store) });
    },
  }),
});

leaseRoutes.resource('/leases/:consumer_uuid', {
  GET: adminOnly({
    summary: "Extension: a consumer's allocation lease",
    responses: { 200: 'The lease' },
    responseSchema: LeaseResponse,
    responseName: 'Lease',
    handler: async (c) => {
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      const lease = await getLease(c.var.deps.store, uuid);
      if (!lease) throw notFound(`No lease for consumer '${uuid}'`);
      c.header('cache-control', 'no-cache');
      return c.json(lease);
    },
  }),
  PUT: adminOnly({
    summary: "Extension: put or renew a lease on a consumer's current allocations",
    body: () => putLeaseSchema,
    bodyName: 'PutLease',
    responses: { 200: 'The lease' },
    responseSchema: LeaseResponse,
    responseName: 'Lease',
    handler: async (c) => {
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      const { seconds } = await readBody(c, putLeaseSchema);
      const { deps } = c.var;
      const lease = await putLease(deps.store, uuid, seconds, deps.clock().getTime());
      if (!lease) throw notFound(`No allocations for consumer '${uuid}'`);
      return c.json(lease);
    },
  }),
  DELETE: adminOnly({
    summary: 'Extension: confirm the allocations (the lease goes, they stay)',
    responses: { 204: 'Confirmed' },
    handler: async (c) => {
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      if (!(await confirmLease(c.var.deps.store, uuid))) throw notFound(`No lease for consumer '${uuid}'`);
      return c.body(null, 204);
    },
  }),
});
