// What if (docs/simulate.md): POST /ext/simulate and GET /ext/defrag. Both
// read the cloud once (snapshot.ts, one read batch), work on a copy of it
// (world.ts) and ask the candidates engine over that copy
// (engine-adapter.ts): the same parser, rules, taints and search that will
// later decide, and nothing written.
import * as z from 'zod';
import type { BatchReader } from '../../db/client.js';
import type { WriteHooks } from '../../placement/writes/kernel.js';
import { Microversion } from '../../microversion.js';
import type { CandidateOptions } from '../../placement/candidates/index.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import type { Headroom } from '../headroom/headroom.js';
import { gangsThatFit } from '../headroom/gangs.js';
import { parseGangQuery } from '../gangs/query.js';
import { applyChanges, type ChangeReport, changeSchema, isSharing, type RemovedPlacement } from './changes.js';
import { candidatesOver, type EngineView, engineView, headroomOver, type WhatIfEngine } from './engine-adapter.js';
import { MAX_VERSION } from '../../placement/versions.js';
import { readWorld } from './snapshot.js';
import {
  type AllocationsBody,
  allocationsBody,
  amountsOf,
  copyWorld,
  dashboardFigures,
  type DashboardFigures,
  type OverCapacity,
  overCapacity,
  type UsageTable,
  usageOf,
  type World,
  type WorldAllocation,
} from './world.js';
import { capacityOf } from '../../placement/capacity.js';

export { defragPlan, type DefragPlan } from './defrag.js';

/** Most displaced consumers given a place to go (the rest are counted). */
export const MAX_PLACED = 1000;

/** Where the displaced could go is asked at the latest microversion (allocations keyed by provider). */
const LATEST = Microversion.parse(MAX_VERSION)!;

export const simulateSchema = z.strictObject({
  changes: z.array(changeSchema).max(1000),
  queries: z.array(z.strictObject({ name: z.string().min(1).max(255), query: z.string().max(65_536) })).max(20),
  /** The dashboard's "nearly full" threshold (its `over`), for the attention figures. */
  threshold_percent: z.number().min(0).max(1000).default(80),
  /** Also answer each query's count per tree (root uuid), before and after. */
  per_tree: z.boolean().default(false),
});
export type SimulateBody = z.infer<typeof simulateSchema>;

export interface QueryHeadroom {
  total: number;
  /** Trees with room for at least one. */
  trees: number;
  /** With count=N (gangs): per domain, how many more gangs of N distinct hosts fit. */
  domains?: { domain: string | null; gangs: number }[];
  /** With per_tree: true, the count of every tree with room, as GET /ext/headroom lists them. */
  per_tree?: { root_provider_uuid: string; count: number }[];
}

export interface DisplacedConsumer {
  consumer_uuid: string;
  reason: 'over_capacity' | 'tree_removed';
  /** Where it is now (after the changes: a resized consumer at its new size). */
  from: AllocationsBody;
  /** Where it could go: the first candidate for its resources, the consumers before it placed first; null when none. */
  could_go: AllocationsBody | null;
}

export interface SimulationAnswer {
  changes: ChangeReport[];
  queries: { name: string; query: string; before: QueryHeadroom; after: QueryHeadroom }[];
  displaced: DisplacedConsumer[];
  /** Displaced consumers beyond MAX_PLACED, not given a place. */
  displaced_not_placed?: number;
  removed_consumers: string[];
  over_capacity: { before: OverCapacity[]; after: OverCapacity[] };
  dashboard: { before: DashboardFigures; after: DashboardFigures };
}

/** A query string as the routes read one (every key's values, trimmed). */
export function queryRecord(query: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [key, value] of new URLSearchParams(query.startsWith('?') ? query.slice(1) : query)) (out[key] ??= []).push(value.trim());
  return out;
}

interface ParsedQuery {
  name: string;
  query: string;
  request: CandidateRequest;
  gang: ReturnType<typeof parseGangQuery>['gang'] | null;
}

