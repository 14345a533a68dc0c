// Placement's middleware stack, around its own routes and the routes that
// answer in its envelope (/diagnostics, /ext): src/app.ts hands them over,
// already at their paths, and serves the result as one branch of its tree.
import { Hono } from 'hono';
import type { Deps } from '../../deps.js';
import { authenticate, parseTokenTable } from '../../http/auth.js';
import { corsFilter } from '../../http/cors.js';
import type { AppEnv } from '../../http/env.js';
import { requestId } from '../../http/request-id.js';
import { placementHttp } from './profile.js';
import { placementAcceptCheck, placementContentChecks } from './middleware.js';

/**
 * `roots` are the paths the routes are mounted at ('' for Placement's own):
 * each answers without a token (Placement's version document; below the
 * others, a 404), and every path not routed answers Placement's 404.
 */
export function createPlacementApp(deps: Deps, routes: Hono<AppEnv>, roots: readonly string[] = ['']): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
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
  app.use(
    authenticate({
      strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
      tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
      publicPaths: new RegExp(`^(${roots.join('|')})/?$`),
    }),
  );
  app.use(placementContentChecks());
  app.use(placementHttp.urlChecks());
  app.use(placementAcceptCheck());
  for (const middleware of deps.extensions.middleware()) app.use(middleware);
  app.route('/', routes);
  app.all('*', placementHttp.notFound);
  app.onError(placementHttp.onError);
  return app;
}
