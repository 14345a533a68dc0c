// The root app's first middleware: every request, whichever API serves it,
// is counted in the HTTP metrics (OpenTelemetry's http.server.* names) and
// gets one JSON access line: its ids (the caller's x-openstack-request-id as
// global_request_id, as oslo keeps it), method, route template, status,
// duration, bytes and caller.
//
// In Node the line is written once the response has gone out (so duration
// and bytes are the client's); elsewhere when the app has answered, with
// bytes from content-length or, failing that, from a copy of the body read
// in the background.
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { Deps } from '../deps.js';
import type { AppEnv } from './env.js';
import { startTrace } from './trace.js';

/** HTTP methods kept as they are in http_request_method; any other is "_OTHER" (OpenTelemetry's rule, so labels stay bounded). */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
export const methodLabel = (method: string): string => (KNOWN_METHODS.has(method) ? method : '_OTHER');

const LEVELS = ['debug', 'info', 'warn', 'error', 'silent'];

const templates = new Map<string, string>();

/** A route as OpenStack's API references write it: '/resource_providers/{uuid}' for Hono's '/resource_providers/:uuid'. */
export function routeLabel(path: string): string {
  let label = templates.get(path);
  if (label === undefined) {
    label = path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?\??/g, '{$1}');
    if (label.length > 1 && label.endsWith('/')) label = label.slice(0, -1);
    if (templates.size < 1000) templates.set(path, label);
  }
  return label;
}

/** The bits of Node's http.ServerResponse read here (@hono/node-server passes it as env.outgoing). */
interface NodeOutgoing {
  once(event: 'close', listener: () => void): unknown;
  getHeader(name: string): number | string | string[] | undefined;
  readonly writableFinished: boolean;
  /** Set when @hono/node-server lets Node write the length itself. */
  readonly _contentLength?: number | null;
}

function nodeOutgoing(env: unknown): NodeOutgoing | undefined {
  const outgoing = (env as { outgoing?: unknown } | undefined)?.outgoing;
  return outgoing && typeof (outgoing as NodeOutgoing).once === 'function' && typeof (outgoing as NodeOutgoing).getHeader === 'function'
    ? (outgoing as NodeOutgoing)
    : undefined;
}

const lengthOf = (value: unknown): number | null => {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  return Number.isFinite(n) && n >= 0 ? n : null;
};

/** The route template matched: the last route matched that is not a middleware's wildcard (the endpoint, even when a check refused the request). */
function routeOf(c: Context): string | null {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i -= 1) {
    const path = routes[i]!.path;
    if (!path.endsWith('*')) return routeLabel(path);
  }
  return null;
}

export function observeRequests(deps: Deps): MiddlewareHandler<AppEnv> {
  const { metrics, log } = deps;
  const level = deps.config.PLACEMENT_ACCESS_LOG;
  // Nothing is built for a line LOG_LEVEL would drop (and no body is copied to count its bytes).
  const shown = level !== 'off' && LEVELS.indexOf(level) >= LEVELS.indexOf(deps.config.LOG_LEVEL);
  const writeLine = !shown ? null : level === 'debug' ? log.debug : log.info;
  const excluded = new Set(deps.config.PLACEMENT_ACCESS_LOG_EXCLUDE);
  return async function observeRequestsMiddleware(c, next) {
    const write = excluded.has(c.req.path) ? null : writeLine;
    const started = performance.now();
    const trace = startTrace(c.req.raw);
    c.set('trace', trace);
    const method = methodLabel(c.req.method);
    const active = metrics.httpActive.labels(method);
    active.inc();
    try {
      await next();
    } catch (err) {
      active.dec();
      throw err;
    }
    const res = c.res;
    let seconds = 0;
    let route: string | null = null;
    const record = () => {
      active.dec();
      seconds = (performance.now() - started) / 1000;
      route = routeOf(c);
      metrics.httpDuration.labels(method, route ?? '', String(res.status)).observe(seconds);
    };
    const logLine = (bytes: number | null, aborted: boolean) =>
      write?.('request', {
        request_id: trace.requestId,
        global_request_id: trace.globalRequestId,
        method: c.req.method,
        route,
        path: c.req.path,
        status: res.status,
        duration_ms: Math.round(seconds * 1e6) / 1e3,
        bytes,
        user_id: trace.userId,
        project_id: trace.projectId,
        microversion: res.headers.get('openstack-api-version'),
        ...(aborted ? { aborted: true } : {}),
      });
    const outgoing = nodeOutgoing(c.env);
    if (outgoing) {
      outgoing.once('close', () => {
        record();
        logLine(lengthOf(outgoing.getHeader('content-length')) ?? lengthOf(outgoing._contentLength), !outgoing.writableFinished);
      });
      return;
    }
    record();
    const declared = lengthOf(res.headers.get('content-length'));
    if (declared !== null || res.body === null || !write) {
      logLine(declared ?? (res.body === null ? 0 : null), false);
      return;
    }
    // No length known (a Worker's c.json()): count a copy of the body while the original goes out.
    const counted = res
      .clone()
      .arrayBuffer()
      .then(
        (body) => logLine(body.byteLength, false),
        () => logLine(null, true),
      );
    try {
      c.executionCtx.waitUntil(counted);
    } catch {
      // No ExecutionContext (app.request() in tests): the promise finishes on its own.
    }
  };
}
