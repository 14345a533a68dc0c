// The Placement API as one Hono app. Each resource's routes live in
// routes/<resource>.ts; this file only orders middleware and mounts them.
import { Hono } from 'hono';
import type { Deps } from '../../deps.js';
import { authenticate, parseTokenTable } from '../../http/auth.js';
import { corsFilter } from '../../http/cors.js';
import type { AppEnv } from '../../http/env.js';
import { requestId } from '../../http/request-id.js';
import { placementHttp } from './profile.js';
import { placementAcceptCheck, placementContentChecks } from './middleware.js';
import { placementRoutes } from './routes/index.js';

/**
 * `routes` defaults to the Placement API; the operator diagnostics reuse the
 * same middleware stack (microversion, auth, envelope) around their own routes.
 */
export function createPlacementApp(deps: Deps, routes: Hono<AppEnv> = placementRoutes): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    await next();
  });
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
      publicPaths: /^\/?$/,
    }),
  );
  app.use(placementContentChecks());
  app.use(placementHttp.urlChecks());
  app.use(placementAcceptCheck());
  app.route('/', routes);
  app.notFound(placementHttp.notFound);
  app.onError(placementHttp.onError);
  return app;
}
