// Request helpers shared by the Cyborg routes: the accelerator API's profile
// for the HTTP kit (service type "accelerator", plain messages in Cyborg's
// {"error_message": ...} envelope, Cyborg's policy), body and query parsing
// with zod, and links.
import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { z } from 'zod';
import { ApiError, cutDetail } from '../../http/api-error.js';
import { BodyError, codePoint, readJsonBody, type BodyProblem } from '../../http/body.js';
import type { AppEnv } from '../../http/env.js';
import { httpKit, type ApiProfile } from '../../http/kit.js';
import { PolicyEnforcer } from '../../http/policy.js';
import { cyborgPolicyRules } from '../policies.js';
import { MAX_VERSION, MIN_VERSION } from '../versions.js';

/** Both APIs share one Hono environment; the names keep the routes' signatures readable. */
export type CyborgEnv = AppEnv;
export type CyborgContext = Context<CyborgEnv>;

// Cyborg errors carry a plain message; the envelope wraps it in
// {"error_message": "{faultcode, faultstring, debuginfo}"}.
export const cyborgError = (status: ContentfulStatusCode, message: string, headers?: Record<string, string>) =>
  new ApiError(status, message, { headers });

function faultBody(status: number, message: string): string {
  return JSON.stringify({
    error_message: JSON.stringify({ faultcode: status < 500 ? 'Client' : 'Server', faultstring: message, debuginfo: null }),
  });
}

function renderCyborgError(c: CyborgContext, err: ApiError): Response {
  return c.body(faultBody(err.status, cutDetail(err.detail)), err.status as ContentfulStatusCode, {
    'content-type': 'application/json',
    ...err.headers,
  });
}

/** Cyborg's rules with its legacy defaults; no operator overrides yet. */
const cyborgPolicy = new PolicyEnforcer(cyborgPolicyRules({ enforceNewDefaults: false }));

export const CYBORG_API: ApiProfile = {
  logLabel: 'unhandled accelerator error',
  error: (status, message, options) => cyborgError(status, message, options?.headers),
  render: renderCyborgError,
  versions: {
    serviceType: 'accelerator',
    min: MIN_VERSION,
    max: MAX_VERSION,
    acceptBare: true,
    always: {
      'OpenStack-API-Minimum-Version': MIN_VERSION,
      'OpenStack-API-Maximum-Version': MAX_VERSION,
      Vary: 'OpenStack-API-Version',
    },
    negotiated: {},
    // Cyborg never answers 400 here, unlike Placement.
    refuse: (failure) => ({
      status: 406,
      message: `Invalid value for OpenStack-API-Version header: ${failure.value}. Version must be between ${MIN_VERSION} and ${MAX_VERSION}.`,
    }),
  },
  policy: {
    enforcer: () => cyborgPolicy,
    refuseSystemScope: false,
    denied: (rule) => `Policy doesn't allow ${rule} to be performed.`,
  },
};

export const cyborgHttp = httpKit(CYBORG_API);
export const { resource, authorize } = cyborgHttp;

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
    case 'not-utf8':
      return cyborgError(400, 'Malformed JSON in request body.');
    case 'incomplete':
      return cyborgError(400, 'The request body was not received completely.');
    case 'too-deep':
      return cyborgError(400, `Invalid input: the body is nested deeper than ${problem.limit} levels.`);
    case 'control-character':
      return cyborgError(
        400,
        `Invalid input: ${problem.path.join('.') || 'body'}: control character ${codePoint(problem.char)} is not allowed.`,
      );
    case 'unpaired-surrogate':
      return cyborgError(
        400,
        `Invalid input: ${problem.path.join('.') || 'body'}: unpaired surrogate ${codePoint(problem.char)} is not allowed; text must be valid Unicode.`,
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
