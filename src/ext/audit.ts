// What the audit (GET /diagnostics/audit) shows of the extensions: the lease
// sweep's counters and the leases held, and how many providers a taint keeps
// out of candidates (the drain list itself is GET /ext/taints), and the
// holds with where their rule is broken.
import { z } from 'zod';
import type { DataStore } from '../db/client.js';
import { HoldsAudit, holdsAudit } from './holds/audit.js';
import { leaseStats } from './leases/leases.js';
import { TAINT } from '../db/columns.js';

export const ExtensionsAudit = z.object({
  leases: z.object({
    active: z.int().describe('leases held now'),
    expired_unswept: z.int().describe('expired, waiting for the next sweep'),
    sweeps: z.int().describe('sweeps that found expired leases'),
    released: z.int().describe('consumers whose allocations a sweep removed'),
    dropped: z.int().describe('leases dropped alone: the consumer was rewritten after the lease'),
    binding_failures: z.int().describe('leases released at once by a failed or timed-out ARQ bind'),
    last_sweep_at: z.string().nullable(),
  }),
  tainted_providers: z.int().describe('providers with a taint (GET /ext/taints lists them with their consumers)'),
  holds: HoldsAudit.describe('the holds (docs/holds.md) and where their rule is broken (reported, never repaired)'),
});
export type ExtensionsAudit = z.infer<typeof ExtensionsAudit>;

export async function extensionsAudit(store: DataStore, nowMs: number): Promise<ExtensionsAudit> {
  const [leases, [tainted], holds] = await Promise.all([
    leaseStats(store, nowMs),
    store.readBatch([{ sql: `SELECT count(DISTINCT ${TAINT.resourceProviderId}) AS n FROM ext_provider_taints`, args: [] }]),
    holdsAudit(store, nowMs),
  ]);
  return { leases, tainted_providers: Number(tainted!.rows[0]!.n), holds };
}
