// Frozen copy of the query languages (then src/placement/query.ts, now the end of src/placement/candidates/parse.ts) for the differential oracles (test/oracle-rules/README.md).
// Query-string languages shared by GET /resource_providers and
// GET /allocation_candidates: `required` (traits, `!` forbidden from 1.22,
// `in:` any-of from 1.39), `member_of` (aggregates, `in:` 1.3, repeats 1.24,
// `!` 1.32) and `resources` (RC:AMOUNT lists). Errors are worded as upstream.
import { DomainError } from '../../src/errors.js';
import type { Microversion } from '../../src/microversion.js';
import { isUuidLike, normalizeUuid } from './uuid.js';

/** The microversions these rules turn on at (frozen with them). */
const MV = { MEMBER_OF_MULTI: '1.24', FORBIDDEN_TRAITS: '1.22', ANY_TRAITS: '1.39', FORBIDDEN_AGGREGATES: '1.32' } as const;

const badQuery = (message: string) => new DomainError('invalid', `Invalid query string parameters: ${message}`);

export interface TraitFilter {
  /** Every one of these. */
  required: string[];
  /** None of these. */
  forbidden: string[];
  /** For each inner list, at least one of its traits. */
  anyOf: string[][];
}

export const emptyTraitFilter = (): TraitFilter => ({ required: [], forbidden: [], anyOf: [] });

export function traitNames(filter: TraitFilter): string[] {
  return [...new Set([...filter.required, ...filter.forbidden, ...filter.anyOf.flat()])];
}

/**
 * How an endpoint words a trait query it refuses. Upstream's two handlers
 * differ here and its gabbi tests pin each endpoint's words, so the one
 * parser takes them as a parameter.
 */
export interface TraitQueryWording {
  /** An `in:` value before 1.39. */
  anyOfTooEarly(value: string): DomainError;
  /** The form a malformed `in:` value is told to follow: the `in:` form, or the plain one. */
  anyOfForm: 'in' | 'plain';
  /** A lone `!`: a malformed value, or a forbidden trait with an empty name (which then does not exist). */
  loneBang: 'malformed' | 'empty name';
}

const ANY_OF_TOO_EARLY = "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39.";

/** GET /resource_providers?required=. */
export const PROVIDER_LIST_TRAITS: TraitQueryWording = {
  anyOfTooEarly: () => new DomainError('invalid', ANY_OF_TOO_EARLY),
  anyOfForm: 'plain',
  loneBang: 'malformed',
};

/** GET /allocation_candidates?required<suffix>= and root_required=. */
export const CANDIDATE_TRAITS: TraitQueryWording = {
  anyOfTooEarly: (value) => badQuery(`${ANY_OF_TOO_EARLY} Got: ${value}`),
  anyOfForm: 'in',
  loneBang: 'empty name',
};

/** One term of a trait query: at least one of `names` (one name for a plain requirement, several for `in:`). */
export interface TraitTerm {
  names: string[];
  /** Written as `in:...`. */
  anyOf: boolean;
}

/** A trait query, terms in request order (the order unknown traits are reported in). */
export interface TraitQuery {
  required: TraitTerm[];
  forbidden: string[];
}

const PLAIN_FORM = 'HW_CPU_X86_VMX,CUSTOM_MAGIC';
const PLAIN_FORM_WITH_FORBIDDEN = 'HW_CPU_X86_VMX,!CUSTOM_MAGIC';

const malformedTraits = (form: string, value: string) =>
  badQuery(`Expected 'required' parameter value of the form: ${form}. Got: ${value}`);

/** One value without `in:`: comma-separated names, `!` forbidden from 1.22 (always in root_required). */
export function parsePlainTraits(value: string, allowForbidden: boolean, wording: TraitQueryWording, into: TraitQuery): void {
  const names = value.split(',').map((s) => s.trim());
  const loneBangMalformed = wording.loneBang === 'malformed';
  if (names.some((n) => !n || (n.startsWith('!') && (!allowForbidden || (loneBangMalformed && n.length === 1))))) {
    throw malformedTraits(allowForbidden ? PLAIN_FORM_WITH_FORBIDDEN : PLAIN_FORM, value);
  }
  for (const name of names) {
    if (name.startsWith('!')) into.forbidden.push(name.slice(1));
    else into.required.push({ names: [name], anyOf: false });
  }
}

/**
 * Parses every value of one `required<suffix>` parameter: plain names, `!`
 * forbidden from 1.22, `in:` any-of from 1.39. Before 1.39 the parameter is
 * single-valued: the last value counts.
 */