function parseQuery(name: string, query: string, mv: Microversion, engine: WhatIfEngine): ParsedQuery {
  const record = queryRecord(query);
  if (record.count) {
    const { gang, rest } = parseGangQuery(record);
    return { name, query, request: engine.parse(rest, mv), gang };
  }
  return { name, query, request: engine.parse(record, mv), gang: null };
}

async function measure(
  view: EngineView,
  domains: DomainRoots,
  usage: UsageTable,
  q: ParsedQuery,
  mv: Microversion,
  options: CandidateOptions,
  perTree: boolean,
) {
  const headroom: Headroom = await headroomOver(view, usage, q.request, mv, options);
  const answer: QueryHeadroom = { total: headroom.total, trees: headroom.trees.length };
  if (perTree) answer.per_tree = headroom.trees;
  if (q.gang) answer.domains = gangDomains(domains, headroom, q.gang);
  return { answer, headroom };
}

/** Aggregate uuid -> its root members (hosts), as gangs/domains.ts reads them. */
type DomainRoots = Map<string, Set<string>>;

function gangDomainsOf(world: World): DomainRoots {
  const uuidOfAggregate = new Map([...world.aggregateIdByUuid].map(([uuid, id]) => [id, uuid]));
  const rootsOf: DomainRoots = new Map();
  for (const p of world.providers.values()) {
    if (p.id !== p.rootId) continue;
    for (const agg of p.aggregates) {
      const uuid = uuidOfAggregate.get(agg);
      if (uuid === undefined) continue;
      let roots = rootsOf.get(uuid);
      if (!roots) rootsOf.set(uuid, (roots = new Set()));
      roots.add(p.uuid);
    }
  }
  return rootsOf;
}

/** As GET /ext/headroom?count=N (headroom/gangs.ts), over the world's domains. */
function gangDomains(all: DomainRoots, headroom: Headroom, gang: NonNullable<ParsedQuery['gang']>): NonNullable<QueryHeadroom['domains']> {
  const perTree = new Map(headroom.trees.map((t) => [t.root_provider_uuid, t.count]));
  if (gang.domain === 'any') {
    const gangs = gangsThatFit([...perTree.values()], gang.count);
    return gangs > 0 ? [{ domain: null, gangs }] : [];
  }
  const rootsOf = gang.domains ? new Map([...all].filter(([uuid]) => gang.domains!.includes(uuid))) : all;
  const domains: NonNullable<QueryHeadroom['domains']> = [];
  for (const [domain, roots] of rootsOf) {
    const gangs = gangsThatFit(
      [...roots].map((root) => perTree.get(root) ?? 0),
      gang.count,
    );
    if (gangs > 0) domains.push({ domain, gangs });
  }
  return domains.sort((a, b) => b.gangs - a.gangs || (a.domain ?? '').localeCompare(b.domain ?? ''));
}

/**
 * The consumers that no longer fit where they are: on each inventory over
 * capacity after the changes, the fewest consumers (largest amount there
 * first, then by uuid) whose leaving brings it within capacity.
 */
function overCapacityConsumers(world: World, usage: UsageTable): string[] {
  const out = new Set<string>();
  const onInventory = new Map<string, { uuid: string; used: number }[]>();
  for (const c of world.consumers.values()) {
    for (const a of c.allocations) {
      const key = `${a.providerId}:${a.classId}`;
      const list = onInventory.get(key);
      if (list) list.push({ uuid: c.uuid, used: a.used });
      else onInventory.set(key, [{ uuid: c.uuid, used: a.used }]);
    }
  }
  for (const p of world.providers.values()) {
    for (const inv of p.inventories) {
      let used = usage.get(p.id)?.get(inv.classId) ?? 0;
      const capacity = capacityOf(inv);
      if (used <= capacity) continue;
      const here = (onInventory.get(`${p.id}:${inv.classId}`) ?? []).sort((a, b) => b.used - a.used || (a.uuid < b.uuid ? -1 : 1));
      for (const c of here) {
        if (used <= capacity) break;
        if (out.has(c.uuid)) {
          used -= c.used;
          continue;
        }
        out.add(c.uuid);
        used -= c.used;
      }
    }
  }
  return [...out].sort();
}

