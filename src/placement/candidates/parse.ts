// Parses the GET /allocation_candidates query string into request groups
// (one per suffix) and request-wide parameters, per microversion, with
// upstream's error wording (placement/lib.py RequestGroup/RequestWideParams
// and the handler's jsonschema). Pure: no database, no hono.
// At the end, the query-string languages GET /resource_providers shares with
// it: `required` (traits, `!` forbidden from 1.22, `in:` any-of from 1.39),
// `member_of` (aggregates, `in:` 1.3, repeats 1.24, `!` 1.32) and `resources`
// (RC:AMOUNT lists), each worded as upstream words it for the endpoint.
import { DomainError } from '../../errors.js';
import { pyRepr } from '../../shared/validation-messages.js';
import { isUuidLike, normalizeUuid } from '../../shared/uuid.js';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';
import type { CandidateParam } from './index.js';
import { badCandidateRequest as badRequest, invalidQuery as badQuery } from './errors.js';

export interface RequestGroup {
  /** '' for the unsuffixed group; its resources may come from several providers of a tree. */
  suffix: string;
  /** Resource class name -> amount, in request order. Empty for a resourceless group (1.36). */
  resources: Map<string, number>;
  /** Each inner list: at least one of these traits (a single-name list is a plain requirement). */
  requiredAnyOf: string[][];
  forbiddenTraits: string[];
  /** Each inner list: membership in at least one of these aggregates. */
  memberOf: string[][];
  forbiddenAggregates: string[];
  inTree: string | null;
}

export type GroupPolicy = 'none' | 'isolate';

export interface CandidateRequest {
  groups: RequestGroup[];
  groupPolicy: GroupPolicy | null;
  limit: number | null;
  rootRequired: string[];
  rootForbidden: string[];
  sameSubtrees: string[][];
  /**
   * Prioritized alternatives among the suffixed groups: each list names
   * groups in order of preference; per tree only the first that can be
   * satisfied there (with every other group) is used. Set by an extension's
   * parameter (index.ts CandidateParam); absent for stock requests.
   */
  alternatives?: string[][];
  /** The installed extensions' parameters given with the request, parsed, by parameter name (index.ts extParam); absent for stock requests. */
  ext?: ReadonlyMap<string, unknown>;
}

const GROUP_PREFIXES = ['resources', 'required', 'member_of', 'in_tree'] as const;
type GroupPrefix = (typeof GROUP_PREFIXES)[number];

/** The query keys a microversion accepts, as upstream's per-version jsonschema. */
export function allowedKeys(mv: Microversion): { plain: string[]; patterns: string[]; groupKey: RegExp } {
  const plain = ['resources'];
  if (mv.atLeast(MV.AC_LIMIT)) plain.push('limit');
  if (mv.atLeast(MV.AC_REQUIRED)) plain.push('required');
  if (mv.atLeast(MV.AC_MEMBER_OF)) plain.push('member_of');
  if (!mv.atLeast(MV.GRANULAR)) return { plain, patterns: [], groupKey: /^(resources|required|member_of)()$/ };
  plain.push('group_policy');
  if (mv.atLeast(MV.ROOT_REQUIRED)) plain.push('root_required');
  if (mv.atLeast(MV.SAME_SUBTREE)) plain.push('same_subtree');
  const prefixes = mv.atLeast(MV.AC_IN_TREE) ? GROUP_PREFIXES : GROUP_PREFIXES.filter((p) => p !== 'in_tree');
  if (mv.atLeast(MV.STRING_SUFFIXES)) {
    return {
      plain: plain.filter((k) => !(GROUP_PREFIXES as readonly string[]).includes(k)),
      patterns: prefixes.map((p) => `^${p}([a-zA-Z0-9_-]{1,64})?$`),
      groupKey: new RegExp(`^(${prefixes.join('|')})([a-zA-Z0-9_-]{1,64})?$`),
    };
  }
  if (mv.atLeast(MV.AC_IN_TREE)) plain.push('in_tree');
  return {
    plain,
    patterns: prefixes.map((p) => `^${p}[1-9][0-9]*$`),
    groupKey: new RegExp(`^(${prefixes.join('|')})([1-9][0-9]*)?$`),
  };
}

/** jsonschema's additionalProperties message, with or without patternProperties. */
function checkKeys(keys: string[], mv: Microversion): RegExp {
  const { plain, patterns, groupKey } = allowedKeys(mv);
  const patternRes = patterns.map((p) => new RegExp(p));
  const extras = keys.filter((k) => !plain.includes(k) && !patternRes.some((re) => re.test(k))).sort();
  if (extras.length) {
    const joined = extras.map((k) => pyRepr(k)).join(', ');
    if (patterns.length) {
      const verb = extras.length === 1 ? 'does' : 'do';
      throw badQuery(
        `${joined} ${verb} not match any of the regexes: ${[...patterns]
          .sort()
          .map((p) => pyRepr(p))
          .join(', ')}`,
      );
    }
    throw badQuery(`Additional properties are not allowed (${joined} ${extras.length === 1 ? 'was' : 'were'} unexpected)`);
  }
  return groupKey;
}

