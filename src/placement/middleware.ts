// Placement-wide request handling: microversion negotiation, the checks
// placement runs before routing (content-length/content-type, Accept), and
// the helpers handlers use for policy, cache headers and version gates.
import type { Hono, Handler } from 'hono';
import { createMiddleware } from 'hono/factory';
import { matchedRoutes } from 'hono/route';
import { ApiError, webobDetail } from '../http/api-error.js';
import type { AppContext, AppEnv } from '../http/env.js';
import { negotiate, requestedVersion } from '../http/microversion.js';
import type { Target } from '../http/policy.js';
import { codePointOfEscape, controlCharacterInUrl, MAX_URL_LENGTH } from '../http/url.js';
import { MAX_VERSION, MIN_VERSION, MV, type Feature } from './versions.js';
import { newest } from './present/timestamps.js';

export { newest };

export function placementMicroversion() {
  return createMiddleware<AppEnv>(async function placementMicroversionMiddleware(c, next) {
    const asked = requestedVersion(c.req.header('openstack-api-version'), 'placement');
    const result = negotiate(asked, MIN_VERSION, MAX_VERSION);
    if (!result.ok) {
      if (result.reason === 'syntax') {
        throw new ApiError(400, webobDetail(400, `Invalid microversion: invalid version string: ${result.value}`));
      }
      throw new ApiError(406, webobDetail(406, `Invalid microversion: Unacceptable version header: ${result.value}`), {
        extra: { max_version: MAX_VERSION, min_version: MIN_VERSION },
      });
    }
    c.set('mv', result.version);
    try {
      await next();
    } finally {
      c.res.headers.set('openstack-api-version', `placement ${result.version.toString()}`);
      c.res.headers.set('vary', 'openstack-api-version');
    }
  });
}

/** Accept negotiation with q-values and wildcards, as webob's acceptable_offers. */
export function acceptsJson(accept: string | undefined): boolean {
  if (!accept || !accept.trim()) return true;
  return accept.split(',').some((part) => {
    const [range, ...params] = part
      .trim()
      .split(';')
      .map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    if (q && Number(q.slice(2)) === 0) return false;
    const r = (range ?? '').toLowerCase();
    return r === '*/*' || r === 'application/*' || r === 'application/json';
  });
}

export function placementRequestChecks() {
  return createMiddleware<AppEnv>(async function placementRequestChecksMiddleware(c, next) {
    const length = c.req.header('content-length');
    if (length !== undefined) {
      if (!/^\s*\d+\s*$/.test(length)) {
        throw new ApiError(400, webobDetail(400, 'content-length header must be an integer'));
      }
      if (Number(length) > 0 && !c.req.header('content-type')) {
        throw new ApiError(400, webobDetail(400, 'content-type header required when content-length > 0'));
      }
    }
    const url = c.req.url;
    if (url.length > MAX_URL_LENGTH) {
      throw new ApiError(414, webobDetail(414, `The request URL is longer than ${MAX_URL_LENGTH} characters.`));
    }
    const escaped = controlCharacterInUrl(url);
    if (escaped) {
      throw new ApiError(
        400,
        webobDetail(
          400,
          `The request URL contains the control character ${codePointOfEscape(escaped)} (${escaped}); control characters are not allowed.`,
        ),
      );
    }
    // Like upstream's check_accept decorator, only routes that exist refuse a
    // non-JSON Accept; an unknown URL stays a 404.
    const routed = matchedRoutes(c).some((r) => r.path !== '/*' && r.path !== '*');
    if (routed && c.req.method === 'GET' && !acceptsJson(c.req.header('accept'))) {
      throw new ApiError(406, webobDetail(406, 'Only application/json is provided'));
    }
    return next();
  });
}

/** 403 unless the caller passes `rule`. The default target is the caller's own project/user. */
export function authorize(c: AppContext, rule: string, target?: Target): void {
  const creds = c.var.credentials;
  const { policy } = c.var.deps;
  // Every placement rule is project-scoped: a system-scoped token is refused
  // (oslo.policy is retiring enforce_scope=False; upstream tests expect 403).
  const allowed = !creds.systemScope && policy.enforce(rule, creds, target ?? { project_id: creds.projectId, user_id: creds.userId });
  if (!allowed) {
    throw new ApiError(403, webobDetail(403, `Policy does not allow ${rule} to be performed.`));
  }
}

export function atLeast(c: AppContext, feature: Feature): boolean {
  return c.var.mv.atLeast(MV[feature]);
}

/** Routes that do not exist below a microversion answer 404 (or 405), as version_handler does. */
export function requireVersion(c: AppContext, feature: Feature, status: 404 | 405 = 404): void {
  if (!atLeast(c, feature)) {
    if (status === 405) {
      throw new ApiError(405, webobDetail(405, `The method ${c.req.method} is not allowed for this resource.`));
    }
    throw new ApiError(404, webobDetail(404, 'The resource could not be found.'));
  }
}

/** last-modified / cache-control from 1.15. `when` is the newest timestamp involved, or now. */
export function setCacheHeaders(c: AppContext, when?: string | Date | null): void {
  if (!atLeast(c, 'LAST_MODIFIED')) return;
  const date = when ? new Date(when) : c.var.deps.clock();
  const valid = Number.isNaN(date.getTime()) ? c.var.deps.clock() : date;
  c.header('last-modified', valid.toUTCString());
  c.header('cache-control', 'no-cache');
}

type MethodName = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH';

/**
 * Registers the handlers of one path and a 405 (with Allow) for every other
 * method, like placement's route table. Keeps the path's verbs in one place.
 */
export function resource(app: Hono<AppEnv>, path: string, handlers: Partial<Record<MethodName, Handler<AppEnv>>>): void {
  const allowed = Object.keys(handlers) as MethodName[];
  for (const method of allowed) app.on(method, path, handlers[method]!);
  app.all(path, (c) => {
    throw new ApiError(405, webobDetail(405, `The method ${c.req.method} is not allowed for this resource.`), {
      headers: { allow: allowed.join(', ') },
    });
  });
}

/** A path parameter of the matched route (resource() loses Hono's path typing). */
export function pathParam(c: AppContext, name: string): string {
  return c.req.param(name) ?? '';
}
