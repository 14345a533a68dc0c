// Shared counters of partitionable devices (docs/extensions-gpu.md): several
// resource classes of a provider draw on one counter (a MIG GPU's slices on
// its memory). The whole extension: the candidates' capacity rule (read
// hook, candidates.ts), the claim guard (claim-guard.ts), its rows (repo.ts,
// drizzle/) and its route (http/routes.ts).
import type { Extension } from '../../extension.js';
import { countersAudit } from './audit.js';
import { countersDashboard } from './dashboard.js';
import { candidateCounters } from './candidates.js';
import { countersWrites } from './claim-guard.js';
import { counterRoutes } from './http/routes.js';

export const counters: Extension = {
  name: 'counters',
  read: [candidateCounters],
  writes: countersWrites,
  routes: [counterRoutes],
  audit: countersAudit,
  dashboard: countersDashboard,
};
