// Allocation leases: PUT (set or renew) / GET / DELETE (confirm)
// /ext/leases/{consumer_uuid}, and GET /ext/leases. Logic in ../leases.ts.
import { notFound } from '../../../errors.js';
import { readBody } from '../../../http/validate.js';
import { consumerOfPath } from '../../../shared/uuid.js';
import { withRaceRetries } from '../../../db/write-batch.js';
import { endChangeChecks } from '../../../placement/writes/hooks.js';
import { confirmLease, getLease, leaseExpiryMs, listLeases, putLease } from '../leases.js';
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
      // Checked by the rules that read when allocations end (holds): one may refuse it, naming what it breaks.
      const lease = await withRaceRetries(async () => {
        const nowMs = deps.clock().getTime();
        const checks = await endChangeChecks(deps.writeHooks, deps.store, {
          consumer: uuid,
          endsAtMs: leaseExpiryMs(seconds, nowMs),
          nowMs,
        });
        return putLease(deps.store, uuid, seconds, nowMs, checks);
      });
      if (!lease) throw notFound(`No allocations for consumer '${uuid}'`);
      return c.json(lease);
    },
  }),
  DELETE: adminOnly({
    summary: 'Extension: confirm the allocations (the lease goes, they stay)',
    responses: { 204: 'Confirmed' },
    handler: async (c) => {
      const uuid = consumerOfPath(c.req.param('consumer_uuid'));
      const { deps } = c.var;
      // Confirmed, the allocations last forever: the rules that read when they end (holds) may refuse it.
      const confirmed = await withRaceRetries(async () => {
        const checks = await endChangeChecks(deps.writeHooks, deps.store, {
          consumer: uuid,
          endsAtMs: Number.POSITIVE_INFINITY,
          nowMs: deps.clock().getTime(),
        });
        return confirmLease(deps.store, uuid, checks);
      });
      if (!confirmed) throw notFound(`No lease for consumer '${uuid}'`);
      return c.body(null, 204);
    },
  }),
});
