// Edge sites' reads (docs/sites.md): which providers are members of an aggregate.
import type { BatchReader } from '../../db/client.js';

/** Of `providers` (uuids), those that are not members of `aggregate` (a uuid), unknown ones included. */
export async function providersOutside(reader: BatchReader, aggregate: string, providers: readonly string[]): Promise<string[]> {
  if (providers.length === 0) return [];
  const [rows] = await reader.readBatch([
    {
      sql: `SELECT p.uuid AS uuid FROM resource_providers p
        JOIN resource_provider_aggregates ra ON ra.resource_provider_id = p.id
        JOIN placement_aggregates a ON a.id = ra.aggregate_id
        WHERE a.uuid = ? AND p.uuid IN (${providers.map(() => '?').join(', ')})`,
      args: [aggregate, ...providers],
    },
  ]);
  const inside = new Set(rows!.rows.map((r) => String(r.uuid)));
  return providers.filter((p) => !inside.has(p));
}
