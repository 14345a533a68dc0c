// What if (docs/simulate.md): POST /ext/simulate and GET /ext/defrag, answered
// by the candidates engine over an in-memory copy of the cloud with changes
// applied (nothing written), and `placement-admin simulate` over them. Routes
// and a command only: it reads through the engine the app installed (its
// parameters and read hooks), adds nothing to the engine itself.
import { adminCommand, type Extension } from '../../extension.js';
import { whatIfPanel } from './dashboard.js';
import { DASHBOARD_ASSETS } from './dashboard-assets.generated.js';
import { simulateRoutes } from './http/routes.js';
import { simulateSchema } from './index.js';
import { SimulationResponse } from './responses.js';
import { formatSimulation } from './words.js';

export const simulate: Extension = {
  name: 'simulate',
  // It replays the others' rules on a copy of the cloud on purpose: their models, schemas and guards.
  requires: ['taints', 'headroom', 'gangs', 'holds'],
  routes: [simulateRoutes],
  dashboard: { panels: [whatIfPanel], assets: DASHBOARD_ASSETS },
  admin: [
    adminCommand({
      name: 'simulate',
      usage: 'simulate --endpoint URL [--token TOKEN] [--json] FILE.yaml',
      help: (exit) => `simulate   reads FILE.yaml ({changes: [...], queries: [{name, query}], threshold_percent}; docs/simulate.md),
           sends it to POST /ext/simulate (nothing is written) and prints each query's headroom before
           and after, who would no longer fit and where it could go, and the dashboard's figures;
           exit ${exit.problems} when a consumer would be displaced.`,
      file: { what: 'of changes', schema: simulateSchema },
      path: '/ext/simulate',
      answer: SimulationResponse,
      words: formatSimulation,
      exit: (answer, exit) => (answer.displaced.length > 0 ? exit.problems : exit.clean),
    }),
  ],
};
