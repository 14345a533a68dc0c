// Device taints on resource providers (KEP-5055 on the Placement side):
// /ext/resource_providers/{uuid}/taints and the drain list of /ext/taints.
// A replace is one write batch with nothing read (the provider generation's
// compare-and-swap, as a provider's traits), which also reads the result
// back: refused, one read words the answer (404, or 409 for a stale generation). The candidate engine reads
// the taints in its own batch (the filter beside this file).
import type { DataStore } from '../../db/client.js';
import { commitGuarded, LostRace, stmt, type WriteStatement } from '../../db/write-batch.js';
import { bumpedGeneration, bumpProviderGeneration, PROVIDER_ID_BY_UUID } from '../../placement/writes/kernel.js';
import { ProviderNotFound, StaleProviderGeneration } from '../../placement/writes/refusals.js';
import type { Taint } from './schemas.js';
import { ALLOC, RP, TAINT } from '../../db/columns.js';

export interface StoredTaint extends Taint {
  created_at: string;
}

export interface ProviderTaintsView {
  resource_provider_generation: number;
  taints: StoredTaint[];
}

const TAINT_COLUMNS = [TAINT.key, TAINT.value, TAINT.effect, TAINT.reason, TAINT.createdAt].join(', ');
const taintOf = (r: Record<string, unknown>): StoredTaint => ({
  key: String(r[TAINT.key]),
  value: String(r[TAINT.value]),
  effect: String(r[TAINT.effect]) as Taint['effect'],
  reason: String(r[TAINT.reason]),
  created_at: String(r[TAINT.createdAt]),
});

/** A provider's taints and generation, or null when there is no such provider. */
export async function providerTaints(store: DataStore, uuid: string): Promise<ProviderTaintsView | null> {
  const [providers, taints] = await store.readBatch([
    { sql: `SELECT ${RP.generation} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [uuid] },
    {
      sql: `SELECT ${TAINT_COLUMNS} FROM ext_provider_taints WHERE ${TAINT.resourceProviderId} = ${PROVIDER_ID_BY_UUID} ORDER BY ${TAINT.key}, ${TAINT.effect}`,
      args: [uuid],
    },
  ]);
  const row = providers!.rows[0];
  if (!row) return null;
  return { resource_provider_generation: Number(row.generation), taints: taints!.rows.map((r) => taintOf(r)) };
}

/**
 * Replaces the provider's taints (one per key and effect; a repeated pair
 * keeps the last) and returns its new generation. Throws ProviderNotFound or
 * StaleProviderGeneration.
 */
export async function replaceProviderTaints(
  store: DataStore,
  uuid: string,
  expectedGeneration: number,
  taints: Taint[],
  now: string,
): Promise<ProviderTaintsView> {
  const unique = [...new Map(taints.map((t) => [`${t.key}\u0000${t.effect}`, t])).values()];
  const statements: WriteStatement[] = [
    bumpProviderGeneration(uuid, expectedGeneration, now),
    stmt(
      `DELETE FROM ext_provider_taints WHERE ${TAINT.resourceProviderId} = ${PROVIDER_ID_BY_UUID}
        AND (${TAINT.key}, ${TAINT.effect}) NOT IN (SELECT json_extract(${TAINT.value}, '$[0]'), json_extract(${TAINT.value}, '$[1]') FROM json_each(?))`,
      [uuid, JSON.stringify(unique.map((t) => [t.key, t.effect]))],
    ),
  ];
  // A taint set again keeps its created_at: when the drain began.
  for (const t of unique) {
    statements.push(
      stmt(
        `INSERT INTO ext_provider_taints (${TAINT.resourceProviderId}, ${TAINT_COLUMNS}) VALUES (${PROVIDER_ID_BY_UUID}, ?, ?, ?, ?, ?)
          ON CONFLICT (${TAINT.resourceProviderId}, ${TAINT.key}, ${TAINT.effect}) DO UPDATE SET ${TAINT.value} = excluded.${TAINT.value}, ${TAINT.reason} = excluded.${TAINT.reason}`,
        [uuid, t.key, t.value, t.effect, t.reason, now],
      ),
    );
  }
  statements.push(
    stmt(
      `SELECT ${TAINT_COLUMNS} FROM ext_provider_taints WHERE ${TAINT.resourceProviderId} = ${PROVIDER_ID_BY_UUID} ORDER BY ${TAINT.key}, ${TAINT.effect}`,
      [uuid],
    ),
  );
  try {
    const results = await commitGuarded(store, statements);
    return {
      resource_provider_generation: bumpedGeneration(results[0]!),
      taints: results[results.length - 1]!.rows.map((r) => taintOf(r)),
    };
  } catch (err) {
    if (!(err instanceof LostRace)) throw err;
    const [provider] = await store.readBatch([
      { sql: `SELECT ${RP.generation} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [uuid] },
    ]);
    if (!provider!.rows[0]) throw new ProviderNotFound(uuid);
    throw new StaleProviderGeneration(uuid, `resource provider ${uuid} changed`);
  }
}

export interface DrainEntry {
  resource_provider_uuid: string;
  resource_provider_name: string;
  root_provider_uuid: string;
  taint: StoredTaint;
  /** Consumers with allocations on the provider (a tainted root: anywhere in its tree), to move away. */
  consumers: string[];
}

/** Every taint, with the consumers allocated on each tainted provider (a root: on its tree): the drain list. */
export async function drainList(store: DataStore): Promise<DrainEntry[]> {
  const [rows] = await store.readBatch([
    {
      sql: `SELECT p.${RP.uuid}, p.${RP.name}, r.${RP.uuid} AS root_uuid, t.${TAINT.key}, t.${TAINT.value}, t.${TAINT.effect}, t.${TAINT.reason}, t.${TAINT.createdAt},
          (SELECT json_group_array(${ALLOC.consumerId}) FROM (SELECT DISTINCT a.${ALLOC.consumerId} FROM allocations a
            JOIN resource_providers ap ON ap.${RP.id} = a.${ALLOC.resourceProviderId}
            WHERE a.${ALLOC.resourceProviderId} = p.${RP.id} OR (p.${RP.id} = p.${RP.rootProviderId} AND ap.${RP.rootProviderId} = p.${RP.id})
            ORDER BY a.${ALLOC.consumerId})) AS consumers
        FROM ext_provider_taints t JOIN resource_providers p ON p.${RP.id} = t.${TAINT.resourceProviderId}
        JOIN resource_providers r ON r.${RP.id} = p.${RP.rootProviderId}
        ORDER BY p.${RP.uuid}, t.${TAINT.key}, t.${TAINT.effect}`,
      args: [],
    },
  ]);
  return rows!.rows.map((r) => ({
    resource_provider_uuid: String(r[RP.uuid]),
    resource_provider_name: String(r[RP.name]),
    root_provider_uuid: String(r.root_uuid),
    taint: taintOf(r),
    consumers: JSON.parse(String(r.consumers ?? '[]')) as string[],
  }));
}