/** A single-group request for exactly what a consumer holds (its amounts per class), at the latest microversion's rules. */
export function resourcesQuery(amounts: ReadonlyMap<string, number>): string {
  return `resources=${[...amounts]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, amount]) => `${name}:${amount}`)
    .join(',')}`;
}

/** Allocations from a candidate's answer (provider uuid -> resources) as the world's rows. */
export function allocationsFromBody(
  world: World,
  body: AllocationsBody,
  idOfUuid: ReadonlyMap<string, number> = new Map([...world.providers.values()].map((p) => [p.uuid, p.id])),
): WorldAllocation[] {
  const rows: WorldAllocation[] = [];
  for (const [uuid, { resources }] of Object.entries(body)) {
    for (const [name, used] of Object.entries(resources))
      rows.push({ providerId: idOfUuid.get(uuid)!, classId: world.classIdByName.get(name)!, used });
  }
  return rows;
}

async function placeDisplaced(
  world: World,
  usageAfter: UsageTable,
  view: EngineView,
  displaced: { uuid: string; reason: DisplacedConsumer['reason']; from: AllocationsBody; amounts: Map<string, number> }[],
  engine: WhatIfEngine,
  options: CandidateOptions,
): Promise<DisplacedConsumer[]> {
  // The displaced leave first; then each takes the first candidate for its resources, in turn.
  const usage: UsageTable = new Map([...usageAfter].map(([id, perClass]) => [id, new Map(perClass)]));
  const take = (rows: readonly WorldAllocation[], sign: 1 | -1) => {
    for (const a of rows) {
      let perClass = usage.get(a.providerId);
      if (!perClass) usage.set(a.providerId, (perClass = new Map()));
      perClass.set(a.classId, (perClass.get(a.classId) ?? 0) + sign * a.used);
    }
  };
  for (const d of displaced) take(world.consumers.get(d.uuid)?.allocations ?? [], -1);
  // Holds' rule reads where each consumer is: with holds, the view follows the displaced (gone, then each where it went, with no end).
  const followed = world.holds.length > 0 ? copyWorld(world) : null;
  const move = (uuid: string, rows: WorldAllocation[]) => {
    const c = followed?.consumers.get(uuid);
    if (c) Object.assign(c, { allocations: rows, leaseEndsAtMs: null, drawnFrom: null });
  };
  for (const d of displaced) move(d.uuid, []);
  let current = followed ? view.withHoldsOf(followed) : view;
  const held = new Set(world.holds.flatMap((h) => h.amounts.map((a) => `${a.providerId} ${a.classId}`)));
  const idOfUuid = new Map([...world.providers.values()].map((p) => [p.uuid, p.id]));
  const out: DisplacedConsumer[] = [];
  for (const d of displaced) {
    const request = engine.parse(queryRecord(`${resourcesQuery(d.amounts)}&limit=1`), LATEST);
    const body = await candidatesOver(current, usage, request, LATEST, options);
    const first = body.allocation_requests[0] as { allocations: AllocationsBody } | undefined;
    if (first) {
      const rows = allocationsFromBody(world, first.allocations, idOfUuid);
      take(rows, 1);
      if (followed) {
        move(d.uuid, rows);
        // Only a placement on held capacity changes what the holds' rule reads.
        if (rows.some((a) => held.has(`${a.providerId} ${a.classId}`))) current = view.withHoldsOf(followed);
      }
    }
    out.push({ consumer_uuid: d.uuid, reason: d.reason, from: d.from, could_go: first ? first.allocations : null });
  }
  return out;
}

