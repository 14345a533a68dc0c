// createApp(deps): the one app both runtimes serve, one Hono tree. Each API
// is a branch composed with route(): its own middleware stack and its own
// onError (so its own error envelope), at the paths src/openapi/mounts.ts
// states once. The accelerator (Cyborg) API lives under /accelerator, the
// capacity dashboard under /dashboard; Placement's stack serves everything
// else, /diagnostics and /ext included, and is joined last: its middleware
// matches every path, so the other branches must have answered before it.
import { Hono, type MiddlewareHandler } from 'hono';
import type { Deps } from './deps.js';
import { createCyborgApp } from './cyborg/http/app.js';
import { createDashboardApp } from './dashboard/app.js';
import type { AppEnv } from './http/env.js';
import { observeRequests } from './http/observe.js';
import { createOperatorApp } from './observability/http/routes/index.js';
import { mountsWith, type Mount, type Stack } from './openapi/mounts.js';
import { createPlacementApp } from './placement/http/app.js';

/** Each stack around its routes, given at their full paths; `roots`: the prefixes of its mounts, its own root first. */
const STACKS: Record<Stack, (deps: Deps, routes: Hono<AppEnv>, roots: readonly string[]) => Hono<AppEnv>> = {
  none: (_deps, routes) => routes,
  operator: (deps, routes) => createOperatorApp(deps, routes),
  accelerator: (deps, routes, roots) => createCyborgApp(deps, routes, roots[0]!),
  dashboard: (deps, routes, roots) => createDashboardApp(deps, routes, roots[0]!),
  placement: (deps, routes, roots) => createPlacementApp(deps, routes, roots),
};

/** The order the branches join the tree: Placement's, whose middleware matches every path, last. */
const JOIN_ORDER: readonly Stack[] = ['operator', 'none', 'accelerator', 'dashboard', 'placement'];

/**
 * A mount's tables at their full paths. A table's root ('/') answers at the
 * prefix with and without a trailing slash (`/accelerator`, `/accelerator/`),
 * as it did when each API was an app of its own.
 */
function routesOf(mounts: readonly Mount[]): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  for (const { prefix, tables } of mounts) {
    for (const table of tables) {
      routes.route(prefix || '/', table.app);
      if (!prefix) continue;
      const root = new Hono<AppEnv>();
      for (const r of table.app.routes) if (r.path === '/') root.on(r.method, '/', r.handler);
      if (root.routes.length) routes.route(`${prefix}/`, root);
    }
  }
  return routes;
}

export function createApp(deps: Deps): Hono<AppEnv> {
  const root = new Hono<AppEnv>();
  root.use(observeRequests(deps));
  root.use(async function injectDeps(c, next) {
    c.set('deps', deps);
    await next();
  } satisfies MiddlewareHandler<AppEnv>);
  // The extensions' routes are this app's own (an app built without one does not serve it).
  const everyMount = mountsWith(deps.extensions.list);
  for (const stack of JOIN_ORDER) {
    const mounts = everyMount.filter((m) => m.stack === stack);
    root.route(
      '/',
      STACKS[stack](
        deps,
        routesOf(mounts),
        mounts.map((m) => m.prefix),
      ),
    );
  }
  return root;
}
