// What one request leaves for its access line and its metrics: the root app
// starts a trace (src/http/observe.ts) and keeps it on the request's context
// (`c.get('trace')`); the API that serves the request fills in the caller
// (src/http/request-id.ts). Every API is a branch of the one app, so the
// context is the same from the first middleware to the last.

export interface RequestTrace {
  /** This service's id for the request (req-<uuid>), sent back as x-openstack-request-id. */
  requestId: string;
  /** The caller's own x-openstack-request-id, when it was a valid req-<uuid> (oslo's global_request_id). */
  globalRequestId: string | null;
  userId: string | null;
  projectId: string | null;
}

/** oslo.middleware's check of an inbound request id (request_id.py: ID_FORMAT). */
const GLOBAL_REQUEST_ID = /^req-[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}$/;

export function validGlobalRequestId(header: string | null | undefined): string | null {
  return header && GLOBAL_REQUEST_ID.test(header) ? header : null;
}

export function startTrace(request: Request): RequestTrace {
  return {
    requestId: `req-${crypto.randomUUID()}`,
    globalRequestId: validGlobalRequestId(request.headers.get('x-openstack-request-id')),
    userId: null,
    projectId: null,
  };
}
