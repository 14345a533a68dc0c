// The HTTP edge's error: a status plus the detail each API renders in its
// envelope. Handlers and middleware throw it; the domain throws DomainError
// (src/errors.ts), which the kit's onError (kit.ts) maps through PROBLEM_STATUS.
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ErrorCode, type Problem } from '../errors.js';

export { ErrorCode } from '../errors.js';

/** How each API answers a domain error's kind of problem. */
export const PROBLEM_STATUS: Record<Problem, ContentfulStatusCode> = {
  invalid: 400,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
};

export class ApiError extends HTTPException {
  readonly detail: string;
  readonly code: ErrorCode;
  /** Extra members for the error object (406 negotiation adds min/max_version). */
  readonly extra: Record<string, string>;
  readonly headers: Record<string, string>;

  constructor(
    status: ContentfulStatusCode,
    detail: string,
    opts: { code?: ErrorCode; extra?: Record<string, string>; headers?: Record<string, string> } = {},
  ) {
    super(status, { message: detail });
    this.detail = detail;
    this.code = opts.code ?? ErrorCode.UNDEFINED;
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
  }
}

export const STATUS_TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Request Entity Too Large',
  414: 'Request-URI Too Long',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
};

/** webob's generic explanation: clients take the last line as the message. */
const EXPLANATIONS: Record<number, string> = {
  400: 'The server could not comply with the request since it is either malformed or otherwise incorrect.',
  401: 'This server could not verify that you are authorized to access the document you requested.',
  403: 'Access was denied to this resource.',
  404: 'The resource could not be found.',
  405: 'The method specified is not allowed for this resource.',
  406: 'The resource could not be generated that was acceptable to your browser (content of type application/json.',
  408: 'The server has waited too long for the request to be sent by the client.',
  409: 'There was a conflict when trying to complete your request.',
  413: 'The body of your request was too large for this server.',
  414: 'The request URI was too long for this server.',
  415: 'The request media type is not supported by this server.',
  500: 'The server has either erred or is incapable of performing the requested operation.',
  503: 'The server is currently unavailable. Please try again at a later time.',
};

export function webobDetail(status: number, message: string): string {
  const generic = EXPLANATIONS[status] ?? '';
  return `${generic}\n\n ${message}  `;
}

/** The message of a 500: internal text (SQL errors, stack traces) goes to the log under the request id, never to the client. */
export function internalErrorMessage(requestId: string | undefined): string {
  return `An unexpected error occurred; it is logged with request id ${requestId ?? 'unknown'}.`;
}

const MAX_DETAIL = 8 * 1024;

/** Error details never echo huge values back: anything past 8 KiB is cut. */
export function cutDetail(detail: string): string {
  return detail.length > MAX_DETAIL ? `${detail.slice(0, MAX_DETAIL)}... (cut, ${detail.length} characters)` : detail;
}

/** An error's stack and the chain of its causes, for the log (drizzle puts the SQLite message in `cause`). */
export function errorForLog(err: unknown): string {
  const parts: string[] = [];
  for (let cur: unknown = err, depth = 0; cur !== undefined && cur !== null && depth < 5; depth++) {
    parts.push(cur instanceof Error ? (cur.stack ?? cur.message) : String(cur));
    cur = cur instanceof Error ? cur.cause : undefined;
  }
  return parts.join('\ncaused by: ');
}
