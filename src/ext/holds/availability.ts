// GET /ext/holds/availability (docs/holds.md): the earliest start at or after
// `after` (now at the latest) at which an allocation-candidates query fits for
// `duration`, beside allocations that end (leases) and holds' windows; a gang
// with `count` (ext_domain allowed) as GET /ext/gang_candidates takes it.
// The candidates engine answers unchanged (its entry over a model given
// whole, candidatesFromModel), once per start tried, with the usage of the
// window [s, s + duration): each (provider, class) at its greatest load over
// the window (calendar.ts), so what it finds fits at every instant of it.
// The installed read hooks read their state as of now (device taints), the
// shared counters' loads from the window's usage; holds' own hook is left
// out (the usage already counts every hold's window).
import type { BatchReader } from '../../db/client.js';
import { invalid } from '../../errors.js';
import type { Microversion } from '../../microversion.js';
import type { CandidateEngine, CandidateReadHook } from '../../placement/candidates/index.js';
import { type CandidateOptions, type CandidatesBody, candidatesFromModel } from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import type { Usage } from '../../placement/candidates/cloud-model.js';
import { isConstraintReadHook, loadsOf, type LoadedKeys, type SetAsideConstraint } from '../../placement/capacity.js';
import { domainSearchOf, type GangQuery, gangSearchOptions, parseGangQuery } from '../gangs/index.js';
import { readDomainFacts } from '../gangs/domains.js';
import { rankGangs, usedProviders } from '../gangs/assemble.js';
import { earliestFit } from './calendar.js';
import { type CloudCalendar, readCloudCalendar } from './calendar-repo.js';
import { holdParam, isHeldCapacityHook, untilParam } from './candidates.js';

/** What availability takes from the app's engine: its parser (with the installed extensions' parameters), options and read hooks. */
export type AvailabilityEngine = Pick<CandidateEngine, 'parse' | 'options' | 'hooks'>;

export type Allocations = Record<string, { resources: Record<string, number> }>;

export interface AvailabilityAnswer {
  /** The earliest start, null when the query never fits (not even once everything that ends has ended). */
  start: string | null;
  end: string | null;
  /** The one provider the answer uses, when it uses one (null otherwise). */
  resource_provider_uuid: string | null;
  /** What fits from `start`: one allocation request, or a gang's `count` members. */
  allocation_requests: { allocations: Allocations; mappings?: Record<string, string[]> }[];
  /** A gang's domain (the aggregate), null with ext_domain=any; absent without `count`. */
  domain?: string | null;
}

const NEVER: AvailabilityAnswer = { start: null, end: null, resource_provider_uuid: null, allocation_requests: [] };

/** Keys the gang search takes (count, ext_domain, ext_domain_member_of): a gang query. */
const isGang = (query: Record<string, string[]>) => ['count', 'ext_domain', 'ext_domain_member_of'].some((k) => k in query);

/** The allocation requests of an answer, in the dict form whatever the microversion (before 1.12 the engine lists them). */
function requestsOf(body: CandidatesBody): AvailabilityAnswer['allocation_requests'] {
  return body.allocation_requests.map((raw) => {
    if (!Array.isArray(raw.allocations)) {
      const dict = raw as { allocations: Allocations; mappings?: Record<string, string[]> };
      return dict.mappings ? { allocations: dict.allocations, mappings: dict.mappings } : { allocations: dict.allocations };
    }
    const allocations: Allocations = {};
    for (const piece of raw.allocations as { resource_provider: { uuid: string }; resources: Record<string, number> }[])
      allocations[piece.resource_provider.uuid] = { resources: piece.resources };
    return { allocations };
  });
}

/** The read hooks to search with under `usage`: each reads its own statement's result, the shared counters' loads come from `usage`. */
function hooksUnder(cloud: CloudCalendar, usage: Usage): CandidateReadHook[] {
  return [...cloud.hookResults].map(([hook, result]) => {
    if (isConstraintReadHook(hook)) {
      const table = hook.read(result);
      return { ...hook, read: () => countersUnder(table, usage) };
    }
    return { ...hook, read: () => hook.read(result) };
  });
}

function countersUnder(table: ReadonlyMap<number, LoadedKeys>, usage: Usage): Map<number, LoadedKeys> {
  const out = new Map<number, LoadedKeys>();
  for (const [providerId, keys] of table)
    out.set(providerId, { ...keys, loads: loadsOf(keys, (classId) => usage.get(providerId)?.get(classId) ?? 0) });
  return out;
}

/** The engine's options over a model given whole: stable order, no cap, no time budget, no tree cache. */
function modelOptions(base: CandidateOptions, hooks: CandidateReadHook[], gang: boolean): CandidateOptions {
  const options: CandidateOptions = {
    ...base,
    randomize: false,
    maxCandidates: 0,
    timeBudgetMs: 0,
    treeCacheProviders: 0,
    trees: undefined,
    metrics: undefined,
    hooks,
  };
  return gang ? gangSearchOptions(options) : { ...options, generationStrategy: 'depth-first' };
}

