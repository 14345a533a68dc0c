// The SQL every path uses to read shared counters or guard them (model.ts
// holds the rule itself). Each statement costs next to nothing on a cloud
// without counters: an index probe or a scan of an empty table.
import type { InStatement, ResultSet } from '@libsql/client';
import { counterTableOf, type CounterTable, type ProviderCounters } from './model.js';
import { ALLOC, COUNTER, COUNTER_USE, RC, RP } from '../../db/columns.js';

/** Usage of a consumption row's (provider, class), through the (provider, class, used) index. */
const USED = `(SELECT COALESCE(SUM(a.${ALLOC.used}), 0) FROM allocations a
  WHERE a.${ALLOC.resourceProviderId} = cc.resource_provider_id AND a.${ALLOC.resourceClassId} = cc.resource_class_id)`;

/**
 * For allocation candidates: the counters of every provider where a class the
 * request names consumes a counter, with the current usage of each consuming
 * class, as one JSON value. It is one statement of the research batch (both
 * engines), so a cloud with counters answers in as many round trips as one
 * without, from one snapshot. On a cloud without counters the CASE stops at
 * the empty table, so it costs what the `EXISTS` probe it replaced did: as
 * little as `SELECT 1` (docs/performance.md#figures-behind-the-code).
 */
export function candidateCountersStatement(classNames: string[]): InStatement {
  return {
    sql: `WITH p(id) AS MATERIALIZED (SELECT DISTINCT cc.${COUNTER_USE.resourceProviderId} FROM ext_counter_consumption cc
        WHERE cc.${COUNTER_USE.resourceClassId} IN (SELECT ${RC.id} FROM resource_classes WHERE ${RC.name} IN (SELECT value FROM json_each(?))))
      SELECT CASE WHEN EXISTS (SELECT 1 FROM ext_provider_counters) THEN json_object(
        'totals', (SELECT json_group_array(json_array(c.${COUNTER.resourceProviderId}, c.${COUNTER.name}, c.${COUNTER.total}))
          FROM ext_provider_counters c WHERE c.${COUNTER.resourceProviderId} IN (SELECT id FROM p)),
        'consumption', (SELECT json_group_array(json_array(cc.${COUNTER_USE.resourceProviderId}, cc.${COUNTER_USE.resourceClassId}, cc.${COUNTER_USE.counter}, cc.${COUNTER_USE.amount}, ${USED}))
          FROM ext_counter_consumption cc WHERE cc.${COUNTER_USE.resourceProviderId} IN (SELECT id FROM p))) END`,
    args: [JSON.stringify(classNames)],
  };
}

/** A provider's counters with the load its current usage puts on each (candidates and headroom). */
export interface LoadedCounters extends ProviderCounters {
  loads: number[];
}

/** candidateCountersStatement's result: provider id -> counters and loads (empty on a cloud without counters). */
export function candidateCountersOf(result: ResultSet | undefined): Map<number, LoadedCounters> {
  const value = JSON.parse(String(result?.rows[0]?.[0] ?? '{}')) as {
    totals?: [number, string, number][];
    consumption?: [number, number, string, number, number][];
  };
  const totals = value.totals ?? [];
  const consumption = value.consumption ?? [];
  const out = new Map<number, LoadedCounters>();
  if (totals.length === 0) return out;
  const table = counterTableOf(
    totals.map(([providerId, name, total]) => ({ providerId, name, total })),
    consumption.map(([providerId, classId, counter, amount]) => ({ providerId, classId, counter, amount })),
  );
  const usage = new Map<string, number>();
  for (const [providerId, classId, , , used] of consumption) usage.set(`${providerId}:${classId}`, used);
  for (const [providerId, counters] of table) {
    const loads = counters.totals.map(() => 0);
    for (const [classId, perCounter] of counters.consumption) {
      const used = usage.get(`${providerId}:${classId}`) ?? 0;
      for (let i = 0; i < perCounter.length; i += 1) loads[i]! += used * perCounter[i]!;
    }
    out.set(providerId, { ...counters, loads });
  }
  return out;
}

