// The Placement app with the frozen pre-issue-13 write routes mounted in front
// of the live ones: the write endpoints they define answer from the old code,
// everything else (reads, other resources) from the live routes.
import { Hono } from 'hono';
import type { Deps } from '../../../src/deps.js';
import { authenticate, parseTokenTable } from '../../../src/http/auth.js';
import type { AppEnv } from '../../../src/http/env.js';
import { requestId } from '../../../src/http/request-id.js';
import { placementHttp } from '../../../src/placement/http/profile.js';
import { placementAcceptCheck, placementContentChecks } from '../../../src/placement/http/middleware.js';
import { placementRoutes } from '../../../src/placement/http/routes/index.js';
import { aggregateRoutes } from './routes/aggregates.js';
import { allocationRoutes } from './routes/allocations.js';
import { inventoryRoutes } from './routes/inventories.js';
import { reshaperRoutes } from './routes/reshaper.js';
import { resourceClassRoutes } from './routes/resource-classes.js';
import { resourceProviderRoutes } from './routes/resource-providers.js';
import { traitRoutes } from './routes/traits.js';

export function createOldWritePathApp(deps: Deps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    await next();
  });
  app.use(requestId());
  app.use(placementHttp.microversion());
  app.use(authenticate({
    strategy: deps.config.PLACEMENT_AUTH_STRATEGY,
    tokens: parseTokenTable(deps.config.PLACEMENT_AUTH_TOKENS),
    publicPaths: /^\/?$/,
  }));
  app.use(placementContentChecks());
  app.use(placementHttp.urlChecks());
  app.use(placementAcceptCheck());
  app.route('/', aggregateRoutes);
  app.route('/', allocationRoutes);
  app.route('/', inventoryRoutes);
  app.route('/', reshaperRoutes);
  app.route('/', resourceClassRoutes);
  app.route('/', resourceProviderRoutes);
  app.route('/', traitRoutes);
  app.route('/', placementRoutes);
  app.notFound(placementHttp.notFound);
  app.onError(placementHttp.onError);
  return app;
}
