// What fits on a provider. First placement's capacity rule, used by
// allocations, the `resources` provider filter and allocation candidates
// alike, so the three can never disagree; then the capacity constraints
// extensions add beside it (below), declared once as data.
import type { InStatement, InValue, ResultSet } from '@libsql/client';
import { ALLOC, CONSUMER, INV, PROJECT, RC, RP } from '../db/columns.js';
import { num, str } from '../db/rows.js';
import { guard, inList, type WriteStatement } from '../db/write-batch.js';
import type { CandidateReadHook, CapacityRule, Piece, TakenView } from './candidates/index.js';
import type { ConsumerClaim } from './repo/allocations.js';
import { INCOMPLETE_CONSUMER_PROJECT_ID } from './repo/consumers.js';
import type { ClaimGuard, ClaimRefusal, ClaimView } from './writes/kernel.js';
import { ClaimRefused } from './writes/refusals.js';

export interface InventoryLimits {
  total: number;
  reserved: number;
  minUnit: number;
  maxUnit: number;
  stepSize: number;
  allocationRatio: number;
}

/**
 * Capacities are held within ±(2^53 - 1): an allocation_ratio may be as large
 * as 3.4e38 (or as negative), and a capacity beyond JavaScript's exact
 * integers cannot be read back from SQLite (libSQL throws on it). No sum of
 * amounts (each under 2^31) ever comes near the bound, so no decision changes.
 */
export const CAPACITY_BOUND = Number.MAX_SAFE_INTEGER;

/** Usable capacity: (total - reserved) * allocation_ratio, floored as placement's integer column. */
export function capacityOf(inv: InventoryLimits): number {
  const capacity = Math.floor((inv.total - inv.reserved) * inv.allocationRatio);
  return Math.max(-CAPACITY_BOUND, Math.min(CAPACITY_BOUND, capacity));
}

/**
 * `capacityOf` in SQL over an inventories row aliased `alias`, for queries
 * that filter or summarise in the database (CAST truncates like the floor of
 * a non-negative value, and reserved never exceeds total).
 */
export const capacitySql = (alias: string): string =>
  `MAX(-${CAPACITY_BOUND}, MIN(${CAPACITY_BOUND}, CAST((${alias}.${INV.total} - ${alias}.${INV.reserved}) * ${alias}.${INV.allocationRatio} AS INTEGER)))`;

/** Current usage of the inventories row aliased `alias`, summed through the (provider, class, used) index. */
export const usedSql = (alias: string): string => `COALESCE((SELECT SUM(a.${ALLOC.used}) FROM allocations a
  WHERE a.${ALLOC.resourceProviderId} = ${alias}.${INV.resourceProviderId} AND a.${ALLOC.resourceClassId} = ${alias}.${INV.resourceClassId}), 0)`;

/** Whether one request of `amount` respects min_unit, max_unit and step_size. */
export function amountFitsUnits(inv: InventoryLimits, amount: number): boolean {
  return amount >= inv.minUnit && amount <= inv.maxUnit && amount % inv.stepSize === 0;
}

/** Whether `amount` more fits on top of `used`. */
export function fits(inv: InventoryLimits, used: number, amount: number): boolean {
  return amountFitsUnits(inv, amount) && used + amount <= capacityOf(inv);
}

// --- Capacity constraints beside the inventories' own, declared once as data
// (as writes/rules.ts declares placement's own claim rules), with every path
// derived from the declaration: the candidates' capacity rule (a read hook),
// the ordinary claim path's decision and the one-batch claim's SQL guard (a
// claim guard), and the audit's and the dashboard's queries. An extension
// declares one (shared counters: src/ext/counters/declaration.ts) and
// installs what is derived here; changing the declaration changes every
// path (test/ext/constraint-declaration.test.ts).
//
// A constraint is linear, over keys of a provider (ProviderConstraint): for
// each key,
//   load = sum over the provider's classes of usage(class) x weight(class, key)
// must stay within the key's bound; or over keys of a project
// (ProjectConstraint: key = project x class, load = the project's usage of
// the class by the consumers that count). Either way a change of usage is
// refused only when it raises a load over its bound (raisesOverBound: a key
// already over, after an operator lowered it, may stay over while its load
// does not grow: upstream bug 2104040).

/** The rule of every constraint: a change of a key's load from `before` to `after` is refused when it takes the load over `bound` while raising it. */
export const raisesOverBound = (before: number, after: number, bound: number): boolean => after > bound && after > before;

/** The same rule in SQL, as of a write that raises the load (a new consumer's, or a raise the ordinary path granted). */
const overBoundCondition = (load: string, bound: string): string => `${load} > ${bound}`;

