// x-openstack-request-id: a fresh local id on every response, errors included.
// Under the root app the id is the request trace's (so the access line names
// it too), and the trace learns the route template matched and the caller.
import { createMiddleware } from 'hono/factory';
import { matchedRoutes } from 'hono/route';
import type { AppContext, AppEnv } from './env.js';
import { traceOf } from './trace.js';

export function requestId() {
  return createMiddleware<AppEnv>(async function requestIdMiddleware(c, next) {
    const trace = traceOf(c.req.raw);
    const id = trace?.requestId ?? `req-${crypto.randomUUID()}`;
    c.set('requestId', id);
    await next();
    c.res.headers.set('x-openstack-request-id', id);
    if (trace) {
      trace.route = routeTemplate(c);
      const credentials = c.get('credentials');
      trace.userId = credentials?.userId ?? null;
      trace.projectId = credentials?.projectId ?? null;
    }
  });
}

/** The path of the last route matched that is not a middleware's wildcard: the endpoint, even when a check refused the request. */
function routeTemplate(c: AppContext): string | null {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i -= 1) {
    const path = routes[i]!.path;
    if (!path.endsWith('*')) return path;
  }
  return null;
}
