// The HTTP kit both APIs are built with: microversion negotiation, URL
// checks, resource routing with 405 + Allow, policy checks and one onError /
// notFound that renders every kind of error. What differs between Placement
// and the accelerator (Cyborg) API (the service type and version range, the
// wording and envelope of errors, which policy applies) is an ApiProfile
// each API declares once (src/placement/http/profile.ts, src/cyborg/http/profile.ts).
import type { ErrorHandler, Handler, Hono, MiddlewareHandler, NotFoundHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { DomainError } from '../errors.js';
import { ApiError, type ErrorCode, errorForLog, internalErrorMessage, PROBLEM_STATUS } from './api-error.js';
import type { AppContext, AppEnv } from './env.js';
import { type NegotiationFailure, negotiate, requestedVersion } from './microversion.js';
import type { PolicyEnforcer, Target } from './policy.js';
import { codePointOfEscape, controlCharacterInUrl, MAX_URL_LENGTH } from './url.js';

export interface ErrorOptions {
  code?: ErrorCode;
  /** Extra members of the error object (Placement's 406 names min/max_version). */
  extra?: Record<string, string>;
  headers?: Record<string, string>;
}

/** How an API answers a microversion it cannot serve. */
export interface VersionRefusal {
  status: ContentfulStatusCode;
  message: string;
  extra?: Record<string, string>;
}

/** What differs between the APIs; everything else is the kit's. */
export interface ApiProfile {
  /** Names the API in the log line of an unexpected error. */
  logLabel: string;
  /** An error in this API's words (Placement prefixes webob's explanation, Cyborg sends the message as is). */
  error(status: ContentfulStatusCode, message: string, options?: ErrorOptions): ApiError;
  /** The response for an error, in this API's envelope. */
  render(c: AppContext, err: ApiError): Response;
  versions: {
    /** The service type in OpenStack-API-Version ("placement 1.39", "accelerator 2.3"). */
    serviceType: string;
    min: string;
    max: string;
    /** Cyborg still takes a bare "2.1" without the service type. */
    acceptBare: boolean;
    /** Headers on every answer, a refusal included (Cyborg names its range and Vary). */
    always: Record<string, string>;
    /** Headers on a negotiated answer besides OpenStack-API-Version. */
    negotiated: Record<string, string>;
    refuse(failure: NegotiationFailure): VersionRefusal;
  };
  policy: {
    /** The rules for this request (Placement's come with the deps: operators override them). */
    enforcer(c: AppContext): PolicyEnforcer;
    /** Upstream placement always enforces scope: its rules are project-scoped, a system-scoped token is refused. */
    refuseSystemScope: boolean;
    denied(rule: string): string;
  };
}

type MethodName = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * SQLite's limits on one statement (bound values, expression depth, text
 * size), met by a body within the size limit that names tens of thousands of
 * items (aggregates, traits, providers of one allocation). The statement
 * fails before anything is written, and the batch it is in rolls back.
 */
const DATABASE_LIMITS = /too many SQL variables|Expression tree is too large|string or blob too big|too many terms in compound SELECT/;

/**
 * A full disk under the database (SQLITE_FULL): the write rolled back, reads
 * still work; the store logs the episode once (src/db/storage-full.ts).
 */
const STORAGE_FULL = /database or disk is full|SQLITE_FULL|ENOSPC|no space left on device/i;
const STORAGE_FULL_MESSAGE =
  "The service's database disk is full, so the change was not made; writes resume once space is freed (reads still work). Try again later.";

const TOO_MANY_ITEMS = 'The request names more items than can be applied at once; send them in several smaller requests.';

function storageFull(err: unknown): boolean {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    if (STORAGE_FULL.test(`${(cur as { code?: unknown }).code ?? ''} ${cur.message}`)) return true;
  }
  return false;
}

/**
 * A database call given up at its deadline (src/db/deadline.ts, which names
 * the database and says what is known of a write in its message): told by
 * its code, since the kit imports nothing of the db layer.
 */
interface DatabaseSilence {
  message: string;
  operation: string;
  outcome: string;
}

function databaseSilence(err: unknown): DatabaseSilence | null {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    const { code, operation, outcome } = cur as { code?: unknown; operation?: unknown; outcome?: unknown };
    if (code === 'PLACEMENT_DB_TIMEOUT' && typeof operation === 'string' && typeof outcome === 'string')
      return { message: cur.message, operation, outcome };
  }
  return null;
}

/** The database limit an error (or one of its causes) reports, or null. */
function databaseLimitReached(err: unknown): string | null {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    const found = DATABASE_LIMITS.exec(cur.message)?.[0];
    if (found) return found;
  }
  return null;
}

export interface HttpKit {
  readonly api: ApiProfile;
  /** Negotiates OpenStack-API-Version into `c.get('mv')` and names the version on the answer. */
  microversion(): MiddlewareHandler<AppEnv>;
  /** 414 for an overlong URL, 400 for a percent-encoded control character. */
  urlChecks(): MiddlewareHandler<AppEnv>;
  /** Registers the verbs of one path and a 405 with Allow for every other method, as placement's route table. */
  resource(app: Hono<AppEnv>, path: string, handlers: Partial<Record<MethodName, Handler<AppEnv>>>): void;
  /** 403 unless the caller passes `rule`; the default target is the caller's own project and user. */
  authorize(c: AppContext, rule: string, target?: Target): void;
  /** A route that does not exist below microversion `since` answers 404 (or 405), as placement's version_handler does. */
  requireVersion(c: AppContext, since: string, status?: 404 | 405): void;
  onError: ErrorHandler<AppEnv>;
  notFound: NotFoundHandler<AppEnv>;
}

