// The Placement API as one Hono app. Each resource's routes live in
// routes/<resource>.ts; this file only orders middleware and mounts them.
import { Hono } from 'hono';
import { cors } from 'hono/cors';
import type { Deps } from '../deps.js';
import { authenticate, parseTokenTable } from '../http/auth.js';
import type { AppEnv } from '../http/env.js';
import { requestId } from '../http/request-id.js';
import { placementNotFound, placementOnError } from './errors.js';
import { placementMicroversion, placementRequestChecks } from './middleware.js';
import { placementRoutes } from './routes/index.js';

export function createPlacementApp(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    await next();
  });
  app.use(requestId());
  const { PLACEMENT_CORS_ALLOWED_ORIGIN: origin, PLACEMENT_CORS_ALLOW_HEADERS: allowHeaders } = deps.config;
  if (origin) {
    const origins = origin.split(',').map((o) => o.trim());
    app.use(cors({
      origin: (o) => (origins.includes(o) ? o : null),
      allowHeaders: allowHeaders ? allowHeaders.split(',').map((h) => h.trim()) : [],
      allowMethods: ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'],
      exposeHeaders: ['openstack-api-version', 'x-openstack-request-id'],
    }));
  }
  app.use(placementMicroversion());
  app.use(authenticate({
    strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
    tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
    publicPaths: /^\/?$/,
  }));
  app.use(placementRequestChecks());
  app.route('/', placementRoutes);
  app.notFound(placementNotFound);
  app.onError(placementOnError);
  return app;
}
