// Every operation the app serves, for GET /openapi.json, in the order the
// document lists them. They all come from the RouteTable declarations the
// routers register (src/http/route-table.ts): each entry points at the zod
// schema (or the schema(mv) function, or the parser's key table) its
// handler validates with; document.ts samples those at every microversion
// to find the ranges. Collected on first use: this document's own route
// (./routes.ts) is one of them, and its handler imports the document.
import { CYBORG_V2_ROUTES, rootRoutes as cyborgRootRoutes } from '../cyborg/http/routes/index.js';
import { dashboardRoutes } from '../dashboard/app.js';
import { DIAGNOSTICS_ROUTES } from '../diagnostics/http/routes/index.js';
import { EXTENSIONS, EXTENSION_ROUTES } from '../compose.js';
import { operationsBelow, type Operation } from '../http/route-table.js';
import { operatorRoutes } from '../observability/http/routes/index.js';
import { PLACEMENT_ROUTES } from '../placement/http/routes/index.js';
import { openApiRoutes } from './routes.js';

export type { ApiName, Method, Operation, QueryParam } from '../http/route-table.js';

let operations: Operation[] | undefined;

export function allOperations(): Operation[] {
  operations ??= [
    ...operationsBelow('', PLACEMENT_ROUTES),
    ...operationsBelow('/accelerator', [cyborgRootRoutes]),
    ...operationsBelow('/accelerator/v2', CYBORG_V2_ROUTES),
    ...operationsBelow('/diagnostics', DIAGNOSTICS_ROUTES),
    // The extensions (docs/extensions.md).
    ...operationsBelow('/ext', [...EXTENSION_ROUTES]),
    // The capacity dashboard, this document, health and metrics.
    ...operationsBelow('/dashboard', [dashboardRoutes]),
    ...operationsBelow('', [openApiRoutes, operatorRoutes]),
  ].map(withExtensionParams);
  return operations;
}

/** The installed extensions' candidate parameters where a candidates query leaves their place (candidate-query.ts), those each microversion takes. */
function withExtensionParams(op: Operation): Operation {
  const { query } = op;
  if (!query) return op;
  const params = EXTENSIONS.flatMap((e) => e.params ?? []).filter((p) => p.description !== undefined);
  return {
    ...op,
    query: (mv) =>
      query(mv).flatMap((param) =>
        param.extensionParams
          ? params.filter((p) => p.since === undefined || mv.atLeast(p.since)).map((p) => ({ name: p.name, description: p.description }))
          : [param],
      ),
  };
}