/** What a simulation takes from the app besides the database: its engine, claim rules, uuids, and now by its clock (Deps). */
export interface SimulationDeps {
  engine: WhatIfEngine;
  writeHooks: WriteHooks;
  newId(): string;
  /** The one instant the whole simulation is judged at, as the real requests take theirs (Deps.clock). */
  nowMs: number;
}

export async function simulate(reader: BatchReader, body: SimulateBody, mv: Microversion, deps: SimulationDeps): Promise<SimulationAnswer> {
  const { engine } = deps;
  // Queries are checked before anything is read: a query placement would refuse is refused with its words.
  const queries = body.queries.map((q) => parseQuery(q.name, q.query, mv, engine));
  const before = await readWorld(reader, engine.hooks);
  return simulateOver(reader, before, body, queries, mv, deps);
}

async function simulateOver(
  reader: BatchReader,
  world: World,
  body: SimulateBody,
  queries: ParsedQuery[],
  mv: Microversion,
  deps: SimulationDeps,
): Promise<SimulationAnswer> {
  const { engine } = deps;
  // Everything about the cloud as it is, then the changes applied to the world in place (it is this request's own copy).
  // One instant for the whole simulation: a hold's window, a gang's lease and every query's held capacity are judged at it.
  const { nowMs } = deps;
  const options = engine.options();
  const viewBefore = engineView(world, engine.hooks, nowMs);
  const usageBefore = usageOf(world);
  const overBefore = overCapacity(world, usageBefore);
  const dashboardBefore = dashboardFigures(world, body.threshold_percent, usageBefore);
  const domainsBefore = gangDomainsOf(world);
  const { reports, removed } = await applyChanges(world, body.changes, {
    reader,
    engine,
    writeHooks: deps.writeHooks,
    mv,
    nowMs,
    newId: deps.newId,
  });
  const viewAfter = engineView(world, engine.hooks, nowMs);
  const usageAfter = usageOf(world);
  const answers: SimulationAnswer['queries'] = [];
  for (const q of queries) {
    const b = await measure(viewBefore, domainsBefore, usageBefore, q, mv, options, body.per_tree);
    const a = await measure(viewAfter, gangDomainsOf(world), usageAfter, q, mv, options, body.per_tree);
    answers.push({ name: q.name, query: q.query, before: b.answer, after: a.answer });
  }
  const displaced = [
    ...removed
      .filter((r): r is RemovedPlacement & { reason: 'tree_removed' } => r.reason === 'tree_removed')
      .map((r) => ({ uuid: r.consumer_uuid, reason: r.reason, from: r.from, amounts: amountsOfBody(r.from) })),
    ...overCapacityConsumers(world, usageAfter).map((uuid) => {
      const c = world.consumers.get(uuid)!;
      return { uuid, reason: 'over_capacity' as const, from: allocationsBody(world, c.allocations), amounts: amountsOf(world, c) };
    }),
  ];
  const placed = await placeDisplaced(world, usageAfter, viewAfter, displaced.slice(0, MAX_PLACED), engine, options);
  return {
    changes: reports,
    queries: answers,
    displaced: placed,
    ...(displaced.length > MAX_PLACED ? { displaced_not_placed: displaced.length - MAX_PLACED } : {}),
    removed_consumers: removed.filter((r) => r.reason === 'consumer_removed').map((r) => r.consumer_uuid),
    over_capacity: { before: overBefore, after: overCapacity(world, usageAfter) },
    dashboard: { before: dashboardBefore, after: dashboardFigures(world, body.threshold_percent, usageAfter) },
  };
}

function amountsOfBody(body: AllocationsBody): Map<string, number> {
  const amounts = new Map<string, number>();
  for (const { resources } of Object.values(body))
    for (const [name, n] of Object.entries(resources)) amounts.set(name, (amounts.get(name) ?? 0) + n);
  return amounts;
}

export { isSharing };
