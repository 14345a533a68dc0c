// CORS as oslo.middleware's CORS filter does it: a preflight from any origin
// is answered 200 by the middleware itself; only allowed origins (and
// allowed request headers) get the access-control-* headers back.
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from './env.js';

export interface CorsOptions {
  allowedOrigins: string[];
  allowHeaders: string[];
  allowMethods?: string[];
  exposeHeaders?: string[];
  maxAge?: number;
}

export function corsFilter(opts: CorsOptions) {
  const allowHeaders = opts.allowHeaders.map((h) => h.toLowerCase());
  const methods = opts.allowMethods ?? ['GET', 'PUT', 'POST', 'DELETE', 'PATCH'];
  return createMiddleware<AppEnv>(async function corsMiddleware(c, next) {
    const origin = c.req.header('origin');
    const requestedMethod = c.req.header('access-control-request-method');
    if (c.req.method === 'OPTIONS' && origin && requestedMethod) {
      const headers = new Headers({ vary: 'Origin' });
      const requestedHeaders = (c.req.header('access-control-request-headers') ?? '')
        .split(',')
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean);
      const ok =
        opts.allowedOrigins.includes(origin) &&
        methods.includes(requestedMethod.toUpperCase()) &&
        requestedHeaders.every((h) => allowHeaders.includes(h));
      if (ok) {
        headers.set('access-control-allow-origin', origin);
        headers.set('access-control-allow-methods', requestedMethod.toUpperCase());
        if (requestedHeaders.length) headers.set('access-control-allow-headers', requestedHeaders.join(','));
        if (opts.maxAge) headers.set('access-control-max-age', String(opts.maxAge));
      }
      return new Response(null, { status: 200, headers });
    }
    await next();
    if (origin && opts.allowedOrigins.includes(origin)) {
      c.res.headers.set('access-control-allow-origin', origin);
      c.res.headers.append('vary', 'Origin');
      if (opts.exposeHeaders?.length) c.res.headers.set('access-control-expose-headers', opts.exposeHeaders.join(','));
    }
  });
}
