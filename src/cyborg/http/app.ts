// The Cyborg v2 (accelerator) API as one Hono app, mounted at /accelerator.
// Middleware order: deps, request id, microversion (406 as Cyborg), auth, URL checks.
import { Hono } from 'hono';
import type { Deps } from '../../deps.js';
import { authenticate, parseTokenTable } from '../../http/auth.js';
import type { AppEnv } from '../../http/env.js';
import { requestId } from '../../http/request-id.js';
import { cyborgHttp } from './profile.js';
import { CYBORG_V2_ROUTES, rootRoutes } from './routes/index.js';

export function createCyborgApp(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    await next();
  });
  app.use(requestId());
  app.use(cyborgHttp.microversion());
  app.use(
    authenticate({
      strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
      tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
      publicPaths: /^\/?$|^\/v2\/?$/,
    }),
  );
  app.use(cyborgHttp.urlChecks());
  app.route('/', rootRoutes.app);
  for (const table of CYBORG_V2_ROUTES) app.route('/v2', table.app);
  app.notFound(cyborgHttp.notFound);
  app.onError(cyborgHttp.onError);
  return app;
}
