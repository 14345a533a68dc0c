// Shared counters (extension, docs/extensions-gpu.md): the one capacity condition every
// path applies (candidates, claims, the reshaper, the audit, headroom, the
// dashboard), kept here so they can never disagree. On a provider with
// counters, for each counter: sum over classes of usage x consumption <= total.

/** A provider's counters, indexed for the hot path: counter i has totals[i]. */
export interface ProviderCounters {
  names: string[];
  totals: number[];
  /** class id -> units of each counter (by index) one unit of the class consumes. */
  consumption: Map<number, number[]>;
}

/** provider id -> its counters; only providers with counters appear. */
export type CounterTable = Map<number, ProviderCounters>;

/** The load of each counter (by index) that `usage` of each class puts on the provider. */
export function counterLoads(counters: ProviderCounters, usageOf: (classId: number) => number): number[] {
  const loads = counters.totals.map(() => 0);
  for (const [classId, perCounter] of counters.consumption) {
    const used = usageOf(classId);
    if (used === 0) continue;
    for (let i = 0; i < perCounter.length; i += 1) loads[i]! += used * perCounter[i]!;
  }
  return loads;
}

/**
 * The first counter a change of usage from `before` to `after` leaves over
 * its total while raising its load (a counter already over, say after an
 * operator lowered it, may stay over as long as its load does not grow, as
 * upstream treats inventory: bug 2104040); null when the change is allowed.
 */
export function exceededCounter(
  counters: ProviderCounters,
  before: (classId: number) => number,
  after: (classId: number) => number,
): { name: string; total: number; load: number } | null {
  const was = counterLoads(counters, before);
  const will = counterLoads(counters, after);
  for (let i = 0; i < will.length; i += 1) {
    if (will[i]! > counters.totals[i]! && will[i]! > was[i]!)
      return { name: counters.names[i]!, total: counters.totals[i]!, load: will[i]! };
  }
  return null;
}

/** Rows as stored (ext_provider_counters, ext_counter_consumption) to a CounterTable. */
export function counterTableOf(
  totals: Iterable<{ providerId: number; name: string; total: number }>,
  consumption: Iterable<{ providerId: number; classId: number; counter: string; amount: number }>,
): CounterTable {
  const table: CounterTable = new Map();
  for (const row of totals) {
    let counters = table.get(row.providerId);
    if (!counters) table.set(row.providerId, (counters = { names: [], totals: [], consumption: new Map() }));
    counters.names.push(row.name);
    counters.totals.push(row.total);
  }
  for (const row of consumption) {
    const counters = table.get(row.providerId);
    const index = counters?.names.indexOf(row.counter) ?? -1;
    if (!counters || index < 0) continue;
    let perCounter = counters.consumption.get(row.classId);
    if (!perCounter) counters.consumption.set(row.classId, (perCounter = counters.names.map(() => 0)));
    perCounter[index] = row.amount;
  }
  return table;
}
