// Request helpers shared by the Cyborg routes: the Hono env, policy checks,
// body parsing with zod, and Cyborg's error rendering.
import type { Context, ErrorHandler, NotFoundHandler } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { DomainError } from '../errors.js';
import { ApiError, cutDetail, errorForLog, internalErrorMessage, PROBLEM_STATUS } from '../http/api-error.js';
import { BodyError, codePoint, readJsonBody, type BodyProblem } from '../http/body.js';
import type { AppVariables } from '../http/env.js';
import type { PolicyEnforcer, Target } from '../http/policy.js';

export type CyborgEnv = { Variables: AppVariables & { cyborgPolicy: PolicyEnforcer } };
export type CyborgContext = Context<CyborgEnv>;

export function authorize(c: CyborgContext, rule: string, target?: Target): void {
  const creds = c.var.credentials;
  const allowed = c.var.cyborgPolicy.enforce(rule, creds, target ?? { project_id: creds.projectId, user_id: creds.userId });
  if (!allowed) throw cyborgError(403, `Policy doesn't allow ${rule} to be performed.`);
}

export const isAdmin = (c: CyborgContext) => c.var.credentials.roles.some((r) => r.toLowerCase() === 'admin');

/** The project filter for ARQ reads: admins see all, others their own project only. */
export const projectScope = (c: CyborgContext): string | null | undefined => (isAdmin(c) ? undefined : c.var.credentials.projectId);

function zodMessage(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'Invalid input';
  const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
  return `${where}${issue.message}`;
}

function cyborgBodyError(problem: BodyProblem): ApiError {
  switch (problem.kind) {
    case 'too-large':
      return cyborgError(413, `The request body is larger than the limit of ${problem.limit} bytes.`);
    case 'malformed':
      return cyborgError(400, 'Malformed JSON in request body.');
    case 'too-deep':
      return cyborgError(400, `Invalid input: the body is nested deeper than ${problem.limit} levels.`);
    case 'control-character':
      return cyborgError(
        400,
        `Invalid input: ${problem.path.join('.') || 'body'}: control character ${codePoint(problem.char)} is not allowed.`,
      );
  }
}

export async function readCyborgBody<S extends z.ZodType>(c: CyborgContext, schema: S): Promise<z.infer<S>> {
  let raw: unknown;
  try {
    raw = await readJsonBody(c.req.raw, c.var.deps.config.PLACEMENT_MAX_BODY_BYTES);
  } catch (err) {
    throw err instanceof BodyError ? cyborgBodyError(err.problem) : err;
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) throw cyborgError(400, `Invalid input: ${zodMessage(parsed.error)}`);
  return parsed.data;
}

/** The query string (single values) checked against `schema`; 400 in Cyborg's body when it fails. */
export function readCyborgQuery<S extends z.ZodType>(c: CyborgContext, schema: S): z.infer<S> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) throw cyborgError(400, `Invalid input: ${zodMessage(parsed.error)}`);
  return parsed.data;
}

/** Comma-separated query value list (`?name=a,b`, `?arqs=u1,u2`), repeated keys joined. */
export function queryList(c: CyborgContext, key: string): string[] | undefined {
  const values = c.req.queries(key);
  if (!values) return undefined;
  return values
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

export function selfLink(c: CyborgContext, collection: string, uuid: string) {
  const origin = new URL(c.req.url).origin;
  return [{ href: `${origin}/accelerator/v2/${collection}/${uuid}`, rel: 'self' }];
}

function faultBody(status: number, message: string): string {
  return JSON.stringify({
    error_message: JSON.stringify({ faultcode: status < 500 ? 'Client' : 'Server', faultstring: message, debuginfo: null }),
  });
}

function render(c: CyborgContext, status: ContentfulStatusCode, message: string, headers: Record<string, string> = {}): Response {
  return c.body(faultBody(status, cutDetail(message)), status, { 'content-type': 'application/json', ...headers });
}

export const cyborgOnError: ErrorHandler<CyborgEnv> = (err, c) => {
  if (err instanceof ApiError) return render(c, err.status as ContentfulStatusCode, err.detail, err.headers);
  if (err instanceof DomainError) return render(c, PROBLEM_STATUS[err.problem], err.message);
  if (err instanceof HTTPException) return render(c, err.status as ContentfulStatusCode, err.message);
  const requestId = c.get('requestId');
  c.var.deps.log.error('unhandled accelerator error', { requestId, err: errorForLog(err) });
  return render(c, 500, internalErrorMessage(requestId));
};

export const cyborgNotFound: NotFoundHandler<CyborgEnv> = (c) => render(c, 404, 'The resource could not be found.');

type MethodName = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** Registers the verbs of one path and answers 405 for the others. */
export function resource(
  app: {
    on: (m: string, p: string, h: (c: CyborgContext) => Response | Promise<Response>) => unknown;
    all: (p: string, h: (c: CyborgContext) => never) => unknown;
  },
  path: string,
  handlers: Partial<Record<MethodName, (c: CyborgContext) => Response | Promise<Response>>>,
): void {
  const allowed = Object.keys(handlers) as MethodName[];
  for (const method of allowed) app.on(method, path, handlers[method]!);
  app.all(path, (c) => {
    throw cyborgError(405, `The method ${c.req.method} is not allowed for this resource.`, { allow: allowed.join(', ') });
  });
}

// Cyborg errors carry a plain message; onError wraps it in
// {"error_message": "{faultcode, faultstring, debuginfo}"}.
export const cyborgError = (status: ContentfulStatusCode, message: string, headers?: Record<string, string>) =>
  new ApiError(status, message, { headers });
