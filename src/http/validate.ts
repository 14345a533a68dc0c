// Input edges: JSON bodies and query strings are parsed here and checked with
// zod. Failures become 400s worded like placement's jsonschema messages
// ("JSON does not validate: 'name' is a required property"), because clients
// and the upstream tests read those strings.
import type { z } from 'zod';
import { ApiError, webobDetail } from './api-error.js';
import type { AppContext } from './env.js';

/** Python's repr(), which jsonschema uses to quote values in messages. */
import { pyRepr } from '../placement/py-repr.js';
export { pyRepr };

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

const JSON_TYPE: Record<string, string> = {
  string: 'string', number: 'number', int: 'integer', boolean: 'boolean',
  object: 'object', array: 'array', null: 'null', record: 'object',
};

/**
 * zod reports z.int() type errors as expected "number"; every numeric field in
 * these APIs is an integer except ratios, so name the JSON Schema type that way.
 */
function jsonTypeName(expected: string, key: PropertyKey | undefined): string {
  if (expected === 'number') return typeof key === 'string' && key.endsWith('ratio') ? 'number' : 'integer';
  return JSON_TYPE[expected] ?? expected;
}

export function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  const value = valueAt(input, issue.path);
  const last = issue.path[issue.path.length - 1];
  switch (issue.code) {
    case 'invalid_type':
      if (value === undefined && last !== undefined) return `${pyRepr(String(last))} is a required property`;
      return `${pyRepr(value)} is not of type ${pyRepr(jsonTypeName(issue.expected, last))}`;
    case 'unrecognized_keys':
      return `Additional properties are not allowed (${issue.keys.map((k) => pyRepr(k)).join(', ')} ${issue.keys.length > 1 ? 'were' : 'was'} unexpected)`;
    case 'too_small':
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint') {
        return `${pyRepr(value)} is less than the minimum of ${String(issue.minimum)}`;
      }
      return `${pyRepr(value)} is too short`;
    case 'too_big':
      if (issue.origin === 'number' || issue.origin === 'int' || issue.origin === 'bigint') {
        return `${pyRepr(value)} is greater than the maximum of ${String(issue.maximum)}`;
      }
      return `${pyRepr(value)} is too long`;
    case 'invalid_format':
      // zod reports the regex as "/source/flags"; jsonschema quotes the bare source.
      if (issue.format === 'regex' && 'pattern' in issue) {
        return `${pyRepr(value)} does not match ${pyRepr(String(issue.pattern).replace(/^\/(.*)\/[a-z]*$/s, '$1'))}`;
      }
      return `${pyRepr(value)} is not a ${pyRepr(issue.format)}`;
    case 'invalid_value':
      return `${pyRepr(value)} is not one of ${pyRepr(issue.values)}`;
    default:
      return issue.message;
  }
}

export function validationMessage(error: z.ZodError, input: unknown): string {
  const issue = error.issues[0];
  return issue ? describeIssue(issue, input) : 'invalid input';
}

/**
 * The jsonschema keyword behind an issue, as in upstream's second line
 * "Failed validating 'minimum' in schema['properties']['total']" that tests
 * and clients match. Custom issues name theirs in `params.keyword`.
 */
export function schemaKeyword(issue: z.core.$ZodIssue, input: unknown): string | undefined {
  const origin = 'origin' in issue ? String(issue.origin) : '';
  const sized = (num: string, str: string, arr: string, obj: string) =>
    origin === 'number' || origin === 'int' || origin === 'bigint' ? num
      : origin === 'string' ? str : origin === 'array' || origin === 'set' ? arr : obj;
  switch (issue.code) {
    case 'invalid_type':
      return valueAt(input, issue.path) === undefined && issue.path.length > 0 ? 'required' : 'type';
    case 'unrecognized_keys': return 'additionalProperties';
    case 'too_small': return sized('minimum', 'minLength', 'minItems', 'minProperties');
    case 'too_big': return sized('maximum', 'maxLength', 'maxItems', 'maxProperties');
    case 'invalid_format': return issue.format === 'regex' ? 'pattern' : 'format';
    case 'invalid_value': return 'enum';
    case 'custom': {
      const keyword = (issue.params as Record<string, unknown> | undefined)?.keyword;
      return typeof keyword === 'string' ? keyword : undefined;
    }
    default: return undefined;
  }
}

/** "\n\nFailed validating '<keyword>' in schema[...]" (properties by name, items by index). */
export function failedValidating(issue: z.core.$ZodIssue, input: unknown): string {
  const keyword = schemaKeyword(issue, input);
  if (!keyword) return '';
  // 'required' belongs to the object that lacks the property, not to the property.
  const path = keyword === 'required' ? issue.path.slice(0, -1) : issue.path;
  const where = path.map((p) => (typeof p === 'number' ? "['items']" : `['properties'][${pyRepr(String(p))}]`)).join('');
  return `\n\nFailed validating ${pyRepr(keyword)} in schema${where}`;
}

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

/** Reads a JSON body: 415 without a JSON content type, 400 when it does not parse. */
export async function readJson(c: AppContext): Promise<unknown> {
  const type = c.req.header('content-type');
  const media = type?.split(';')[0]?.trim().toLowerCase();
  if (media !== 'application/json') {
    throw new ApiError(415, webobDetail(415, `The media type ${type ?? 'None'} is not supported, use application/json`));
  }
  const text = await c.req.text();
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError(400, webobDetail(400, `Malformed JSON: ${err instanceof Error ? err.message : String(err)}`));
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

export function badQuery(message: string): ApiError {
  return new ApiError(400, webobDetail(400, `Invalid query string parameters: ${message}`));
}
