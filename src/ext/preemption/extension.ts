// Preemption (docs/preemption.md): priorities of consumers and projects, the
// search for candidates that evict the fewest, and preemptions. The whole
// extension: rows (priorities.ts), routes (http/routes.ts), the allocations
// its search keeps per app (cloud.ts).
import type { Extension } from '../../extension.js';
import { sweepLeases } from '../allocation-ends.js';
import { AllocationIndexes } from './cloud.js';
import { preemptionCandidateRoutes, preemptionRoutes, priorityRoutes } from './http/routes.js';

export const preemption: Extension = {
  name: 'preemption',
  requires: ['holds'],
  routes: [priorityRoutes, preemptionCandidateRoutes, preemptionRoutes],
  // Its victims' grace ends through the allocation ends' sweep.
  jobs: { handlers: {}, sweeps: [sweepLeases] },
  // The allocations its search keeps in memory between requests are the app's (cloud.ts).
  setUp: () => ({ state: new AllocationIndexes() }),
};
