// The audit's view of shared counters (extension, docs/extensions-gpu.md): providers whose
// allocations exceed a counter (possible only through writes made before the
// counters were set, or by editing the database): listed, never repaired.
// AuditFindings of diagnostics/audit.ts, checked where the extension object names it.
import type { ResultSet } from '@libsql/client';
import * as z from 'zod';
import { overBoundSql } from '../../placement/capacity.js';
import { COUNTERS } from './declaration.js';

const OVER_COUNTERS_SQL = overBoundSql(COUNTERS);

const OverCounterProvider = z.object({
  uuid: z.string(),
  counters: z.array(
    z.object({ name: z.string(), total: z.number().int(), load: z.number().int().describe('sum over classes of usage x consumption') }),
  ),
});
type OverCounterProvider = z.infer<typeof OverCounterProvider>;

/** Every provider with a counter over its total, by uuid. */
function overCounterProviders([rows]: ResultSet[]): OverCounterProvider[] {
  const byUuid = new Map<string, OverCounterProvider>();
  for (const r of rows!.rows) {
    const uuid = String(r.uuid);
    const entry = byUuid.get(uuid) ?? { uuid, counters: [] };
    entry.counters.push({ name: String(r.name), total: Number(r.total), load: Number(r.load) });
    byUuid.set(uuid, entry);
  }
  return [...byUuid.values()];
}

export const countersAudit = {
  findings: [
    {
      name: 'over_counter_providers',
      title: 'Providers whose shared counters are exceeded',
      item: OverCounterProvider,
      description: 'providers whose allocations exceed a shared counter (docs/extensions-gpu.md); listed, never repaired',
      statements: () => [{ sql: OVER_COUNTERS_SQL, args: [] }],
      items: overCounterProviders,
      marker: (p: OverCounterProvider) => p.uuid,
      table: {
        headers: ['PROVIDER', 'COUNTER', 'LOAD', 'TOTAL'],
        rows: (p: OverCounterProvider) => p.counters.map((c) => [p.uuid, c.name, String(c.load), String(c.total)]),
      },
    },
  ],
};
