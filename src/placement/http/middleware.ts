// Placement-wide request handling: the checks placement runs before routing
// (content-length/content-type, Accept) and the helpers handlers use for
// cache headers and microversion checks (a route's own minimum microversion,
// its `since`, is enforced by the route table). Routing with 405 + Allow, policy checks,
// negotiation and error rendering are the HTTP kit's (src/http/kit.ts).
import { createMiddleware } from 'hono/factory';
import { matchedRoutes } from 'hono/route';
import { acceptsJson } from '../../http/accept.js';
import type { AppContext, AppEnv } from '../../http/env.js';
import { placementError } from './render-errors.js';
import { newest } from '../present/timestamps.js';
import { MV, type Feature } from '../versions.js';

export { authorize } from './profile.js';
export { newest };

/** Before routing, as upstream's wsgi filters: content-length must be an integer, a body needs a content type. */
export function placementContentChecks() {
  return createMiddleware<AppEnv>(async function placementContentChecksMiddleware(c, next) {
    const length = c.req.header('content-length');
    if (length !== undefined) {
      if (!/^\s*\d+\s*$/.test(length)) throw placementError(400, 'content-length header must be an integer');
      if (Number(length) > 0 && !c.req.header('content-type')) {
        throw placementError(400, 'content-type header required when content-length > 0');
      }
    }
    return next();
  });
}

/**
 * Like upstream's check_accept decorator: only routes that exist refuse a
 * non-JSON Accept (406); an unknown URL stays a 404.
 */
export function placementAcceptCheck() {
  return createMiddleware<AppEnv>(async function placementAcceptCheckMiddleware(c, next) {
    if (c.req.method !== 'GET' || acceptsJson(c.req.header('accept'))) return next();
    const routed = matchedRoutes(c).some((r) => r.path !== '/*' && r.path !== '*');
    if (routed) throw placementError(406, 'Only application/json is provided');
    return next();
  });
}

export function atLeast(c: AppContext, feature: Feature): boolean {
  return c.get('mv').atLeast(MV[feature]);
}

/** last-modified / cache-control from 1.15. `when` is the newest timestamp involved, or now. */
export function setCacheHeaders(c: AppContext, when?: string | Date | null): void {
  if (!atLeast(c, 'LAST_MODIFIED')) return;
  const date = when ? new Date(when) : c.get('deps').clock();
  const valid = Number.isNaN(date.getTime()) ? c.get('deps').clock() : date;
  c.header('last-modified', valid.toUTCString());
  c.header('cache-control', 'no-cache');
}
