// Every operation the app serves, for GET /openapi.json, in the order the
// document lists them: the RouteTable declarations (src/http/route-table.ts)
// at the paths ./mounts.ts serves them at. Each entry points at the zod
// schema (or the schema(mv) function, or the parser's key table) its
// handler validates with; document.ts samples those at every microversion
// to find the ranges. Collected on first use: this document's own route
// (./routes.ts) is one of them, and its handler imports the document.
import { operationsBelow, type Operation } from '../http/route-table.js';
import { MOUNTS } from './mounts.js';

export type { ApiName, Method, Operation, QueryParam } from '../http/route-table.js';

let operations: Operation[] | undefined;

export function allOperations(): Operation[] {
  operations ??= MOUNTS.flatMap((mount) => operationsBelow(mount.prefix, [...mount.tables]));
  return operations;
}