/** Column names and expressions of a declaration's tables (an expression is given the row's alias). */
export interface ProviderConstraint {
  /** For messages and tests. */
  readonly name: string;
  /** Each key's bound: rows of `table` (provider id, key, bound). */
  readonly bounds: { table: string; provider: string; key: string; bound: (row: string) => string };
  /** What one unit of a class on the provider weighs on a key: rows of `table` (provider id, class id, key, weight). */
  readonly weights: { table: string; provider: string; resourceClass: string; key: string; weight: (row: string) => string };
  /** The refusal's detail for a key its load would take over its bound. */
  describe(key: string, load: number, bound: number): string;
}

/** A provider's keys, indexed for the hot path: key i has bounds[i]. */
export interface ProviderKeys {
  names: string[];
  bounds: number[];
  /** class id -> weight on each key (by index) of one unit of the class. */
  weights: Map<number, number[]>;
}

/** A provider's keys with the load its current usage puts on each (candidates and headroom). */
export interface LoadedKeys extends ProviderKeys {
  loads: number[];
}

/** provider id -> its keys; only providers with keys appear. */
export type KeyTable = Map<number, ProviderKeys>;

// ---- the load, in TypeScript -------------------------------------------------

/** Adds what `amount` of class `classId` weighs on each key to `loads`. */
export function addLoad(keys: ProviderKeys, loads: number[], classId: number, amount: number): void {
  const perKey = keys.weights.get(classId);
  if (!perKey || amount === 0) return;
  for (let i = 0; i < perKey.length; i += 1) loads[i]! += amount * perKey[i]!;
}

/** The load on each key (by index) that `usage` of each class puts on the provider. */
export function loadsOf(keys: ProviderKeys, usageOf: (classId: number) => number): number[] {
  const loads = keys.bounds.map(() => 0);
  for (const classId of keys.weights.keys()) addLoad(keys, loads, classId, usageOf(classId));
  return loads;
}

/** The first key a change of usage from `before` to `after` takes over its bound while raising its load; null when allowed. */
export function exceededKey(
  keys: ProviderKeys,
  before: (classId: number) => number,
  after: (classId: number) => number,
): { name: string; bound: number; load: number } | null {
  const was = loadsOf(keys, before);
  const will = loadsOf(keys, after);
  for (let i = 0; i < will.length; i += 1) {
    if (raisesOverBound(was[i]!, will[i]!, keys.bounds[i]!)) return { name: keys.names[i]!, bound: keys.bounds[i]!, load: will[i]! };
  }
  return null;
}

/** Whether `pieces` (several may share a provider) fit the keys of their providers beside current loads. */
export function piecesFit(table: ReadonlyMap<number, LoadedKeys>, pieces: readonly Piece[], taken?: TakenView): boolean {
  for (let p = 0; p < pieces.length; p += 1) {
    const providerId = pieces[p]!.providerId;
    const keys = table.get(providerId);
    if (!keys) continue;
    const loads = keys.loads.slice();
    if (taken) taken.forEachOn(providerId, (classId, amount) => addLoad(keys, loads, classId, amount));
    else for (const piece of pieces) if (piece.providerId === providerId) addLoad(keys, loads, piece.classId, piece.amount);
    for (let i = 0; i < loads.length; i += 1) if (loads[i]! > keys.bounds[i]!) return false;
  }
  return true;
}

/** Rows as stored to a KeyTable (a weight naming an undeclared key is left out). */
export function keyTableOf(
  bounds: Iterable<{ providerId: number; name: string; bound: number }>,
  weights: Iterable<{ providerId: number; classId: number; key: string; weight: number }>,
): KeyTable {
  const table: KeyTable = new Map();
  for (const row of bounds) {
    let keys = table.get(row.providerId);
    if (!keys) table.set(row.providerId, (keys = { names: [], bounds: [], weights: new Map() }));
    keys.names.push(row.name);
    keys.bounds.push(row.bound);
  }
  for (const row of weights) {
    const keys = table.get(row.providerId);
    const index = keys?.names.indexOf(row.key) ?? -1;
    if (!keys || index < 0) continue;
    let perKey = keys.weights.get(row.classId);
    if (!perKey) keys.weights.set(row.classId, (perKey = keys.names.map(() => 0)));
    perKey[index] = row.weight;
  }
  return table;
}

// ---- the load, in SQL ---------------------------------------------------------

/** Usage of a weight row's (provider, class), through the (provider, class, used) index. */
const weightedUsageSql = (d: ProviderConstraint, w: string) => `(SELECT COALESCE(SUM(a.${ALLOC.used}), 0) FROM allocations a
  WHERE a.${ALLOC.resourceProviderId} = ${w}.${d.weights.provider} AND a.${ALLOC.resourceClassId} = ${w}.${d.weights.resourceClass})`;

