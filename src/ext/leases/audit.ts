// The leases in the audit (GET /diagnostics/audit, its `extensions.leases`):
// the sweep's counters and the leases held. An AuditEntry of
// diagnostics/audit.ts, checked where the extension object names it.
import type { ResultSet } from '@libsql/client';
import * as z from 'zod';
import { leaseStatsOf, leaseStatsStatements } from './leases.js';

export const leasesAudit = {
  entries: [
    {
      name: 'leases',
      schema: z.object({
        active: z.int().describe('leases held now'),
        expired_unswept: z.int().describe('expired, waiting for the next sweep'),
        sweeps: z.int().describe('sweeps that found expired leases'),
        released: z.int().describe('consumers whose allocations a sweep removed'),
        dropped: z.int().describe('leases dropped alone: the consumer was rewritten after the lease'),
        binding_failures: z.int().describe('leases released at once by a failed or timed-out ARQ bind'),
        last_sweep_at: z.string().nullable(),
      }),
      statements: leaseStatsStatements,
      value: (results: ResultSet[]) => leaseStatsOf(results),
    },
  ],
};
