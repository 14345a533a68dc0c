// x-openstack-request-id: a fresh local id on every response, errors included.
// Under the root app the id is the request trace's (so the access line names
// it too), and the trace learns the caller.
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from './env.js';
import type { RequestTrace } from './trace.js';

export function requestId() {
  return createMiddleware<AppEnv>(async function requestIdMiddleware(c, next) {
    // Absent only where an API is served without the root app around it.
    const trace: RequestTrace | undefined = c.get('trace');
    const id = trace?.requestId ?? `req-${crypto.randomUUID()}`;
    c.set('requestId', id);
    await next();
    c.res.headers.set('x-openstack-request-id', id);
    if (trace) {
      const credentials = c.get('credentials');
      trace.userId = credentials?.userId ?? null;
      trace.projectId = credentials?.projectId ?? null;
    }
  });
}
