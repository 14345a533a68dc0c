// createApp(deps): the one app both runtimes serve. The accelerator (Cyborg)
// API lives under /accelerator, the capacity dashboard under /dashboard;
// everything else is the Placement API.
import { Hono } from 'hono';
import type { Deps } from './deps.js';
import { createCyborgApp } from './cyborg/http/app.js';
import { createDashboardApp } from './dashboard/app.js';
import { diagnosticsRoutes } from './diagnostics/http/routes/index.js';
import { observeRequests } from './http/observe.js';
import { carryTrace } from './http/trace.js';
import { operationsRoutes } from './observability/http/routes/index.js';
import { joinRoutes } from './http/route-table.js';
import { openApiRoutes } from './openapi/routes.js';
import { createPlacementApp } from './placement/http/app.js';

/** Methods a fetch Request cannot be built with; @hono/node-server hands TRACE over as a GET whose method reads TRACE. */
const FETCH_FORBIDDEN = new Set(['TRACE', 'TRACK', 'CONNECT']);

/**
 * The request a sub-app mounted at `prefix` sees: the same request, its path
 * without the prefix. Unlike mount()'s default it also carries TRACE, so the
 * sub-app answers it with its 405 and Allow instead of a 500.
 */
export function requestBelow(prefix: string): (request: Request) => Request {
  return (request) => {
    const url = new URL(request.url);
    url.pathname = url.pathname.slice(prefix.length) || '/';
    const method = request.method;
    let carried: Request;
    if (!FETCH_FORBIDDEN.has(method.toUpperCase())) carried = new Request(url, request);
    else {
      carried = new Request(url, { method: 'GET', headers: request.headers, signal: request.signal });
      Object.defineProperty(carried, 'method', { get: () => method });
    }
    carryTrace(request, carried, prefix);
    return carried;
  };
}

export function createApp(deps: Deps): Hono {
  const root = new Hono();
  root.use(observeRequests(deps));
  root.route('/', operationsRoutes(deps));
  root.route('/', openApiRoutes.app);
  root.mount('/accelerator', createCyborgApp(deps).fetch, { replaceRequest: requestBelow('/accelerator') });
  root.mount('/diagnostics', createPlacementApp(deps, diagnosticsRoutes).fetch, { replaceRequest: requestBelow('/diagnostics') });
  // The extensions (docs/extensions.md): Placement's middleware around their own routes.
  root.mount('/ext', createPlacementApp(deps, joinRoutes(deps.extensions.routes())).fetch, { replaceRequest: requestBelow('/ext') });
  root.mount('/dashboard', createDashboardApp(deps).fetch, { replaceRequest: requestBelow('/dashboard') });
  // At "/" the path stays as it is: the request goes through unchanged.
  root.mount('/', createPlacementApp(deps).fetch, { replaceRequest: false });
  return root;
}
