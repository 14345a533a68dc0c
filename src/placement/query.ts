// Query-string languages shared by GET /resource_providers and
// GET /allocation_candidates: `required` (traits, `!` forbidden from 1.22,
// `in:` any-of from 1.39), `member_of` (aggregates, `in:` 1.3, repeats 1.24,
// `!` 1.32) and `resources` (RC:AMOUNT lists). Errors are worded as upstream.
import { DomainError } from '../errors.js';
import { badQuery } from '../validation-messages.js';
import type { Microversion } from '../microversion.js';
import { MV } from './versions.js';

const UUID_RE = /^(?:[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12})$/;

export function isUuidLike(value: string): boolean {
  return UUID_RE.test(value);
}

/** Canonical dashed, lower-case form of a uuid-like string. */
export function normalizeUuid(value: string): string {
  const hex = value.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

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
 * Parses the values of one `required<suffix>` parameter. Before 1.39 only
 * the last value counts (the parameter is single-valued there).
 */
export function parseRequired(values: string[], mv: Microversion, paramName = 'required'): TraitFilter {
  const allowForbidden = mv.atLeast(MV.FORBIDDEN_TRAITS);
  const allowAnyOf = mv.atLeast(MV.ANY_TRAITS);
  const form = allowForbidden ? 'HW_CPU_X86_VMX,!CUSTOM_MAGIC' : 'HW_CPU_X86_VMX,CUSTOM_MAGIC';
  const fail = (got: string) => badQuery(`Expected '${paramName}' parameter value of the form: ${form}. Got: ${got}`);
  const filter = emptyTraitFilter();
  const used = allowAnyOf ? values : values.slice(-1);
  for (const value of used) {
    if (!allowAnyOf && value.startsWith('in:')) {
      throw new DomainError('invalid', "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39.");
    }
    if (allowAnyOf && value.startsWith('in:')) {
      const names = value.slice(3).split(',');
      if (names.some((n) => !n.trim() || n.trim().startsWith('!'))) throw fail(value);
      filter.anyOf.push(names.map((n) => n.trim()));
      continue;
    }
    for (const raw of value.split(',')) {
      const name = raw.trim();
      if (!name) throw fail(value);
      if (name.startsWith('!')) {
        if (!allowForbidden || name.length === 1) throw fail(value);
        filter.forbidden.push(name.slice(1));
      } else {
        filter.required.push(name);
      }
    }
  }
  return filter;
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
