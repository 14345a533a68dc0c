// Allocation leases: PUT (set or renew) / GET / DELETE (confirm)
// /ext/leases/{consumer_uuid}, and GET /ext/leases. Logic in ../leases.ts.
import type { Context } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { consumerOfPath } from '../../../shared/uuid.js';
import { withRaceRetries } from '../../../db/write-batch.js';
import { endChangeChecks } from '../../../placement/writes/kernel.js';
import { leaseExpiryMs } from '../../allocation-ends.js';
import { confirmLease, getLease, listLeases, putLease } from '../leases.js';
import { LeaseListResponse, LeaseResponse, putLeaseSchema } from '../schemas.js';
import { RouteTable } from '../../../http/route-table.js';
import { adminJson } from '../../http/admin-only.js';
import { placementHttp } from '../../../placement/http/profile.js';

export const leaseRoutes = new RouteTable('extensions', placementHttp);

leaseRoutes.resource('/leases', {
  GET: adminJson({
    summary: 'Extension: the allocation leases held, soonest expiry first',
    answer: { description: 'Leases', name: 'LeaseList', schema: LeaseListResponse },
    fresh: true,
    run: async (c) => ({ leases: await listLeases(c.var.deps.store) }),
  }),
});

const leasedConsumer = (c: Context<AppEnv, '/leases/:consumer_uuid'>) => consumerOfPath(c.req.param('consumer_uuid'));

leaseRoutes.resource('/leases/:consumer_uuid', {
  GET: adminJson({
    summary: "Extension: a consumer's allocation lease",
    answer: { description: 'The lease', name: 'Lease', schema: LeaseResponse },
    fresh: true,
    missing: (c) => `No lease for consumer '${leasedConsumer(c)}'`,
    run: (c) => getLease(c.var.deps.store, leasedConsumer(c)),
  }),
  PUT: adminJson({
    summary: "Extension: put or renew a lease on a consumer's current allocations",
    body: { name: 'PutLease', schema: putLeaseSchema },
    answer: { description: 'The lease', name: 'Lease', schema: LeaseResponse },
    missing: (c) => `No allocations for consumer '${leasedConsumer(c)}'`,
    run: async (c, { seconds }) => {
      const uuid = leasedConsumer(c);
      const { deps } = c.var;
      // Checked by the rules that read when allocations end (holds): one may refuse it, naming what it breaks.
      return withRaceRetries(async () => {
        const nowMs = deps.clock().getTime();
        const checks = await endChangeChecks(deps.writeHooks, deps.store, {
          consumer: uuid,
          endsAtMs: leaseExpiryMs(seconds, nowMs),
          nowMs,
        });
        return putLease(deps.store, uuid, seconds, nowMs, checks);
      });
    },
  }),
  DELETE: adminJson({
    summary: 'Extension: confirm the allocations (the lease goes, they stay)',
    answer: { status: 204, description: 'Confirmed' },
    missing: (c) => `No lease for consumer '${leasedConsumer(c)}'`,
    run: async (c) => {
      const uuid = leasedConsumer(c);
      const { deps } = c.var;
      // Confirmed, the allocations last forever: the rules that read when they end (holds) may refuse it.
      return withRaceRetries(async () => {
        const checks = await endChangeChecks(deps.writeHooks, deps.store, {
          consumer: uuid,
          endsAtMs: Number.POSITIVE_INFINITY,
          nowMs: deps.clock().getTime(),
        });
        return confirmLease(deps.store, uuid, checks);
      });
    },
  }),
});