/** For the claim path's read batch: the counters of the providers named by uuid (two statements). */
export function providerCountersStatements(providerUuids: string[]): InStatement[] {
  const list = JSON.stringify(providerUuids);
  const ids = `SELECT ${RP.id} FROM resource_providers WHERE ${RP.uuid} IN (SELECT value FROM json_each(?))`;
  return [
    {
      sql: `SELECT ${COUNTER.resourceProviderId}, ${COUNTER.name}, ${COUNTER.total} FROM ext_provider_counters WHERE ${COUNTER.resourceProviderId} IN (${ids})`,
      args: [list],
    },
    {
      sql: `SELECT ${COUNTER_USE.resourceProviderId}, ${COUNTER_USE.resourceClassId}, ${COUNTER_USE.counter}, ${COUNTER_USE.amount} FROM ext_counter_consumption WHERE ${COUNTER_USE.resourceProviderId} IN (${ids})`,
      args: [list],
    },
  ];
}

export function providerCountersOf([totals, consumption]: ResultSet[]): CounterTable {
  return counterTableOf(
    totals!.rows.map((r) => ({
      providerId: Number(r[COUNTER.resourceProviderId]),
      name: String(r[COUNTER.name]),
      total: Number(r[COUNTER.total]),
    })),
    consumption!.rows.map((r) => ({
      providerId: Number(r[COUNTER_USE.resourceProviderId]),
      classId: Number(r[COUNTER_USE.resourceClassId]),
      counter: String(r[COUNTER_USE.counter]),
      amount: Number(r[COUNTER_USE.amount]),
    })),
  );
}

/**
 * An SQL condition, true when no counter of a provider holding allocations of
 * the consumers bound as `consumerPlaceholders` is over its total, as of the
 * write: the one-batch claim's guard (claims.ts) includes it, so two racing
 * writers can never both pass it inside their write transactions.
 */
export function countersHoldSql(consumerPlaceholders: string): string {
  return `NOT EXISTS (SELECT 1 FROM ext_provider_counters c
    WHERE c.${COUNTER.resourceProviderId} IN (SELECT ${ALLOC.resourceProviderId} FROM allocations WHERE ${ALLOC.consumerId} IN (${consumerPlaceholders}))
      AND c.${COUNTER.total} < (SELECT COALESCE(SUM(cc.${COUNTER_USE.amount} * ${USED}), 0) FROM ext_counter_consumption cc
        WHERE cc.${COUNTER_USE.resourceProviderId} = c.${COUNTER.resourceProviderId} AND cc.${COUNTER_USE.counter} = c.${COUNTER.name}))`;
}

/** A provider's counters as JSON [[name, total, load], ...] for a provider row aliased `p` (the dashboard). */
export const providerCountersJsonSql = (p: string): string => `(SELECT json_group_array(json_array(c.${COUNTER.name}, c.${COUNTER.total},
    (SELECT COALESCE(SUM(cc.${COUNTER_USE.amount} * ${USED}), 0) FROM ext_counter_consumption cc
      WHERE cc.${COUNTER_USE.resourceProviderId} = c.${COUNTER.resourceProviderId} AND cc.${COUNTER_USE.counter} = c.${COUNTER.name})))
  FROM ext_provider_counters c WHERE c.${COUNTER.resourceProviderId} = ${p}.id)`;

/** Every provider whose counters are over their totals (the audit): provider uuid, counter, total, load. */
export const OVER_COUNTERS_SQL = `SELECT p.${RP.uuid}, c.${COUNTER.name}, c.${COUNTER.total}, (SELECT COALESCE(SUM(cc.${COUNTER_USE.amount} * ${USED}), 0)
    FROM ext_counter_consumption cc WHERE cc.${COUNTER_USE.resourceProviderId} = c.${COUNTER.resourceProviderId} AND cc.${COUNTER_USE.counter} = c.${COUNTER.name}) AS load
  FROM ext_provider_counters c JOIN resource_providers p ON p.${RP.id} = c.${COUNTER.resourceProviderId}
  WHERE c.${COUNTER.total} < (SELECT COALESCE(SUM(cc.${COUNTER_USE.amount} * ${USED}), 0)
    FROM ext_counter_consumption cc WHERE cc.${COUNTER_USE.resourceProviderId} = c.${COUNTER.resourceProviderId} AND cc.${COUNTER_USE.counter} = c.${COUNTER.name})
  ORDER BY p.${RP.uuid}, c.${COUNTER.name}`;
