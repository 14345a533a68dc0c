// Capacity constraints beside the inventories' own, declared once as data
// (as writes/rules.ts declares placement's own claim rules), with every path
// derived from the declaration: the candidates' capacity rule (a read hook),
// the ordinary claim path's decision and the one-batch claim's SQL guard (a
// claim guard), and the audit's and the dashboard's queries. An extension
// declares one (shared counters: src/ext/counters/declaration.ts) and
// installs what is derived here; changing the declaration changes every
// path (test/ext/constraint-declaration.test.ts).
//
// A constraint is linear, over keys of a provider: for each key,
//   load = sum over the provider's classes of usage(class) x weight(class, key)
// must stay within the key's bound; a change of usage is refused only when it
// raises a load over its bound (a key already over, after an operator lowered
// it, may stay over while its load does not grow: upstream bug 2104040).
import type { InStatement, ResultSet } from '@libsql/client';
import { ALLOC, RC, RP } from '../db/columns.js';
import type { CandidateReadHook, CapacityRule, Piece, TakenView } from './candidates/hooks.js';
import type { ClaimGuard } from './writes/hooks.js';
import { ClaimRefused } from './writes/refusals.js';

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
    if (will[i]! > keys.bounds[i]! && will[i]! > was[i]!) return { name: keys.names[i]!, bound: keys.bounds[i]!, load: will[i]! };
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
const usedSql = (d: ProviderConstraint, w: string) => `(SELECT COALESCE(SUM(a.${ALLOC.used}), 0) FROM allocations a
  WHERE a.${ALLOC.resourceProviderId} = ${w}.${d.weights.provider} AND a.${ALLOC.resourceClassId} = ${w}.${d.weights.resourceClass})`;

/** The load on the key of bound row `b`, as of the statement. */
const loadSql = (d: ProviderConstraint, b: string) => {
  const { weights: w, bounds } = d;
  return `(SELECT COALESCE(SUM(${w.weight('w')} * ${usedSql(d, 'w')}), 0) FROM ${w.table} w
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
      AND ${d.bounds.bound('b')} < ${loadSql(d, 'b')})`;

/** Every key over its bound (the audit): provider uuid, name, total (the bound), load; by provider uuid, then key. */
export const overBoundSql = (d: ProviderConstraint): string =>
  `SELECT p.${RP.uuid}, b.${d.bounds.key} AS name, ${d.bounds.bound('b')} AS total, ${loadSql(d, 'b')} AS load
  FROM ${d.bounds.table} b JOIN resource_providers p ON p.${RP.id} = b.${d.bounds.provider}
  WHERE ${d.bounds.bound('b')} < ${loadSql(d, 'b')}
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
export function candidateStatement(d: ProviderConstraint, classNames: readonly string[]): InStatement {
  const { bounds: b, weights: w } = d;
  return {
    sql: `WITH p(id) AS MATERIALIZED (SELECT DISTINCT w.${w.provider} FROM ${w.table} w
        WHERE w.${w.resourceClass} IN (SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} IN (SELECT value FROM json_each(?))))
      SELECT CASE WHEN EXISTS (SELECT 1 FROM ${b.table}) THEN json_object(
        'bounds', (SELECT json_group_array(json_array(b.${b.provider}, b.${b.key}, ${b.bound('b')}))
          FROM ${b.table} b WHERE b.${b.provider} IN (SELECT id FROM p)),
        'weights', (SELECT json_group_array(json_array(w.${w.provider}, w.${w.resourceClass}, w.${w.key}, ${w.weight('w')}, ${usedSql(d, 'w')}))
          FROM ${w.table} w WHERE w.${w.provider} IN (SELECT id FROM p))) END`,
    args: [JSON.stringify(classNames)],
  };
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

/** The candidates' capacity rule, as a read hook. */
export function constraintReadHook(d: ProviderConstraint): CandidateReadHook<Map<number, LoadedKeys>> {
  return {
    name: d.name,
    statement: (classNames) => candidateStatement(d, classNames),
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
