// Input edges: JSON bodies and query strings are parsed here and checked with
// zod. Failures become 400s worded like placement's jsonschema messages
// ("JSON does not validate: 'name' is a required property"), because clients
// and the upstream tests read those strings.
import type { z } from 'zod';
import { ApiError, webobDetail } from './api-error.js';
import { BodyError, codePoint, readJsonBody, type BodyProblem } from './body.js';
import type { AppContext } from './env.js';
import { badQuery, failedValidating, pyRepr, validationMessage } from '../shared/validation-messages.js';

export { badQuery, failedValidating, pyRepr, validationMessage };

/** Checks a parsed body against a schema: 400 "JSON does not validate" on failure. */
export function validateBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (!result.success) {
    const first = result.error.issues[0];
    const keywordLine = first ? failedValidating(first, body) : '';
    throw new ApiError(400, webobDetail(400, `JSON does not validate: ${validationMessage(result.error, body)}${keywordLine}`));
  }
  return result.data;
}

const INCOMPLETE_BODY = 'The request body was not received completely.';

/** Placement's wording of each body problem (413 for size, 400 otherwise). */
function placementBodyError(problem: BodyProblem): ApiError {
  const status = problem.kind === 'too-large' ? 413 : 400;
  return new ApiError(status, webobDetail(status, placementBodyDetail(problem)));
}

function placementBodyDetail(problem: BodyProblem): string {
  switch (problem.kind) {
    case 'too-large':
      return `The request body is larger than the limit of ${problem.limit} bytes.`;
    case 'malformed':
      return `Malformed JSON: ${problem.message}`;
    case 'not-utf8':
      return 'Malformed JSON: the body is not valid UTF-8';
    case 'incomplete':
      return INCOMPLETE_BODY;
    case 'too-deep':
      return `JSON does not validate: the body is nested deeper than ${problem.limit} levels`;
    case 'control-character':
      return `JSON does not validate: ${pyRepr(problem.value)} contains the control character ${codePoint(problem.char)}; control characters are not allowed`;
    case 'unpaired-surrogate':
      return `JSON does not validate: ${pyRepr(problem.value)} contains the unpaired surrogate ${codePoint(problem.char)}; text must be valid Unicode`;
  }
}

/** Reads a JSON body: 415 without a JSON content type, 413 over the size limit, 400 when it does not parse. */
export async function readJson(c: AppContext): Promise<unknown> {
  const type = c.req.header('content-type');
  const media = type?.split(';')[0]?.trim().toLowerCase();
  if (media !== 'application/json') {
    throw new ApiError(415, webobDetail(415, `The media type ${type ?? 'None'} is not supported, use application/json`));
  }
  try {
    return await readJsonBody(c.req.raw, c.get('deps').config.PLACEMENT_MAX_BODY_BYTES);
  } catch (err) {
    throw err instanceof BodyError ? placementBodyError(err.problem) : err;
  }
}

export async function readBody<S extends z.ZodType>(c: AppContext, schema: S): Promise<z.infer<S>> {
  return validateBody(schema, await readJson(c));
}

/**
 * Query parameters as name → every value given, in order, each without
 * surrounding whitespace: YAML-folded URLs (upstream's own tests, scripted
 * clients) leave a space before each `&`, and upstream's parsers strip values
 * and list items. List parsers strip their items too.
 */
export function queryParams(c: AppContext): Record<string, string[]> {
  const params = c.req.queries() as Record<string, string[]>;
  return Object.fromEntries(Object.entries(params).map(([key, values]) => [key, values.map((v) => v.trim())]));
}
