// The leases' periodic work, registered with the job runner like the
// accelerator API's (src/jobs/registry.ts; extension.ts): the lease sweep. It runs wherever
// the sweeps run, once per service: the Node primary's timer (or the single
// process), the Worker's scheduled handler; counted in /metrics
// (placement_lease_sweep_*_total) besides the audit's totals.
import type { Deps } from '../../deps.js';
import { sweepExpiredLeases } from './leases.js';

/** Releases expired leases; returns how many it released or dropped. Never throws: the other sweeps still run. */
export async function sweepLeases(deps: Deps): Promise<number> {
  try {
    const { released, dropped } = await sweepExpiredLeases(deps.store, deps.clock().getTime());
    if (released.length) deps.log.info('lease sweep released allocations', { consumers: released });
    if (dropped.length) deps.log.info('lease sweep dropped leases of rewritten consumers', { consumers: dropped });
    // Counted after the sweep's one write batch committed (all or nothing); zeros keep every series present.
    deps.metrics.leaseSweepRuns.inc(['ok']);
    deps.metrics.leaseSweepReleased.inc([], released.length);
    deps.metrics.leaseSweepDropped.inc([], dropped.length);
    return released.length + dropped.length;
  } catch (err) {
    deps.log.error('lease sweep failed; the next sweep retries', { err: String(err) });
    deps.metrics.leaseSweepRuns.inc(['failed']);
    return 0;
  }
}
