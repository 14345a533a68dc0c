// A provider's aggregates (PUT /resource_providers/{uuid}/aggregates) in the
// write model of db/write-batch.ts. The provider is read first (upstream
// looks it up before it reads the body), then one write batch replaces the
// membership, guarded by a compare-and-swap on the provider generation:
// bumped from 1.19, where the caller names the generation; compared but kept
// before, so a provider deleted or changed meanwhile still aborts the batch.
import type { DataStore } from '../../db/client.js';
import { commitGuarded, placeholders, stmt, type WriteStatement } from '../../db/write-batch.js';
import { placementWrite } from './kernel.js';
import { ProviderNotFound, StaleProviderGeneration } from './refusals.js';
import { AGG, RP, RP_AGG } from '../../db/columns.js';

export interface ProviderGeneration {
  id: number;
  generation: number;
}

/** One round trip: the provider's id and generation. Throws ProviderNotFound. */
export async function readProviderGeneration(store: DataStore, uuid: string): Promise<ProviderGeneration> {
  const [rows] = await store.readBatch([
    { sql: `SELECT ${RP.id}, ${RP.generation} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [uuid] },
  ]);
  const row = rows!.rows[0];
  if (!row) throw new ProviderNotFound(uuid);
  return { id: Number(row[RP.id]), generation: Number(row[RP.generation]) };
}

/**
 * Replaces the provider's aggregates with `uuids` (created as needed) and
 * returns its generation afterwards. `read` is the provider as the caller
 * read it; after a lost race it is read again.
 */
export async function replaceProviderAggregates(
  store: DataStore,
  uuid: string,
  read: ProviderGeneration,
  expected: number | undefined,
  uuids: string[],
  now: string,
): Promise<number> {
  let provider: ProviderGeneration | undefined = read;
  return placementWrite(async () => {
    const rp = provider ?? (await readProviderGeneration(store, uuid));
    provider = undefined;
    if (expected !== undefined && expected !== rp.generation) throw new StaleProviderGeneration(uuid);
    const next = expected !== undefined ? rp.generation + 1 : rp.generation;
    const statements: WriteStatement[] = [
      stmt(
        `UPDATE resource_providers SET ${RP.generation} = ?, ${RP.updatedAt} = CASE WHEN ? THEN ? ELSE ${RP.updatedAt} END WHERE ${RP.id} = ? AND ${RP.generation} = ?`,
        [next, next !== rp.generation ? 1 : 0, now, rp.id, rp.generation],
        { mustChange: true },
      ),
      stmt(`DELETE FROM resource_provider_aggregates WHERE ${RP_AGG.resourceProviderId} = ?`, [rp.id]),
    ];
    if (uuids.length > 0) {
      statements.push(
        stmt(
          `INSERT OR IGNORE INTO placement_aggregates (${AGG.uuid}, ${AGG.createdAt}) VALUES ${uuids.map(() => '(?, ?)').join(', ')}`,
          uuids.flatMap((u) => [u, now]),
        ),
        stmt(
          `INSERT INTO resource_provider_aggregates (${RP_AGG.resourceProviderId}, ${RP_AGG.aggregateId}, ${RP_AGG.createdAt})
          SELECT ?, ${AGG.id}, ? FROM placement_aggregates WHERE ${AGG.uuid} IN (${placeholders(uuids.length)})`,
          [rp.id, now, ...uuids],
        ),
      );
    }
    await commitGuarded(store, statements);
    return next;
  });
}
