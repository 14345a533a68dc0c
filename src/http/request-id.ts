// x-openstack-request-id: a fresh local id on every response, errors included.
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from './env.js';

export function requestId() {
  return createMiddleware<AppEnv>(async function requestIdMiddleware(c, next) {
    const id = `req-${crypto.randomUUID()}`;
    c.set('requestId', id);
    await next();
    c.res.headers.set('x-openstack-request-id', id);
  });
}
