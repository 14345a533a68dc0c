// Where every route table is served, stated once: createApp (src/app.ts)
// builds its one Hono tree from this list, and GET /openapi.json
// (./operations.ts) lists the paths in this order. `stack` names the
// middleware and error envelope the routes run under; an API's first mount is
// its root (`/accelerator`, `/dashboard`; '' for Placement, whose stack also
// serves /diagnostics and /ext).
import { CYBORG_V2_ROUTES, rootRoutes as cyborgRootRoutes } from '../cyborg/http/routes/index.js';
import { dashboardRoutes } from '../dashboard/app.js';
import { diagnosticsRoutes } from '../diagnostics/http/routes/index.js';
import type { Extension } from '../extension.js';
import type { RouteTable } from '../http/route-table.js';
import { operatorRoutes } from '../observability/http/routes/index.js';
import { PLACEMENT_ROUTES } from '../placement/http/routes/index.js';
import { openApiRoutes } from './routes.js';

/** The middleware each mount's routes run under (src/app.ts builds each once). */
export type Stack = 'placement' | 'accelerator' | 'dashboard' | 'operator' | 'none';

export interface Mount {
  stack: Stack;
  /** The path the tables' own paths are below ('' at the root). */
  prefix: string;
  tables: readonly RouteTable[];
}

/** Every mount, with what the extensions an app installs add (its Deps' own; every shipped one for the document). */
export function mountsWith(extensions: readonly Extension[]): readonly Mount[] {
  const extensionRoutes = extensions.flatMap((e) => e.routes ?? []);
  const audits = extensions.flatMap((e) => (e.audit ? [e.audit] : []));
  const diagnoses = extensions.flatMap((e) => (e.diagnosis ? [e.diagnosis] : []));
  const dashboard = {
    providers: extensions.flatMap((e) => e.dashboard?.provider ?? []),
    sections: extensions.flatMap((e) => e.dashboard?.sections ?? []),
  };
  return [
    { stack: 'placement', prefix: '', tables: PLACEMENT_ROUTES },
    { stack: 'accelerator', prefix: '/accelerator', tables: [cyborgRootRoutes] },
    { stack: 'accelerator', prefix: '/accelerator/v2', tables: CYBORG_V2_ROUTES },
    { stack: 'placement', prefix: '/diagnostics', tables: diagnosticsRoutes(audits, diagnoses) },
    // The extensions (docs/extensions.md).
    { stack: 'placement', prefix: '/ext', tables: extensionRoutes },
    // The capacity dashboard, this document, health and metrics.
    { stack: 'dashboard', prefix: '/dashboard', tables: [dashboardRoutes(dashboard)] },
    { stack: 'none', prefix: '', tables: [openApiRoutes] },
    { stack: 'operator', prefix: '', tables: [operatorRoutes] },
  ];
}
