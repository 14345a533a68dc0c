// Preemption (docs/preemption.md): priorities of consumers and projects, the
// search for candidates that evict the fewest, and preemptions. The whole
// extension: rows (priorities.ts), routes (http/routes.ts).
import type { Extension } from '../../extension.js';
import { preemptionCandidateRoutes, preemptionRoutes, priorityRoutes } from './http/routes.js';

export const preemption: Extension = {
  name: 'preemption',
  requires: ['holds', 'leases'],
  routes: [priorityRoutes, preemptionCandidateRoutes, preemptionRoutes],
};
