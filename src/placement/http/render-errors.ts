// Placement's error wording and envelope:
// {"errors":[{status,title,detail,request_id[,code][,min/max_version]}]}.
// The HTTP kit (src/http/kit.ts) renders every placement error through these.
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { acceptsJson } from '../../http/accept.js';
import { ApiError, cutDetail, STATUS_TITLES, webobDetail } from '../../http/api-error.js';
import type { AppContext } from '../../http/env.js';
import type { ErrorOptions } from '../../http/kit.js';
import { MV } from '../versions.js';

/** A placement error: webob's generic explanation, then the message (clients read the last line). */
export function placementError(status: ContentfulStatusCode, message: string, options: ErrorOptions = {}): ApiError {
  return new ApiError(status, webobDetail(status, message), options);
}

export function renderPlacementError(c: AppContext, err: ApiError): Response {
  const status = err.status as ContentfulStatusCode;
  const title = STATUS_TITLES[status] ?? 'Error';
  const detail = cutDetail(err.detail);
  const headers: Record<string, string> = { ...err.headers };
  if (!acceptsJson(c.req.header('accept'))) {
    // An explicit non-JSON Accept gets webob's HTML rendering, as upstream.
    const html = `<html><head><title>${status} ${title}</title></head><body><h1>${status} ${title}</h1>${detail.replace(/</g, '&lt;')}</body></html>`;
    return c.html(html, status, headers);
  }
  const item: Record<string, unknown> = {
    status,
    title,
    detail,
    request_id: c.get('requestId'),
    ...err.extra,
  };
  const mv = c.get('mv');
  if (mv?.atLeast(MV.ERROR_CODES)) item.code = err.code;
  return c.json({ errors: [item] }, status, headers);
}
