// Holds (docs/holds.md): capacity held for a project over a future window,
// backfill before it (ext_until) and drawing from it (ext_hold). The whole
// extension: the rule (model.ts; what it bounds, declared once: declaration.ts), its rows (repo.ts, drizzle/0010), the claim
// guard and claim parameters (claim-guard.ts), what one app installs (installed.ts), the end of a hold (sweep.ts,
// jobs.ts) and its routes (http/routes.ts).
import type { Extension } from '../../extension.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import { sweepLeases } from '../allocation-ends.js';
import { holdsAudit } from './audit.js';
import { holdParam, untilParam } from './candidates.js';
import { holdsWrites } from './claim-guard.js';
import { HELD_CAPACITY } from './declaration.js';
import { holdsPanel } from './dashboard.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { holdGauges } from './gauges.js';
import { holdRoutesOf } from './http/routes.js';
import { installHolds } from './installed.js';
import { sweepHolds } from './jobs.js';

/** The extension enforcing `declaration` (the holds' own; a test declares another). */
export const holdsExtension = (declaration: SetAsideConstraint): Extension => ({
  name: 'holds',
  requires: ['gangs'],
  params: [untilParam, holdParam],
  writes: holdsWrites(declaration),
  // A claim's ext_until ends through the allocation ends' sweep.
  jobs: { handlers: {}, sweeps: [sweepHolds, sweepLeases] },
  routes: [holdRoutesOf(declaration)],
  audit: holdsAudit(declaration),
  gauges: holdGauges(declaration),
  dashboard: { panels: [holdsPanel], assets: DASHBOARD_ASSETS },
  // The read hook is built per app (what it keeps is the app's), with the declaration the others read back.
  setUp: () => {
    const installed = installHolds(declaration);
    return { state: installed, read: [installed.hook] };
  },
});

export const holds = holdsExtension(HELD_CAPACITY);
