// The Node suite runs three files at a time. Its longest files drive real
// external parts (Keystone under uwsgi, the OpenStack clients, Placement
// 8.0.0) and spend most of their time waiting on them; started first, they
// overlap everything else instead of being the tail of the run on a clean
// machine, where vitest has no timings of earlier runs and orders by file size.
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SLOW_FIRST = [
  // Over a minute waiting for a 60 s token to expire: overlapped, it costs the run nothing.
  'test/keystone/nova-events.test.ts',
  // Most of a minute waiting for a 45 s token to expire.
  'test/keystone/validator-real.test.ts',
  'test/keystone/openstack-cloud.test.ts',
  // Compute-bound: beside the files above, which mostly wait, it has a core to itself.
  'test/ext/simulate-differential.test.ts',
  'test/keystone/readiness.test.ts',
  'test/cyborg/cyborgclient.test.ts',
  'test/keystone/nova-token-renewal.test.ts',
  'test/wrangler-dev/keystone.test.ts',
  'test/admin/import-placement.test.ts',
  'test/placement/openstack-cli.test.ts',
  'test/fuzz/hostile-fuzz.test.ts',
  'test/lifecycle/cluster-faults.test.ts',
  'test/lifecycle/stop-drain.test.ts',
  'test/dashboard/dashboard-browser.test.ts',
  // Long on their own (a real Keystone, random runs, killed processes): started late, one
  // of them alone would be the run's tail.
  'test/ext/limits-keystone.test.ts',
  'test/ext/preemption-nominations.test.ts',
  'test/ext/lease-sweep-kill.test.ts',
  'test/db/database-silence.test.ts',
  'test/admin/backup.test.ts',
  'test/db/replica.test.ts',
  'test/ext/simulate-defrag-random.test.ts',
  'test/placement/concurrency.test.ts',
  'test/diagnostics/admin-cli.test.ts',
];

function rank(spec: TestSpecification): number {
  const i = SLOW_FIRST.findIndex((file) => spec.moduleId.endsWith(file));
  return i === -1 ? SLOW_FIRST.length : i;
}

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: the rest keep vitest's own order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