export function httpKit(api: ApiProfile): HttpKit {
  const { versions } = api;

  function askedVersion(header: string | undefined): string | undefined {
    const named = requestedVersion(header, versions.serviceType);
    if (named !== undefined || !versions.acceptBare) return named;
    const bare = header?.trim();
    return bare && /^[\d.]+$/.test(bare) ? bare : undefined;
  }

  // Named on every negotiated answer, errors included.
  const answerHeaders = Object.entries({ ...versions.always, ...versions.negotiated });

  // A client sends the same header on every request: its negotiation (and the
  // header value answered) is worked out once per distinct value, for a bounded
  // number of values, instead of split, matched and parsed per request.
  const negotiated = new Map<string, { result: ReturnType<typeof negotiate>; answered: string }>();
  function negotiation(header: string | undefined) {
    const key = header ?? '';
    let found = negotiated.get(key);
    if (found === undefined) {
      const result = negotiate(askedVersion(header), versions.min, versions.max);
      found = { result, answered: result.ok ? `${versions.serviceType} ${result.version.toString()}` : '' };
      if (negotiated.size < 64) negotiated.set(key, found);
    }
    return found;
  }

  return {
    api,

    microversion: () =>
      createMiddleware<AppEnv>(async function microversionMiddleware(c, next) {
        const { result, answered } = negotiation(c.req.header('openstack-api-version'));
        if (!result.ok) {
          const refusal = versions.refuse(result);
          throw api.error(refusal.status, refusal.message, { extra: refusal.extra, headers: versions.always });
        }
        c.set('mv', result.version);
        try {
          await next();
        } finally {
          // On the response's own headers: c.header() on a finished response
          // copies its body through a stream (cost: docs/performance.md#figures-behind-the-code).
          const headers = c.res.headers;
          for (const [name, value] of answerHeaders) headers.set(name, value);
          headers.set('openstack-api-version', answered);
        }
      }),

    urlChecks: () =>
      createMiddleware<AppEnv>(async function urlChecksMiddleware(c, next) {
        const url = c.req.url;
        if (url.length > MAX_URL_LENGTH) throw api.error(414, `The request URL is longer than ${MAX_URL_LENGTH} characters.`);
        const escaped = controlCharacterInUrl(url);
        if (escaped) {
          throw api.error(
            400,
            `The request URL contains the control character ${codePointOfEscape(escaped)} (${escaped}); control characters are not allowed.`,
          );
        }
        return next();
      }),

    resource(app, path, handlers) {
      const allowed = Object.keys(handlers) as MethodName[];
      for (const method of allowed) app.on(method, path, handlers[method]!);
      app.all(path, (c) => {
        throw api.error(405, `The method ${c.req.method} is not allowed for this resource.`, { headers: { allow: allowed.join(', ') } });
      });
    },

    authorize(c, rule, target) {
      const creds = c.get('credentials');
      const inScope = !(api.policy.refuseSystemScope && creds.systemScope);
      const allowed =
        inScope && api.policy.enforcer(c).enforce(rule, creds, target ?? { project_id: creds.projectId, user_id: creds.userId });
      if (!allowed) throw api.error(403, api.policy.denied(rule));
    },

    requireVersion(c, since, status = 404) {
      if (c.get('mv').atLeast(since)) return;
      if (status === 405) throw api.error(405, `The method ${c.req.method} is not allowed for this resource.`);
      throw api.error(404, 'The resource could not be found.');
    },

    onError(err, c) {
      if (err instanceof ApiError || err instanceof DomainError) {
        const apiError = err instanceof ApiError ? err : api.error(PROBLEM_STATUS[err.problem], err.message, { code: err.code });
        // Write conflicts, by error code: a stale generation, retries exhausted, something in use.
        if (apiError.status === 409) c.get('deps').metrics.writeConflicts.inc([apiError.code]);
        return api.render(c, apiError);
      }
      if (err instanceof HTTPException) return api.render(c, api.error(err.status as ContentfulStatusCode, err.message));
      const requestId = c.get('requestId');
      if (storageFull(err)) return api.render(c, api.error(503, STORAGE_FULL_MESSAGE, { headers: { 'retry-after': '60' } }));
      const silence = databaseSilence(err);
      if (silence) {
        c.get('deps').metrics.databaseDeadlines.inc([silence.operation, silence.outcome]);
        c.get('deps').log.warn(`${api.logLabel}: the database did not answer in time`, { requestId, ...silence });
        return api.render(c, api.error(503, silence.message));
      }
      const limit = databaseLimitReached(err);
      if (limit) {
        c.get('deps').log.warn(`${api.logLabel}: a database limit refused the request`, { requestId, limit });
        return api.render(c, api.error(413, TOO_MANY_ITEMS));
      }
      c.get('deps').log.error(api.logLabel, { requestId, err: errorForLog(err) });
      return api.render(c, api.error(500, internalErrorMessage(requestId)));
    },

    notFound: (c) => api.render(c, api.error(404, 'The resource could not be found.')),
  };
}
