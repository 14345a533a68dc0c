// Parses the GET /allocation_candidates query string into request groups
// (one per suffix) and request-wide parameters, per microversion, with
// upstream's error wording (placement/lib.py RequestGroup/RequestWideParams
// and the handler's jsonschema). Pure: no database, no hono.
import { pyRepr } from '../../shared/validation-messages.js';
import { isUuidLike, normalizeUuid } from '../../shared/uuid.js';
import { CANDIDATE_TRAITS, parseMemberOf, parsePlainTraits, parseResources, parseTraitQuery, type TraitQuery } from '../query.js';
import type { Microversion } from '../../microversion.js';
import { MV } from '../versions.js';
import type { CandidateParam } from './hooks.js';
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
   * parameter (hooks.ts CandidateParam); absent for stock requests.
   */
  alternatives?: string[][];
  /** The installed extensions' parameters given with the request, parsed, by parameter name (hooks.ts extParam); absent for stock requests. */
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
// grammar and their meaning belong to the extensions (hooks.ts CandidateParam).

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
