// What one request leaves for its access line and its metrics: the root app
// starts a trace (src/http/observe.ts), and the API app that serves the
// request (Placement, Cyborg, the dashboard) fills in its ids, the route
// template it matched and the caller. Sub-apps are mounted with a request of
// their own, so the trace is found by request object and carried across the
// mount (carryTrace).

export interface RequestTrace {
  /** This service's id for the request (req-<uuid>), sent back as x-openstack-request-id. */
  requestId: string;
  /** The caller's own x-openstack-request-id, when it was a valid req-<uuid> (oslo's global_request_id). */
  globalRequestId: string | null;
  /** The path the app the request was mounted on strips ('/accelerator'), '' at the root. */
  prefix: string;
  /** The route template the serving app matched, in its own paths; null when none did (404). */
  route: string | null;
  userId: string | null;
  projectId: string | null;
}

const traces = new WeakMap<Request, RequestTrace>();

/** oslo.middleware's check of an inbound request id (request_id.py: ID_FORMAT). */
const GLOBAL_REQUEST_ID = /^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;

export function validGlobalRequestId(header: string | null | undefined): string | null {
  return header && GLOBAL_REQUEST_ID.test(header) ? header : null;
}

export function startTrace(request: Request): RequestTrace {
  const trace: RequestTrace = {
    requestId: `req-${crypto.randomUUID()}`,
    globalRequestId: validGlobalRequestId(request.headers.get('x-openstack-request-id')),
    prefix: '',
    route: null,
    userId: null,
    projectId: null,
  };
  traces.set(request, trace);
  return trace;
}

export const traceOf = (request: Request): RequestTrace | undefined => traces.get(request);

/** The trace of `from` is also `to`'s, the request a sub-app mounted at `prefix` sees. */
export function carryTrace(from: Request, to: Request, prefix: string): void {
  const trace = traces.get(from);
  if (!trace) return;
  trace.prefix = prefix;
  traces.set(to, trace);
}
