// Placement's wording of validation failures: jsonschema's messages ("'name' is
// a required property", "Failed validating 'type' in schema[...]") with values
// quoted as Python's repr() quotes them, because clients and upstream's tests
// read those strings. Pure text: the schemas (domain) and the HTTP edge's body
// and query readers (src/http/validate.ts) share it.
import type { z } from 'zod';
import { DomainError } from '../errors.js';

const REPR_MAX_STRING = 200;
const REPR_MAX_ITEMS = 20;
const REPR_MAX_DEPTH = 4;
const PY_ESCAPES: Record<string, string> = { '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function pyString(value: string): string {
  const shown = value.length > REPR_MAX_STRING ? value.slice(0, REPR_MAX_STRING) : value;
  const quoted = `'${shown
    .replace(/\\/g, '\\\\')
    .replace(/'/g, "\\'")
    .replace(/[\u0000-\u001f\u007f]/g, (ch) => PY_ESCAPES[ch] ?? `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`)
    // Unpaired surrogates, as Python writes them (a pair is one printable character).
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16)}`)}'`;
  // Never echo a huge value back: cut it and say how long it was.
  return shown === value ? quoted : `${quoted}... (${value.length} characters)`;
}

/**
 * Python's repr(), which jsonschema uses to quote values in messages; long
 * strings, long lists and deep nesting are cut so a message stays small.
 */
export function pyRepr(value: unknown): string {
  return reprAt(value, 0);
}

function reprAt(value: unknown, depth: number): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') return pyString(value);
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) {
    if (depth >= REPR_MAX_DEPTH) return '[...]';
    const items = value.slice(0, REPR_MAX_ITEMS).map((v) => reprAt(v, depth + 1));
    if (value.length > REPR_MAX_ITEMS) items.push('...');
    return `[${items.join(', ')}]`;
  }
  if (typeof value === 'object') {
    if (depth >= REPR_MAX_DEPTH) return '{...}';
    const entries = Object.entries(value as Record<string, unknown>);
    const items = entries.slice(0, REPR_MAX_ITEMS).map(([k, v]) => `${pyString(k)}: ${reprAt(v, depth + 1)}`);
    if (entries.length > REPR_MAX_ITEMS) items.push('...');
    return `{${items.join(', ')}}`;
  }
  return String(value);
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let cur: unknown = root;
  for (const key of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<PropertyKey, unknown>)[key];
  }
  return cur;
}

const JSON_TYPE: Record<string, string> = {
  string: 'string',
  number: 'number',
  int: 'integer',
  boolean: 'boolean',
  object: 'object',
  array: 'array',
  null: 'null',
  record: 'object',
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
    origin === 'number' || origin === 'int' || origin === 'bigint'
      ? num
      : origin === 'string'
        ? str
        : origin === 'array' || origin === 'set'
          ? arr
          : obj;
  switch (issue.code) {
    case 'invalid_type':
      return valueAt(input, issue.path) === undefined && issue.path.length > 0 ? 'required' : 'type';
    case 'unrecognized_keys':
      return 'additionalProperties';
    case 'too_small':
      return sized('minimum', 'minLength', 'minItems', 'minProperties');
    case 'too_big':
      return sized('maximum', 'maxLength', 'maxItems', 'maxProperties');
    case 'invalid_format':
      return issue.format === 'regex' ? 'pattern' : 'format';
    case 'invalid_value':
      return 'enum';
    case 'custom': {
      const keyword = (issue.params as Record<string, unknown> | undefined)?.keyword;
      return typeof keyword === 'string' ? keyword : undefined;
    }
    default:
      return undefined;
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

/** 400 "Invalid query string parameters: ..." as placement words it. */
export function badQuery(message: string): DomainError {
  return new DomainError('invalid', `Invalid query string parameters: ${message}`);
}