/** The load on the key of bound row `b`, as of the statement. */
const loadSql = (d: ProviderConstraint, b: string) => {
  const { weights: w, bounds } = d;
  return `(SELECT COALESCE(SUM(${w.weight('w')} * ${weightedUsageSql(d, 'w')}), 0) FROM ${w.table} w
    WHERE w.${w.provider} = ${b}.${bounds.provider} AND w.${w.key} = ${b}.${bounds.key})`;
};

/**
 * The one-batch claim's condition: no key of a provider holding allocations
 * of the consumers bound as `consumers` is over its bound, as of the write (its
 * consumers are new: every load they touch rises).
 */
export const holdsSql = (d: ProviderConstraint, consumers: string): string =>
  `NOT EXISTS (SELECT 1 FROM ${d.bounds.table} b
    WHERE b.${d.bounds.provider} IN (SELECT ${ALLOC.resourceProviderId} FROM allocations WHERE ${ALLOC.consumerId} IN (${consumers}))
      AND ${overBoundCondition(loadSql(d, 'b'), d.bounds.bound('b'))})`;

/** Every key over its bound (the audit): provider uuid, name, total (the bound), load; by provider uuid, then key. */
export const overBoundSql = (d: ProviderConstraint): string =>
  `SELECT p.${RP.uuid}, b.${d.bounds.key} AS name, ${d.bounds.bound('b')} AS total, ${loadSql(d, 'b')} AS load
  FROM ${d.bounds.table} b JOIN resource_providers p ON p.${RP.id} = b.${d.bounds.provider}
  WHERE ${overBoundCondition(loadSql(d, 'b'), d.bounds.bound('b'))}
  ORDER BY p.${RP.uuid}, b.${d.bounds.key}`;

/** A provider's keys as JSON [[name, bound, load], ...] for a provider row aliased `p` (the dashboard). */
export const keysJsonSql = (d: ProviderConstraint, p: string): string =>
  `(SELECT json_group_array(json_array(b.${d.bounds.key}, ${d.bounds.bound('b')}, ${loadSql(d, 'b')}))
  FROM ${d.bounds.table} b WHERE b.${d.bounds.provider} = ${p}.${RP.id})`;

/** For the claim path's read batch: the bounds and weights of the providers named by uuid (two statements). */
export function snapshotStatements(d: ProviderConstraint, providerUuids: string[]): InStatement[] {
  const list = JSON.stringify(providerUuids);
  const ids = `SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} IN (SELECT value FROM json_each(?))`;
  const { bounds: b, weights: w } = d;
  return [
    {
      sql: `SELECT b.${b.provider} AS provider, b.${b.key} AS key, ${b.bound('b')} AS bound FROM ${b.table} b WHERE b.${b.provider} IN (${ids})`,
      args: [list],
    },
    {
      sql: `SELECT w.${w.provider} AS provider, w.${w.resourceClass} AS class, w.${w.key} AS key, ${w.weight('w')} AS weight
        FROM ${w.table} w WHERE w.${w.provider} IN (${ids})`,
      args: [list],
    },
  ];
}

/** snapshotStatements' results, as a KeyTable. */
export function snapshotOf([bounds, weights]: ResultSet[]): KeyTable {
  return keyTableOf(
    bounds!.rows.map((r) => ({ providerId: Number(r.provider), name: String(r.key), bound: Number(r.bound) })),
    weights!.rows.map((r) => ({ providerId: Number(r.provider), classId: Number(r.class), key: String(r.key), weight: Number(r.weight) })),
  );
}

/**
 * For allocation candidates: the keys of every provider where a class the
 * request names weighs on a key, with the current usage of each weighing
 * class, as one JSON value: one statement of the research batch, so a cloud
 * with keys answers in as many round trips as one without, from one
 * snapshot. On a cloud without any, the CASE stops at the empty table.
 */
export function candidateStatement(d: ProviderConstraint): (classNames: readonly string[]) => InStatement {
  const { bounds: b, weights: w } = d;
  // Written once from the declaration: a request binds its class names only.
  const sql = `WITH p(id) AS MATERIALIZED (SELECT DISTINCT w.${w.provider} FROM ${w.table} w
        WHERE w.${w.resourceClass} IN (SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} IN (SELECT value FROM json_each(?))))
      SELECT CASE WHEN EXISTS (SELECT 1 FROM ${b.table}) THEN json_object(
        'bounds', (SELECT json_group_array(json_array(b.${b.provider}, b.${b.key}, ${b.bound('b')}))
          FROM ${b.table} b WHERE b.${b.provider} IN (SELECT id FROM p)),
        'weights', (SELECT json_group_array(json_array(w.${w.provider}, w.${w.resourceClass}, w.${w.key}, ${w.weight('w')}, ${weightedUsageSql(d, 'w')}))
          FROM ${w.table} w WHERE w.${w.provider} IN (SELECT id FROM p))) END`;
  return (classNames) => ({ sql, args: [JSON.stringify(classNames)] });
}