function newGroup(suffix: string): RequestGroup {
  return { suffix, resources: new Map(), requiredAnyOf: [], forbiddenTraits: [], memberOf: [], forbiddenAggregates: [], inTree: null };
}

const hasTraits = (g: RequestGroup) => g.requiredAnyOf.length > 0 || g.forbiddenTraits.length > 0;
const hasAggregates = (g: RequestGroup) => g.memberOf.length > 0 || g.forbiddenAggregates.length > 0;

/** parseCandidateRequest from a raw query string, for callers without an HTTP request (bench, tests). */
export function parseCandidateQueryString(queryString: string, mv: Microversion): CandidateRequest {
  const query: Record<string, string[]> = {};
  for (const [key, value] of new URLSearchParams(queryString)) (query[key] ??= []).push(value);
  return parseCandidateRequest(query, mv);
}

/** Larger than any candidate count the service could hold in memory. */
const LARGEST_LIMIT = 2 ** 31 - 1;

export function parseCandidateRequest(query: Record<string, string[]>, mv: Microversion): CandidateRequest {
  const keys = Object.keys(query);
  if (!mv.atLeast(MV.GRANULAR) && !keys.includes('resources')) {
    throw badQuery("'resources' is a required property");
  }
  const groupKey = checkKeys(keys, mv);
  const last = (key: string) => query[key]![query[key]!.length - 1] ?? '';

  let limit: number | null = null;
  if (keys.includes('limit')) {
    // Repeated limit/group_policy: the first one counts, as upstream reads them.
    const raw = query.limit![0] ?? '';
    if (!/^[1-9][0-9]*$/.test(raw)) {
      throw badQuery(`${pyRepr(raw)} does not match '^[1-9][0-9]*$'\n\nFailed validating 'pattern' in schema['properties']['limit']`);
    }
    // Upstream accepts any digits and slices in Python; a limit beyond any
    // possible candidate count behaves the same as this one (and stays an
    // integer SQLite can bind).
    limit = Math.min(Number(raw), LARGEST_LIMIT);
  }
  let groupPolicy: GroupPolicy | null = null;
  if (keys.includes('group_policy')) {
    const raw = query.group_policy![0] ?? '';
    if (raw !== 'none' && raw !== 'isolate') {
      throw badQuery(
        `${pyRepr(raw)} is not one of ['none', 'isolate']\n\nFailed validating 'enum' in schema['properties']['group_policy']`,
      );
    }
    groupPolicy = raw;
  }

  const groups = new Map<string, RequestGroup>();
  for (const key of keys) {
    const match = groupKey.exec(key);
    if (!match) continue;
    const prefix = match[1] as GroupPrefix;
    const suffix = match[2] ?? '';
    const group = groups.get(suffix) ?? newGroup(suffix);
    groups.set(suffix, group);
    const values = query[key]!;
    if (prefix === 'resources') {
      group.resources = parseResources(last(key));
    } else if (prefix === 'required') {
      const traits = parseTraitQuery(values, mv, CANDIDATE_TRAITS);
      group.requiredAnyOf = traits.required.map((t) => t.names);
      group.forbiddenTraits = traits.forbidden;
    } else if (prefix === 'member_of') {
      const aggs = parseMemberOf(values, mv);
      group.memberOf = aggs.anyOf;
      group.forbiddenAggregates = aggs.forbidden;
    } else {
      const raw = last(key);
      if (!isUuidLike(raw)) throw badQuery(`Expected 'in_tree' parameter to be a format of uuid. Got: ${raw}`);
      group.inTree = normalizeUuid(raw);
    }
  }

  let rootRequired: string[] = [];
  let rootForbidden: string[] = [];
  if (keys.includes('root_required')) {
    const values = query.root_required!;
    if (values.length > 1) {
      throw badRequest("Query parameter 'root_required' may be specified only once.", 'placement.query.duplicate_key');
    }
    const traits: TraitQuery = { required: [], forbidden: [] };
    parsePlainTraits(values[0] ?? '', true, CANDIDATE_TRAITS, traits);
    rootRequired = traits.required.map((t) => t.names[0]!);
    rootForbidden = traits.forbidden;
    const conflict = rootRequired.filter((t) => rootForbidden.includes(t));
    if (conflict.length) {
      throw badRequest(
        `Conflicting required and forbidden traits found in root_required: ${conflict.join(', ')}`,
        'placement.query.bad_value',
      );
    }
  }

  const sameSubtrees: string[][] = [];
  for (const value of query.same_subtree ?? []) {
    const suffixes = value.split(',').map((s) => s.trim());
    if (suffixes.includes('')) {
      throw badRequest('Empty string (unsuffixed group) can not be specified in `same_subtree` query param.', 'placement.query.bad_value');
    }
    sameSubtrees.push(suffixes);
  }

  const all = [...groups.values()];
  if (mv.atLeast(MV.SAME_SUBTREE)) checkResourceless(all, sameSubtrees);
  else checkOrphans(all);
  if (all.length === 0) {
    throw badRequest('At least one request group (`resources` or `resources{$S}`) is required.');
  }
  for (const group of all) {
    const conflict = group.requiredAnyOf.filter((t) => t.length === 1 && group.forbiddenTraits.includes(t[0]!)).map((t) => t[0]!);
    if (conflict.length) {
      throw badRequest(
        `Conflicting required and forbidden traits found in the following traits keys: required${group.suffix}: (${conflict.join(', ')})`,
        'placement.query.bad_value',
      );
    }
  }
  const suffixed = all.filter((g) => g.suffix !== '').length;
  if (groupPolicy === null && suffixed > 1) {
    throw badRequest('The "group_policy" parameter is required when specifying more than one "resources{N}" parameter.');
  }
  return { groups: all, groupPolicy, limit, rootRequired, rootForbidden, sameSubtrees };
}

