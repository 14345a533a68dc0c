// Preemption (docs/preemption.md): priorities of consumers and projects, the
// search for candidates that evict the fewest, and preemptions. The whole
// extension: rows (priorities.ts), routes (http/routes.ts).
import type { Extension } from '../../extension.js';
import { sweepLeases } from '../allocation-ends.js';
import { preemptionCandidateRoutes, preemptionRoutes, priorityRoutes } from './http/routes.js';

export const preemption: Extension = {
  name: 'preemption',
  requires: ['holds'],
  routes: [priorityRoutes, preemptionCandidateRoutes, preemptionRoutes],
  // Its victims' grace ends through the allocation ends' sweep.
  jobs: { handlers: {}, sweeps: [sweepLeases] },
};
