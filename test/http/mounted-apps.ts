// The app as it was composed before it became one Hono tree (frozen here as
// the oracle of tree-differential.test.ts): each API a Hono app of its own,
// mounted with a rewritten Request (its path without the prefix; TRACE
// carried as a GET whose method reads TRACE), Placement's middleware stack
// built three times (Placement, /diagnostics, /ext).
import { Hono } from 'hono';
import { CYBORG_V2_ROUTES, rootRoutes as cyborgRootRoutes } from '../../src/cyborg/http/routes/index.js';
import { cyborgHttp } from '../../src/cyborg/http/profile.js';
import { dashboardRoutes } from '../../src/dashboard/app.js';
import type { Deps } from '../../src/deps.js';
import { diagnosticsRoutes } from '../../src/diagnostics/http/routes/index.js';
import { authenticate, parseTokenTable } from '../../src/http/auth.js';
import { corsFilter } from '../../src/http/cors.js';
import type { AppEnv } from '../../src/http/env.js';
import { observeRequests } from '../../src/http/observe.js';
import { requestId } from '../../src/http/request-id.js';
import { joinRoutes } from '../../src/http/route-table.js';
import { createOperatorApp, operatorRoutes } from '../../src/observability/http/routes/index.js';
import { openApiRoutes } from '../../src/openapi/routes.js';
import { placementAcceptCheck, placementContentChecks } from '../../src/placement/http/middleware.js';
import { placementHttp } from '../../src/placement/http/profile.js';
import { placementRoutes } from '../../src/placement/http/routes/index.js';

const FETCH_FORBIDDEN = new Set(['TRACE', 'TRACK', 'CONNECT']);

function requestBelow(prefix: string): (request: Request) => Request {
  return (request) => {
    const url = new URL(request.url);
    url.pathname = url.pathname.slice(prefix.length) || '/';
    const method = request.method;
    if (!FETCH_FORBIDDEN.has(method.toUpperCase())) return new Request(url, request);
    const carried = new Request(url, { method: 'GET', headers: request.headers, signal: request.signal });
    Object.defineProperty(carried, 'method', { get: () => method });
    return carried;
  };
}

function withDeps(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    await next();
  });
  return app;
}

function placementApp(deps: Deps, routes: Hono<AppEnv>): Hono<AppEnv> {
  const app = withDeps(deps);
  app.use(requestId());
  const { PLACEMENT_CORS_ALLOWED_ORIGIN: origin, PLACEMENT_CORS_ALLOW_HEADERS: allowHeaders } = deps.config;
  if (origin) {
    app.use(
      corsFilter({
        allowedOrigins: origin.split(',').map((o) => o.trim()),
        allowHeaders: allowHeaders ? allowHeaders.split(',').map((h) => h.trim()) : [],
        exposeHeaders: ['openstack-api-version', 'x-openstack-request-id'],
      }),
    );
  }
  app.use(placementHttp.microversion());
  const tokens = parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS);
  app.use(authenticate({ strategy: deps.config.PLACEMENT_AUTH_STRATEGY, tokens, publicPaths: /^\/?$/ }));
  app.use(placementContentChecks());
  app.use(placementHttp.urlChecks());
  app.use(placementAcceptCheck());
  app.route('/', routes);
  app.notFound(placementHttp.notFound);
  app.onError(placementHttp.onError);
  return app;
}

function cyborgApp(deps: Deps): Hono<AppEnv> {
  const app = withDeps(deps);
  app.use(requestId());
  app.use(cyborgHttp.microversion());
  const tokens = parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS);
  app.use(authenticate({ strategy: deps.config.PLACEMENT_AUTH_STRATEGY, tokens, publicPaths: /^\/?$|^\/v2\/?$/ }));
  app.use(cyborgHttp.urlChecks());
  app.route('/', cyborgRootRoutes.app);
  for (const table of CYBORG_V2_ROUTES) app.route('/v2', table.app);
  app.notFound(cyborgHttp.notFound);
  app.onError(cyborgHttp.onError);
  return app;
}

function dashboardApp(deps: Deps): Hono<AppEnv> {
  const app = withDeps(deps);
  app.use(requestId());
  const tokens = parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS);
  app.use('/api/*', authenticate({ strategy: deps.config.PLACEMENT_AUTH_STRATEGY, tokens, publicPaths: /(?!)/ }));
  app.route(
    '/',
    dashboardRoutes({
      providers: deps.extensions.list.flatMap((e) => e.dashboard?.provider ?? []),
      sections: deps.extensions.list.flatMap((e) => e.dashboard?.sections ?? []),
    }).app,
  );
  app.notFound(placementHttp.notFound);
  app.onError(placementHttp.onError);
  return app;
}

export function createMountedApp(deps: Deps): Hono<AppEnv> {
  const root = withDeps(deps);
  root.use(observeRequests(deps));
  root.route('/', createOperatorApp(deps, operatorRoutes.app));
  root.route('/', openApiRoutes.app);
  root.mount('/accelerator', cyborgApp(deps).fetch, { replaceRequest: requestBelow('/accelerator') });
  root.mount(
    '/diagnostics',
    placementApp(
      deps,
      joinRoutes(
        diagnosticsRoutes(
          deps.extensions.list.flatMap((e) => (e.audit ? [e.audit] : [])),
          deps.extensions.list.flatMap((e) => (e.diagnosis ? [e.diagnosis] : [])),
        ),
      ),
    ).fetch,
    { replaceRequest: requestBelow('/diagnostics') },
  );
  root.mount('/ext', placementApp(deps, joinRoutes(deps.extensions.list.flatMap((e) => e.routes ?? []))).fetch, {
    replaceRequest: requestBelow('/ext'),
  });
  root.mount('/dashboard', dashboardApp(deps).fetch, { replaceRequest: requestBelow('/dashboard') });
  root.mount('/', placementApp(deps, placementRoutes).fetch, { replaceRequest: false });
  return root;
}