/** candidateStatement's result: provider id -> keys and loads (empty on a cloud without any). */
export function candidateKeysOf(result: ResultSet | undefined): Map<number, LoadedKeys> {
  const value = JSON.parse(String(result?.rows[0]?.[0] ?? '{}')) as {
    bounds?: [number, string, number][];
    weights?: [number, number, string, number, number][];
  };
  const bounds = value.bounds ?? [];
  const weights = value.weights ?? [];
  const out = new Map<number, LoadedKeys>();
  if (bounds.length === 0) return out;
  const table = keyTableOf(
    bounds.map(([providerId, name, bound]) => ({ providerId, name, bound })),
    weights.map(([providerId, classId, key, weight]) => ({ providerId, classId, key, weight })),
  );
  const usage = new Map<string, number>();
  for (const [providerId, classId, , , used] of weights) usage.set(`${providerId}:${classId}`, used);
  for (const [providerId, keys] of table) {
    out.set(providerId, { ...keys, loads: loadsOf(keys, (classId) => usage.get(`${providerId}:${classId}`) ?? 0) });
  }
  return out;
}

// ---- the parts an extension installs -------------------------------------------

/**
 * A read hook whose state is a provider constraint's keys with the loads usage
 * puts on them: what headroom adds its simulated claims to and what a model of
 * the cloud recomputes from its own usage. Extensions find it among the
 * installed hooks (isConstraintReadHook), not by importing the one that
 * declares it: without such an extension there is none and nothing to load.
 */
export type ConstraintReadHook = CandidateReadHook<Map<number, LoadedKeys>> & { readonly constraint: ProviderConstraint };

export const isConstraintReadHook = (hook: CandidateReadHook): hook is ConstraintReadHook => 'constraint' in hook;

/** The candidates' capacity rule, as a read hook. */
export function constraintReadHook(d: ProviderConstraint): ConstraintReadHook {
  return {
    constraint: d,
    name: d.name,
    statement: candidateStatement(d),
    read: (result) => candidateKeysOf(result),
    capacityRule: (table): CapacityRule | null => (table.size ? { fits: (pieces, taken) => piecesFit(table, pieces, taken) } : null),
  };
}

/**
 * The write kernel's guard: the claim's snapshot reads the keys of the
 * providers it names, the ordinary path refuses a claim that raises a load
 * over its bound, and the one-batch claim's guard checks the same as of the
 * write. The providers' generation compare-and-swap protects what it read,
 * since only a claim, a reshape or an inventory change moves usage on a provider.
 */
export function constraintGuard(d: ProviderConstraint): ClaimGuard {
  return {
    name: d.name,
    snapshotStatements: (providerUuids) => snapshotStatements(d, providerUuids),
    decider: (results) => {
      const table = snapshotOf(results);
      return (claim) => {
        for (const id of claim.providerIds) {
          const keys = table.get(id);
          if (!keys) continue;
          const over = exceededKey(
            keys,
            (classId) => claim.usedBefore(id, classId),
            (classId) => claim.usedAfter(id, classId),
          );
          if (!over) continue;
          const onProvider = claim.entries.filter((entry) => entry.provider.id === id);
          const e = onProvider.find((entry) => keys.weights.has(entry.classId)) ?? onProvider[0]!;
          return {
            resourceClass: e.resourceClass,
            error: new ClaimRefused(
              `Unable to create allocation for '${e.resourceClass}' on resource provider '${e.provider.uuid}'. The requested amount would exceed the capacity. (${d.describe(over.name, over.load, over.bound)})`,
            ),
          };
        }
        return null;
      };
    },
    holdsSql: (consumers) => holdsSql(d, consumers),
  };
}

// ---- keys of a project ------------------------------------------------------------

/**
 * A constraint keyed by project and class: the project's usage of the class,
 * by the consumers that count, stays within the bound of (project, class),
 * the project's own bound, else every project's default (the row of
 * `everyProject`). The usage is a ledger kept by the extension's migration
 * (triggers), so a claim reads one row per class, whatever the size of the project.
 */
export interface ProjectConstraint {
  /** For messages and tests. */
  readonly name: string;
  /** Rows of `table` (project external id, class name, bound); project `everyProject` is every project's default. */
  readonly bounds: { table: string; project: string; resourceClass: string; bound: (row: string) => string; everyProject: string };
  /** The ledger: rows of `table` (project id, class id, used). */
  readonly usage: { table: string; project: string; resourceClass: string; used: (row: string) => string };
  /** SQL: true for a consumers row aliased `c` whose allocations count. */
  counted(c: string): string;
}

/** The bounds in force: every project's defaults, and each project's own (class name -> bound). */
export interface ProjectBounds {
  defaults: ReadonlyMap<string, number>;
  projects: ReadonlyMap<string, ReadonlyMap<string, number>>;
}

