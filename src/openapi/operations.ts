// Every operation the app serves, for GET /openapi.json, in the order the
// document lists them: the RouteTable declarations (src/http/route-table.ts)
// at the paths ./mounts.ts serves them at. Each entry points at the zod
// schema (or the schema(mv) function, or the parser's key table) its
// handler validates with; document.ts samples those at every microversion
// to find the ranges. Collected on first use: this document's own route
// (./routes.ts) is one of them, and its handler imports the document.
import { EXTENSIONS } from '../compose.js';
import { operationsBelow, type Operation } from '../http/route-table.js';
import { mountsWith } from './mounts.js';

export type { ApiName, Method, Operation, QueryParam } from '../http/route-table.js';

let operations: Operation[] | undefined;

export function allOperations(): Operation[] {
  operations ??= mountsWith(EXTENSIONS)
    .flatMap((mount) => operationsBelow(mount.prefix, [...mount.tables]))
    .map(withExtensionParams);
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
