// The Cyborg v2 (accelerator) API as one Hono app, mounted at /accelerator.
// Middleware order: deps, request id, microversion (406 as Cyborg), auth, URL checks.
import { Hono } from 'hono';
import type { Deps } from '../../deps.js';
import { authenticate, parseTokenTable } from '../../http/auth.js';
import type { AppEnv } from '../../http/env.js';
import { requestId } from '../../http/request-id.js';
import { cyborgHttp } from './profile.js';
import { agentRoutes } from './routes/agent.js';
import { attributeRoutes } from './routes/attributes.js';
import { arqRoutes } from './routes/arqs.js';
import { deviceProfileRoutes } from './routes/device-profiles.js';
import { deviceRoutes } from './routes/devices.js';
import { rootRoutes } from './routes/root.js';

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
  app.route('/', rootRoutes);
  app.route('/v2', deviceProfileRoutes);
  app.route('/v2', arqRoutes);
  app.route('/v2', deviceRoutes);
  app.route('/v2', attributeRoutes);
  app.route('/v2', agentRoutes);
  app.notFound(cyborgHttp.notFound);
  app.onError(cyborgHttp.onError);
  return app;
}