/** The bound of (project, class): the project's own, else the default, else none. */
export function projectBoundOf(bounds: ProjectBounds, project: string, resourceClass: string): number | undefined {
  return bounds.projects.get(project)?.get(resourceClass) ?? bounds.defaults.get(resourceClass);
}

/** The classes bounded for `project`, with their bound. */
export function boundsOfProject(bounds: ProjectBounds, project: string): Map<string, number> {
  const classes = new Set([...bounds.defaults.keys(), ...(bounds.projects.get(project)?.keys() ?? [])]);
  return new Map([...classes].map((rc) => [rc, projectBoundOf(bounds, project, rc)!]));
}

/** The same resolution in SQL, as of the statement, for a project (external id) and class name given as SQL expressions. */
export const projectBoundSql = (d: ProjectConstraint, project: string, resourceClass: string) => {
  const b = d.bounds;
  const row = (who: string) =>
    `(SELECT ${b.bound('l')} FROM ${b.table} l WHERE l.${b.project} = ${who} AND l.${b.resourceClass} = ${resourceClass})`;
  return `COALESCE(${row(project)},\n            ${row(`'${b.everyProject}'`)})`;
};

/** The ledger's usage of (project id, class id), SQL expressions, as of the statement (0 without a row). */
export const projectUsageSql = (d: ProjectConstraint, projectId: string, classId: string) => {
  const u = d.usage;
  return `COALESCE((SELECT ${u.used('u')} FROM ${u.table} u WHERE u.${u.project} = ${projectId} AND u.${u.resourceClass} = ${classId}), 0)`;
};

/** The bounds of `projects` and the defaults (every project's when undefined), as projectBoundsOf reads them. */
export function projectBoundsStatement(d: ProjectConstraint, projects?: readonly string[]): InStatement {
  const b = d.bounds;
  const named = projects === undefined ? undefined : [b.everyProject, ...projects];
  return {
    sql: `SELECT l.${b.project} AS project, l.${b.resourceClass} AS rc, ${b.bound('l')} AS bound FROM ${b.table} l${named ? ` WHERE l.${b.project} IN (${inList(named)})` : ''}`,
    args: named ?? [],
  };
}

export function projectBoundsOf(d: ProjectConstraint, result: ResultSet): ProjectBounds {
  const defaults = new Map<string, number>();
  const projects = new Map<string, Map<string, number>>();
  for (const r of result.rows) {
    const project = str(r, 'project');
    if (project === d.bounds.everyProject) defaults.set(str(r, 'rc'), num(r, 'bound'));
    else {
      const classes = projects.get(project) ?? new Map<string, number>();
      classes.set(str(r, 'rc'), num(r, 'bound'));
      projects.set(project, classes);
    }
  }
  return { defaults, projects };
}

/** The ledger of `projects` (every project when undefined), by project and class name, as projectUsageOf reads it. */
export function projectUsageStatement(d: ProjectConstraint, projects?: readonly string[]): InStatement {
  const u = d.usage;
  return {
    sql: `SELECT p.${PROJECT.externalId} AS project, rc.${RC.name} AS rc, ${u.used('u')} AS used
        FROM ${u.table} u JOIN projects p ON p.${PROJECT.id} = u.${u.project} JOIN resource_classes rc ON rc.${RC.id} = u.${u.resourceClass}
        WHERE ${u.used('u')} != 0${projects === undefined ? '' : ` AND p.${PROJECT.externalId} IN (${inList(projects)})`}`,
    args: projects === undefined ? [] : [...projects],
  };
}

/** (project, class) -> amount, from rows of project, rc, used. */
export function projectUsageOf(result: ResultSet): Map<string, number> {
  return new Map(result.rows.map((r) => [projectKey(str(r, 'project'), str(r, 'rc')), num(r, 'used')]));
}

export const projectKey = (project: string, resourceClass: string) => `${project}\u0000${resourceClass}`;

/** A (project, class) whose bound a change would cross: the bound, the usage before, and what the change adds. */
export interface ProjectCrossing {
  project: string;
  resourceClass: string;
  bound: number;
  usage: number;
  requested: number;
}

/** The first class a project's usage would cross its bound of when it changes by `change` (class -> amount; the candidates' rule and the claim's decision). */
export function projectCrossing(
  bounds: ProjectBounds,
  usage: ReadonlyMap<string, number>,
  project: string,
  change: Iterable<readonly [string, { before: number; after: number }]>,
): ProjectCrossing | null {
  for (const [resourceClass, { before, after }] of change) {
    const bound = projectBoundOf(bounds, project, resourceClass);
    if (bound === undefined) continue;
    if (raisesOverBound(before, after, bound))
      return { project, resourceClass, bound, usage: usage.get(projectKey(project, resourceClass)) ?? 0, requested: after - before };
  }
  return null;
}

/** One bounded class of a project as the audit reports it: bound, usage, what remains (negative when over). */
export interface ProjectKeyReport {
  bound: number;
  usage: number;
  remaining: number;
}

