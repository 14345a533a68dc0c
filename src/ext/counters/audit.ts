// The audit's view of shared counters (extension, issue 25): providers whose
// allocations exceed a counter (possible only through writes made before the
// counters were set, or by editing the database): listed, never repaired.
import type { DataStore } from '../../db/client.js';
import { overBoundSql } from '../../placement/constraints.js';
import { COUNTERS } from './declaration.js';

const OVER_COUNTERS_SQL = overBoundSql(COUNTERS);

export interface OverCounterProvider {
  uuid: string;
  counters: { name: string; total: number; load: number }[];
}

/** Every provider with a counter over its total, by uuid; a page of them after `marker`. */
export async function overCounterProviders(
  store: DataStore,
  marker: string | null,
  limit: number,
): Promise<{ total: number; items: OverCounterProvider[]; nextMarker: string | null }> {
  const [rows] = await store.readBatch([{ sql: OVER_COUNTERS_SQL, args: [] }]);
  const byUuid = new Map<string, OverCounterProvider>();
  for (const r of rows!.rows) {
    const uuid = String(r.uuid);
    const entry = byUuid.get(uuid) ?? { uuid, counters: [] };
    entry.counters.push({ name: String(r.name), total: Number(r.total), load: Number(r.load) });
    byUuid.set(uuid, entry);
  }
  const all = [...byUuid.values()];
  const after = marker === null ? all : all.filter((p) => p.uuid > marker);
  const items = after.slice(0, limit);
  return { total: all.length, items, nextMarker: after.length > limit ? items.at(-1)!.uuid : null };
}