/** Before 1.36 every group needs resources. */
function checkOrphans(groups: RequestGroup[]): void {
  const traitOrphans = groups.filter((g) => hasTraits(g) && g.resources.size === 0).map((g) => `required${g.suffix}`);
  if (traitOrphans.length) {
    throw badRequest(
      `All traits parameters must be associated with resources.  Found the following orphaned traits keys: ${traitOrphans.join(', ')}`,
    );
  }
  const aggOrphans = groups.filter((g) => hasAggregates(g) && g.resources.size === 0).map((g) => `member_of${g.suffix}`);
  if (aggOrphans.length) {
    throw badRequest(
      `All member_of parameters must be associated with resources. Found the following orphaned member_of keys: ${aggOrphans.join(', ')}`,
    );
  }
  if (groups.some((g) => g.resources.size === 0)) throw badRequest('All request groups must specify resources.');
}

/** From 1.36 a suffixed group may be resourceless if same_subtree names it. */
function checkResourceless(groups: RequestGroup[], sameSubtrees: string[][]): void {
  const resourceless = groups.filter((g) => g.resources.size === 0).map((g) => g.suffix);
  if (groups.length > 0 && resourceless.length === groups.length) {
    throw badRequest('There must be at least one resources or resources[$S] parameter.', 'placement.query.missing_value');
  }
  const inSubtree = new Set(sameSubtrees.flat());
  const bad = resourceless.filter((s) => !inSubtree.has(s));
  if (bad.length) {
    throw badRequest(
      `Resourceless suffixed group request should be specified in \`same_subtree\` query param: bad group(s) - ${pyRepr(bad)}.`,
      'placement.query.bad_value',
    );
  }
  const known = new Set(groups.map((g) => g.suffix));
  for (const suffixes of sameSubtrees) {
    const missing = suffixes.filter((s) => !known.has(s));
    if (missing.length) {
      throw badRequest(
        `Real suffixes should be specified in \`same_subtree\`: ${pyRepr(missing)} not found in ${pyRepr([...known])}.`,
        'placement.query.bad_value',
      );
    }
  }
}

// --- The installed extensions' parameters -------------------------------------
// The installed extensions' query parameters of GET /allocation_candidates
// (and of what takes the same query: headroom, why-no-host, gangs): each is
// taken out before upstream's parser sees the query and acts only when given.
// Any other `ext_` name is left in, so upstream's parser refuses it with its
// usual 400 (a stock request never changes meaning). The parameters, their
// grammar and their meaning belong to the extensions (index.ts CandidateParam).

const NONE: ReadonlyMap<string, CandidateParam> = new Map();

/** parseCandidateRequest, plus the parameters `params` declare (those `mv` takes), in query order. */
export function parseCandidateRequestWithExt(
  query: Record<string, string[]>,
  mv: Microversion,
  params: ReadonlyMap<string, CandidateParam> = NONE,
): CandidateRequest {
  const stock: Record<string, string[]> = {};
  const given: [CandidateParam, string[]][] = [];
  for (const [key, values] of Object.entries(query)) {
    const param = params.get(key);
    if (param && (param.since === undefined || mv.atLeast(param.since))) given.push([param, values]);
    else stock[key] = values;
  }
  const request = parseCandidateRequest(stock, mv);
  if (!given.length) return request;
  const ext = new Map<string, unknown>();
  request.ext = ext;
  for (const [param, values] of given) ext.set(param.name, param.parse(values, request));
  return request;
}

// --- The languages GET /resource_providers shares ---------------------------
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