/** The audit: each bounded class of `project`, by class name. */
export function projectReport(bounds: ProjectBounds, usage: ReadonlyMap<string, number>, project: string): [string, ProjectKeyReport][] {
  return [...boundsOfProject(bounds, project)]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([rc, bound]) => {
      const used = usage.get(projectKey(project, rc)) ?? 0;
      return [rc, { bound, usage: used, remaining: bound - used }];
    });
}

/** The audit: every (project, class) at or over its bound (a bound of 0 is reached without usage), by project. */
export function atOrOverBound(bounds: ProjectBounds, usage: ReadonlyMap<string, number>): [string, Record<string, ProjectKeyReport>][] {
  const byProject = new Map<string, Record<string, ProjectKeyReport>>();
  for (const [k, used] of usage) {
    const [project, rc] = k.split('\u0000') as [string, string];
    const bound = projectBoundOf(bounds, project, rc);
    if (bound === undefined || used < bound) continue;
    const classes = byProject.get(project) ?? {};
    classes[rc] = { bound, usage: used, remaining: bound - used };
    byProject.set(project, classes);
  }
  for (const [project, classes] of bounds.projects) {
    for (const [rc, bound] of classes) {
      if (bound !== 0 || byProject.get(project)?.[rc]) continue;
      byProject.set(project, { ...byProject.get(project), [rc]: { bound, usage: 0, remaining: 0 } });
    }
  }
  return [...byProject].sort(([a], [b]) => a.localeCompare(b));
}

const projectOf = (claim: { projectId?: string | null }) => claim.projectId ?? INCOMPLETE_CONSUMER_PROJECT_ID;

/** How a project guard words and counts its refusal, and which consumer types count (the TypeScript side of `counted`). */
export interface ProjectGuardTerms {
  counts(consumerType: string | null): boolean;
  refusal(crossing: ProjectCrossing): ClaimRefusal;
}

/**
 * The write kernel's guard of a project constraint: the snapshot reads the
 * bounds of the claimed projects, their usage and what the claimed consumers
 * hold now; the ordinary path refuses a claim that raises a project's usage
 * of a class over its bound, and a grant that raises usage adds a check to
 * the write batch (the usage as of the write still within the bound), since
 * the providers' generations do not protect a project's usage across
 * providers: two racing claims never both pass. The one-batch claim's
 * condition checks, as of the write, every (project, class) its new
 * consumers hold (all of it raises).
 */
export function projectConstraintGuard(d: ProjectConstraint, terms: ProjectGuardTerms): ClaimGuard {
  const counted = d.counted('c');
  const u = d.usage;
  return {
    name: d.name,
    snapshotStatements: (_providers, consumers, claims) => {
      const projects = [...new Set(claims.map(projectOf))];
      return [
        projectBoundsStatement(d, projects),
        projectUsageStatement(d, projects),
        {
          sql: `SELECT p.${PROJECT.externalId} AS project, rc.${RC.name} AS rc, total(a.${ALLOC.used}) AS used
          FROM consumers c JOIN projects p ON p.${PROJECT.id} = c.${CONSUMER.projectId}
          JOIN allocations a ON a.${ALLOC.consumerId} = c.${CONSUMER.uuid}
          JOIN resource_classes rc ON rc.${RC.id} = a.${ALLOC.resourceClassId}
          WHERE c.${CONSUMER.uuid} IN (${inList(consumers)}) AND ${counted}
          GROUP BY p.${PROJECT.externalId}, rc.${RC.name}`,
          args: [...consumers],
        },
      ];
    },
    decider: ([boundRows, usageRows, heldRows]) => {
      const bounds = projectBoundsOf(d, boundRows!);
      const usage = projectUsageOf(usageRows!);
      const held = projectUsageOf(heldRows!);
      return (view: ClaimView) => {
        // What the claim asks, per (its consumers' project, class), among the consumers that count.
        const asked = new Map<string, { project: string; resourceClass: string; amount: number }>();
        const byConsumer = new Map(view.claims.map((c): [string, ConsumerClaim] => [c.uuid, c]));
        for (const entry of view.entries) {
          const claim = byConsumer.get(entry.consumer)!;
          if (!terms.counts(claim.consumerType ?? view.consumers.get(claim.uuid)?.type ?? null)) continue;
          const project = projectOf(claim);
          const k = projectKey(project, entry.resourceClass);
          const sum = asked.get(k) ?? { project, resourceClass: entry.resourceClass, amount: 0 };
          sum.amount += entry.amount;
          asked.set(k, sum);
        }
        const raised: [string, string][] = [];
        for (const [k, { project, resourceClass, amount }] of asked) {
          if (projectBoundOf(bounds, project, resourceClass) === undefined) continue;
          const before = usage.get(k) ?? 0;
          const after = before - (held.get(k) ?? 0) + amount;
          const crossing = projectCrossing(bounds, usage, project, [[resourceClass, { before, after }]]);
          if (crossing) return terms.refusal(crossing);
          // A grant that raises usage holds only while the usage as of the write stays within the bound.
          if (after > before) raised.push([project, resourceClass]);
        }
        return raised.length > 0 ? { checks: [raisedWithinBoundsCheck(d, raised)] } : null;
      };
    },
    holdsSql: (consumers) => `NOT EXISTS (SELECT 1 FROM consumers c JOIN allocations mine ON mine.${ALLOC.consumerId} = c.${CONSUMER.uuid}
          JOIN ${u.table} u ON u.${u.project} = c.${CONSUMER.projectId} AND u.${u.resourceClass} = mine.${ALLOC.resourceClassId}
          JOIN projects p ON p.${PROJECT.id} = c.${CONSUMER.projectId} JOIN resource_classes rc ON rc.${RC.id} = mine.${ALLOC.resourceClassId}
        WHERE c.${CONSUMER.uuid} IN (${consumers}) AND mine.${ALLOC.used} > 0 AND ${counted}
          AND ${overBoundCondition(u.used('u'), projectBoundSql(d, `p.${PROJECT.externalId}`, `rc.${RC.name}`))})`,
  };
}