/**
 * A necessary condition the engine's own rules start from (its candidate
 * rows): every class asked is offered somewhere with room for the smallest
 * amount asked of it. Checked before each search, so the starts where
 * nothing can fit cost no search. Always true with ext_first_of (a class
 * need not be in every variant) or a class the cloud does not know (the
 * engine words the error).
 */
function candidateRowsCheck(cloud: CloudCalendar, request: CandidateRequest): (usage: Usage) => boolean {
  const smallest = new Map<number, number>();
  for (const group of request.groups)
    for (const [name, amount] of group.resources) {
      const classId = cloud.lookups.classIdByName.get(name);
      if (classId === undefined) return () => true;
      smallest.set(classId, Math.min(amount, smallest.get(classId) ?? amount));
    }
  if (request.alternatives?.length) return () => true;
  const rows = new Map<number, { providerId: number; capacity: number }[]>([...smallest.keys()].map((c) => [c, []]));
  for (const root of cloud.model.roots())
    for (const provider of cloud.model.tree(root))
      for (const inv of provider.inventories) rows.get(inv.classId)?.push({ providerId: provider.id, capacity: inv.capacity });
  return (usage) =>
    [...smallest].every(([classId, amount]) =>
      rows.get(classId)!.some((r) => r.capacity - (usage.get(r.providerId)?.get(classId) ?? 0) >= amount),
    );
}

/** What fits from the earliest start found: the requests, and a gang's domain. */
export interface Fit {
  requests: AvailabilityAnswer['allocation_requests'];
  domain?: string | null;
}

/**
 * The earliest start s >= `fromMs` at which `request` (its first candidate in
 * stable order; with `gang`, the tightest domain's gang, read through
 * `reader`) fits over [s, s + durationMs) in `cloud`, or null.
 */
export async function earliestCandidate(
  cloud: CloudCalendar,
  request: CandidateRequest,
  mv: Microversion,
  base: CandidateOptions,
  window: { fromMs: number; durationMs: number },
  gang?: { query: GangQuery; reader: BatchReader },
): Promise<{ startMs: number; found: Fit } | null> {
  const asked: CandidateRequest = { ...request, limit: gang ? null : 1 };
  const mayFit = candidateRowsCheck(cloud, request);
  return earliestFit(cloud.calendar, window.fromMs, window.durationMs, async (usage): Promise<Fit | null> => {
    if (!mayFit(usage)) return null;
    const options = modelOptions(base, hooksUnder(cloud, usage), gang !== undefined);
    const body = await candidatesFromModel({ model: cloud.model, usage, lookups: cloud.lookups }, asked, mv, options);
    if (!gang) return body.allocation_requests.length ? { requests: requestsOf(body).slice(0, 1) } : null;
    const facts = await readDomainFacts(gang.reader, gang.query.domain === 'any' ? [] : gang.query.domains, usedProviders(body));
    const found = domainSearchOf(body, facts, gang.query, false);
    const [best] = rankGangs(found.gangs, { ...gang.query, limit: 1 });
    return best ? { requests: best.allocation_requests, domain: best.domain } : null;
  });
}

/**
 * The earliest start of `query` (the GET query less `duration` and `after`)
 * for `durationMs`, at `afterMs` or later. Throws the engine's 400s for a
 * bad query; ext_until and ext_hold are refused (a window's end is the
 * duration's, and drawing from a hold is not asked here). Holds count as
 * their declaration `d` counts them.
 */
export async function findAvailability(
  reader: BatchReader,
  d: SetAsideConstraint,
  engine: AvailabilityEngine,
  mv: Microversion,
  query: Record<string, string[]>,
  window: { durationMs: number; afterMs: number; nowMs: number },
): Promise<AvailabilityAnswer> {
  for (const param of [untilParam, holdParam])
    if (param.name in query)
      throw invalid(`Invalid query string parameters: '${param.name}' is not taken here (the window is [start, start + duration))`);
  const gangQuery = isGang(query) ? parseGangQuery(query, false) : null;
  const request: CandidateRequest = engine.parse(gangQuery ? gangQuery.rest : query, mv);
  // Holds' own hook judges claims as of now; the calendar's usage counts every hold over the window instead, as `d` counts it.
  const hooks = engine.hooks.filter((hook) => !isHeldCapacityHook(hook));
  const classNames = [...new Set(request.groups.flatMap((g) => [...g.resources.keys()]))];
  const base = engine.options();
  const cloud = await readCloudCalendar(reader, d, window.nowMs, hooks, classNames, base);
  const fit = await earliestCandidate(
    cloud,
    request,
    mv,
    base,
    { fromMs: Math.max(window.nowMs, window.afterMs), durationMs: window.durationMs },
    gangQuery ? { query: gangQuery.gang, reader } : undefined,
  );
  if (!fit) return gangQuery ? { ...NEVER, domain: null } : NEVER;
  const { requests } = fit.found;
  const providers = new Set(requests.flatMap((r) => Object.keys(r.allocations)));
  return {
    start: new Date(fit.startMs).toISOString(),
    end: new Date(fit.startMs + window.durationMs).toISOString(),
    resource_provider_uuid: providers.size === 1 ? [...providers][0]! : null,
    allocation_requests: requests,
    ...(gangQuery ? { domain: fit.found.domain ?? null } : {}),
  };
}