export function parseTraitQuery(values: string[], mv: Microversion, wording: TraitQueryWording): TraitQuery {
  const allowForbidden = mv.atLeast(MV.FORBIDDEN_TRAITS);
  const allowAnyOf = mv.atLeast(MV.ANY_TRAITS);
  const query: TraitQuery = { required: [], forbidden: [] };
  for (const value of allowAnyOf ? values : values.slice(-1)) {
    if (!value.startsWith('in:')) {
      parsePlainTraits(value, allowForbidden, wording, query);
      continue;
    }
    if (!allowAnyOf) throw wording.anyOfTooEarly(value);
    const names = value
      .slice(3)
      .split(',')
      .map((s) => s.trim());
    if (names.some((n) => !n || n.startsWith('!'))) {
      throw malformedTraits(wording.anyOfForm === 'in' ? `in:${PLAIN_FORM}` : PLAIN_FORM_WITH_FORBIDDEN, value);
    }
    query.required.push({ names, anyOf: true });
  }
  return query;
}

/** GET /resource_providers?required=: plain requirements, forbidden traits and `in:` lists apart. */
export function parseRequired(values: string[], mv: Microversion): TraitFilter {
  const query = parseTraitQuery(values, mv, PROVIDER_LIST_TRAITS);
  return {
    required: query.required.filter((t) => !t.anyOf).map((t) => t.names[0]!),
    forbidden: query.forbidden,
    anyOf: query.required.filter((t) => t.anyOf).map((t) => t.names),
  };
}

export interface AggregateFilter {
  /** For each inner list, membership in at least one of those aggregates. */
  anyOf: string[][];
  /** Membership in none of these. */
  forbidden: string[];
}

export const emptyAggregateFilter = (): AggregateFilter => ({ anyOf: [], forbidden: [] });

/** Parses every value of one `member_of<suffix>` parameter. */
export function parseMemberOf(values: string[], mv: Microversion): AggregateFilter {
  const filter = emptyAggregateFilter();
  if (values.length > 1 && !mv.atLeast(MV.MEMBER_OF_MULTI)) {
    throw new DomainError('invalid', 'Multiple member_of parameters are not supported');
  }
  const invalid = (got: string) => badQuery(`Expected 'member_of' parameter to contain valid UUID(s). Got: ${got}`);
  for (const value of values) {
    let rest = value;
    let forbidden = false;
    if (rest.startsWith('!')) {
      if (!mv.atLeast(MV.FORBIDDEN_AGGREGATES)) {
        throw new DomainError('invalid', 'Forbidden member_of parameters are not supported in the specified microversion');
      }
      forbidden = true;
      rest = rest.slice(1);
    }
    let uuids: string[];
    if (rest.startsWith('in:')) {
      uuids = rest.slice(3).split(',');
    } else {
      if (rest.includes(',')) {
        throw new DomainError(
          'invalid',
          "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword using the valid microversion.",
        );
      }
      uuids = [rest];
    }
    if (uuids.some((u) => !isUuidLike(u.trim()))) throw invalid(value);
    const normalized = uuids.map((u) => normalizeUuid(u.trim()));
    if (forbidden) filter.forbidden.push(...normalized);
    else filter.anyOf.push(normalized);
  }
  return filter;
}

/** `resources=VCPU:2,MEMORY_MB:1024` as class name -> amount, in the order given. */
export function parseResources(value: string, paramName = 'resources'): Map<string, number> {
  const form =
    `Badly formed ${paramName} parameter. Expected ${paramName} query string parameter in form: ` + `?${paramName}=VCPU:2,MEMORY_MB:1024.`;
  const bad = (message: string) => new DomainError('invalid', message);
  if (!value.trim()) throw bad(`${form} Got: empty string.`);
  const amounts = new Map<string, number>();
  for (const part of value.split(',')) {
    const pieces = part.split(':');
    if (pieces.length !== 2) throw bad(`${form} Got: ${part}.`);
    const rc = pieces[0]!.trim();
    const amount = pieces[1]!.trim();
    if (!/^[+-]?\d+$/.test(amount)) {
      throw bad(`Requested resource ${rc} expected positive integer amount. Got: ${amount}.`);
    }
    const n = Number(amount);
    if (n < 1) throw bad(`Requested resource ${rc} requires amount >= 1. Got: ${n}.`);
    amounts.set(rc, n);
  }
  return amounts;
}
