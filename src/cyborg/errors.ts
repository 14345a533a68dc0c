// Cyborg errors carry a plain message; the app's onError wraps it in
// {"error_message": "{faultcode, faultstring, debuginfo}"}.
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { ApiError } from '../http/api-error.js';

export const cyborgError = (status: ContentfulStatusCode, message: string, headers?: Record<string, string>) =>
  new ApiError(status, message, { headers });
