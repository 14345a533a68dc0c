// The accelerator app with the frozen pre-issue-13 Cyborg write path: the
// same middleware as src/cyborg/http/app.ts, the old routes, repos, bind job and
// outbox (interactive write transactions). `oldCyborgJobs` and `consumeOld`
// are the job side of the same copy, for a test to run the old bind job.
import { Hono } from 'hono';
import type { Deps } from '../../../src/deps.js';
import { authenticate, parseTokenTable } from '../../../src/http/auth.js';
import type { AppEnv } from '../../../src/http/env.js';
import { requestId } from '../../../src/http/request-id.js';
import { cyborgHttp } from '../../../src/cyborg/http/profile.js';
import { rootRoutes } from '../../../src/cyborg/http/routes/root.js';
import { agentRoutes } from './routes/agent.js';
import { attributeRoutes } from './routes/attributes.js';
import { arqRoutes } from './routes/arqs.js';
import { deviceProfileRoutes } from './routes/device-profiles.js';
import { deviceRoutes } from './routes/devices.js';

export { cyborgJobs as oldCyborgJobs } from './jobs.js';
export { consume as consumeOld } from './jobs/consume.js';
export { runSweeps as runSweepsOld } from './jobs/sweeps.js';

/**
 * Serves /v2/... (no /accelerator prefix), as src/cyborg/http/app.ts does behind its
 * mount, with the live HTTP kit (middleware, errors) and the old routes.
 */
export function createOldCyborgApp(deps: Deps): Hono<AppEnv> {
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
  app.route('/v2', deviceProfileRoutes);
  app.route('/v2', arqRoutes);
  app.route('/v2', deviceRoutes);
  app.route('/v2', attributeRoutes);
  app.route('/v2', agentRoutes);
  app.notFound(cyborgHttp.notFound);
  app.onError(cyborgHttp.onError);
  return app;
}
