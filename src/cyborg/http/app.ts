// The Cyborg v2 (accelerator) API's middleware stack, around its routes
// (src/app.ts hands them over at their paths below `root`, /accelerator).
// Middleware order: request id, microversion (406 as Cyborg), auth, URL checks.
import { Hono } from 'hono';
import type { Deps } from '../../deps.js';
import { authenticate, parseTokenTable } from '../../http/auth.js';
import type { AppEnv } from '../../http/env.js';
import { requestId } from '../../http/request-id.js';
import { cyborgHttp } from './profile.js';

export function createCyborgApp(deps: Deps, routes: Hono<AppEnv>, root: string): Hono<AppEnv> {
  const below = `${root}/*`;
  const app = new Hono<AppEnv>();
  app.use(below, requestId());
  app.use(below, cyborgHttp.microversion());
  app.use(
    below,
    authenticate({
      strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
      tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
      // The version documents.
      publicPaths: new RegExp(`^${root}(/v2)?/?$`),
    }),
  );
  app.use(below, cyborgHttp.urlChecks());
  app.route('/', routes);
  app.all(below, cyborgHttp.notFound);
  app.onError(cyborgHttp.onError);
  return app;
}