/**
 * The ordinary path's check of a grant that raises usage: for every
 * [project, class] of the bound JSON list, the project's usage as of the
 * write is within the bound in force (a bound removed meanwhile fails it: the
 * claim is decided again).
 */
function raisedWithinBoundsCheck(d: ProjectConstraint, raised: readonly (readonly [string, string])[]): WriteStatement {
  const project = "json_extract(j.value, '$[0]')";
  const resourceClass = "json_extract(j.value, '$[1]')";
  const usage = projectUsageSql(
    d,
    `(SELECT ${PROJECT.id} FROM projects WHERE ${PROJECT.externalId} = ${project})`,
    `(SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} = ${resourceClass})`,
  );
  return guard(
    `NOT EXISTS (SELECT 1 FROM json_each(?) j\n          WHERE ${overBoundCondition(usage, projectBoundSql(d, project, resourceClass))})`,
    [JSON.stringify(raised)],
  );
}

// ---- capacity set aside -------------------------------------------------------------
//
// Capacity set aside from a constraint's keys by rows of a table, each spent
// by what its owner's consumers draw (holds on placement's own capacity;
// edge sites' slices of project limits): for each key,
//   usage(key) + sum over the key's rows of max(0, amount - drawn) <= bound(key)
// A draw moves usage from the row to the key's usage: the load stays; anyone
// else's claim finds the row's amount taken. As every constraint here, a change
// is refused only when it raises a key's load over its bound (raisesOverBound).

/**
 * The keys capacity is set aside from, each named by SQL expressions (one per
 * key column), with their usage and bound as of the statement: placement's
 * inventories (INVENTORY_KEYS) or a project constraint's keys (projectKeys).
 */
export interface SetAsideKeys {
  /** The key a claimed allocation aliased `mine`, of the consumer aliased `c`, weighs on. */
  claimed(mine: string, c: string): string[];
  /** SQL: whether the allocations of the consumer aliased `c` count (all of them when absent). */
  counted?(c: string): string;
  usage(key: readonly string[]): string;
  /** NULL where the key has no bound (nothing to exceed). */
  bound(key: readonly string[]): string;
}

/** Placement's own capacity, per (provider id, class id): the allocations against the inventory's capacity. */
export const INVENTORY_KEYS: SetAsideKeys = {
  claimed: (mine) => [`${mine}.${ALLOC.resourceProviderId}`, `${mine}.${ALLOC.resourceClassId}`],
  usage: ([provider, resourceClass]) => `COALESCE((SELECT SUM(a.${ALLOC.used}) FROM allocations a
    WHERE a.${ALLOC.resourceProviderId} = ${provider} AND a.${ALLOC.resourceClassId} = ${resourceClass}), 0)`,
  bound: ([provider, resourceClass]) =>
    `(SELECT ${capacitySql('inv')} FROM inventories inv WHERE inv.${INV.resourceProviderId} = ${provider} AND inv.${INV.resourceClassId} = ${resourceClass})`,
};

/** A project constraint's keys, per (project external id, class name): its ledger against the bound in force. */
export function projectKeys(d: ProjectConstraint): SetAsideKeys {
  const projectId = (project: string) => `(SELECT ${PROJECT.id} FROM projects WHERE ${PROJECT.externalId} = ${project})`;
  const classId = (resourceClass: string) => `(SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} = ${resourceClass})`;
  return {
    claimed: (mine, c) => [
      `(SELECT ${PROJECT.externalId} FROM projects WHERE ${PROJECT.id} = ${c}.${CONSUMER.projectId})`,
      `(SELECT ${RC.name} FROM resource_classes WHERE ${RC.id} = ${mine}.${ALLOC.resourceClassId})`,
    ],
    counted: d.counted,
    usage: ([project, resourceClass]) => projectUsageSql(d, projectId(project!), classId(resourceClass!)),
    bound: ([project, resourceClass]) => projectBoundSql(d, project!, resourceClass!),
  };
}

