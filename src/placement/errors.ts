// Renders every placement error in its envelope:
// {"errors":[{status,title,detail,request_id[,code][,min/max_version]}]}.
import type { ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { DomainError } from '../errors.js';
import {
  ApiError,
  cutDetail,
  errorForLog,
  ErrorCode,
  internalErrorMessage,
  PROBLEM_STATUS,
  STATUS_TITLES,
  webobDetail,
} from '../http/api-error.js';
import type { AppContext, AppEnv } from '../http/env.js';
import { acceptsJson } from './middleware.js';
import { MV } from './versions.js';

function render(c: AppContext, err: ApiError): Response {
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

export const placementOnError: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof ApiError) return render(c, err);
  if (err instanceof DomainError) {
    const status = PROBLEM_STATUS[err.problem];
    return render(c, new ApiError(status, webobDetail(status, err.message), { code: err.code }));
  }
  if (err instanceof HTTPException) {
    return render(c, new ApiError(err.status as ContentfulStatusCode, webobDetail(err.status, err.message)));
  }
  const requestId = c.get('requestId');
  c.var.deps.log.error('unhandled error', { requestId, err: errorForLog(err) });
  return render(c, new ApiError(500, webobDetail(500, internalErrorMessage(requestId)), { code: ErrorCode.UNDEFINED }));
};

export const placementNotFound: NotFoundHandler<AppEnv> = (c) =>
  render(c, new ApiError(404, webobDetail(404, 'The resource could not be found.')));

/** 409 concurrent_update: a write kept losing races (see db/write-batch.ts). */
export function contentionToHttp(): ApiError {
  return new ApiError(409, webobDetail(409, 'Another thread concurrently updated the data. Please retry your update'), {
    code: ErrorCode.CONCURRENT_UPDATE,
  });
}