/** A set-aside, declared once: the keys it takes from, and the rows that set capacity aside. */
export interface SetAsideConstraint {
  /** For messages and tests. */
  readonly name: string;
  readonly keys: SetAsideKeys;
  /** Rows of `table`, keyed by the columns `key` (in the order of the keys' expressions); each row's amount and what its owner drew of it, as of the statement. */
  readonly setAside: { table: string; key: readonly string[]; amount: (row: string) => string; drawn: (row: string) => string };
}

/** The rule's load in TypeScript: a key's usage and what each of its rows still sets aside. */
export const setAsideLoad = (usage: number, rows: readonly { amount: number; drawn: number }[]): number =>
  usage + rows.reduce((n, r) => n + Math.max(0, r.amount - r.drawn), 0);

/** What the rows of `key` still set aside, as of the statement (their own alias, so a caller's row keeps its name). */
const setAsideSql = (d: SetAsideConstraint, key: readonly string[]) => {
  const { table, key: columns, amount, drawn } = d.setAside;
  const same = columns.map((column, i) => `sa.${column} = ${key[i]}`).join(' AND ');
  return `(SELECT total(MAX(0, ${amount('sa')} - ${drawn('sa')})) FROM ${table} sa WHERE ${same})`;
};

/** The rule broken in SQL, as of the statement: the key's usage and its rows exceed its bound. */
export const overSetAsideSql = (d: SetAsideConstraint, key: readonly string[]): string =>
  `${d.keys.usage(key)} + ${setAsideSql(d, key)} > ${d.keys.bound(key)}`;

/** A set-aside row aliased `row` as the ordinary path and the audit read it: amount, drawn, usage and bound of its key. */
export const setAsideColumnsSql = (d: SetAsideConstraint, row: string): string => {
  const key = d.setAside.key.map((column) => `${row}.${column}`);
  return `${d.setAside.amount(row)} AS amount, ${d.setAside.drawn(row)} AS drawn, ${d.keys.usage(key)} AS used, ${d.keys.bound(key)} AS bound`;
};

/**
 * The one-batch claim's condition: no key a claimed allocation (of the
 * consumers bound as `consumers`, among those that count) weighs on and some
 * row sets capacity aside from is over its bound, as of the write (its
 * consumers are new: every load they touch rises). No row at all: one probe.
 */
export function setAsideHoldsSql(d: SetAsideConstraint, consumers: string): string {
  const key = d.keys.claimed('mine', 'c');
  const { table, key: columns } = d.setAside;
  const rowOfKey = columns.map((column, i) => `r.${column} = ${key[i]}`).join(' AND ');
  return `NOT EXISTS (SELECT 1 FROM ${table}) OR NOT EXISTS (SELECT 1 FROM consumers c JOIN allocations mine ON mine.${ALLOC.consumerId} = c.${CONSUMER.uuid}
      WHERE c.${CONSUMER.uuid} IN (${consumers}) AND EXISTS (SELECT 1 FROM ${table} r WHERE ${rowOfKey})${d.keys.counted ? ` AND ${d.keys.counted('c')}` : ''}
        AND ${overSetAsideSql(d, key)})`;
}

/**
 * The ordinary path's check of a grant that raises loads: for every key of
 * the bound JSON list (each a JSON array of the key's values), the rule holds
 * as of the write.
 */
export function setAsideWithinBoundsCheck(d: SetAsideConstraint, keys: readonly (readonly InValue[])[]): WriteStatement {
  const key = d.setAside.key.map((_, i) => `json_extract(j.value, '$[${i}]')`);
  return guard(`NOT EXISTS (SELECT 1 FROM json_each(?) j WHERE ${overSetAsideSql(d, key)})`, [JSON.stringify(keys)]);
}

/** The audit: every key some row sets capacity aside from whose load is over its bound (key columns, usage, set_aside, bound), by key. */
export function overSetAsideStatement(d: SetAsideConstraint): InStatement {
  const { table, key: columns } = d.setAside;
  const key = columns.map((column) => `k.${column}`);
  return {
    sql: `SELECT ${key.join(', ')}, ${d.keys.usage(key)} AS used, ${setAsideSql(d, key)} AS set_aside, ${d.keys.bound(key)} AS bound
      FROM (SELECT DISTINCT ${columns.join(', ')} FROM ${table}) k WHERE ${overSetAsideSql(d, key)} ORDER BY ${key.join(', ')}`,
    args: [],
  };
}
