// A provider's traits (PUT and DELETE /resource_providers/{uuid}/traits) in
// the write model of db/write-batch.ts: first ONE write batch with nothing
// read (kernel.ts): the generation's compare-and-swap, the trait names
// resolved in SQL, a guard that every name exists; refused, the ordinary
// path reads the provider and the trait ids, decides (404, 409, 400 worded
// there) and commits one write batch guarded by the generation.
import type { Row } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { commitGuarded, guard, inList, placeholders, stmt, type WriteStatement } from '../../db/write-batch.js';
import { ProviderNotFound, StaleProviderGeneration, UnknownTraits } from './refusals.js';
import { bumpedGeneration, bumpProviderGeneration, GenerationPlan, placementWrite, PROVIDER_ID_BY_UUID, tryOneBatch } from './kernel.js';
import { RP, RP_TRAIT, TRAIT } from '../../db/columns.js';

/**
 * Replaces the provider's traits with `names` and returns its new
 * generation. `expectedGeneration` (PUT) must match the stored one; DELETE
 * passes undefined. Throws ProviderNotFound, StaleProviderGeneration, UnknownTraits.
 */
export async function replaceProviderTraits(
  store: DataStore,
  uuid: string,
  expectedGeneration: number | undefined,
  names: string[],
  now: string,
): Promise<number> {
  const granted = await tryOneBatch(store, oneBatchTraitStatements(uuid, expectedGeneration, names, now));
  if (granted) return bumpedGeneration(granted[0]!);
  return placementWrite(async () => {
    const [providers, traits] = await store.readBatch([
      { sql: `SELECT ${RP.id}, ${RP.generation} FROM resource_providers WHERE ${RP.uuid} = ?`, args: [uuid] },
      { sql: `SELECT ${TRAIT.id}, ${TRAIT.name} FROM traits WHERE ${TRAIT.name} IN (${inList(names)})`, args: names },
    ]);
    const row: Row | undefined = providers!.rows[0];
    if (!row) throw new ProviderNotFound(uuid);
    const provider = { id: Number(row[RP.id]), generation: Number(row[RP.generation]) };
    if (expectedGeneration !== undefined && provider.generation !== expectedGeneration) throw new StaleProviderGeneration(uuid);
    const ids = new Map(traits!.rows.map((r) => [String(r[TRAIT.name]), Number(r[TRAIT.id])]));
    const missing = names.filter((n) => !ids.has(n));
    if (missing.length > 0) throw new UnknownTraits(missing);
    const statements = [stmt(`DELETE FROM resource_provider_traits WHERE ${RP_TRAIT.resourceProviderId} = ?`, [provider.id])];
    if (names.length > 0) {
      const traitIds = names.map((n) => ids.get(n)!);
      statements.push(
        // No trait deleted since the read (DELETE /traits/{name}): no link to a trait that is gone.
        guard(`(SELECT count(*) FROM traits WHERE ${TRAIT.id} IN (${placeholders(traitIds.length)})) = ?`, [...traitIds, traitIds.length]),
        stmt(
          `INSERT INTO resource_provider_traits (${RP_TRAIT.resourceProviderId}, ${RP_TRAIT.traitId}, ${RP_TRAIT.createdAt}) VALUES ${names.map(() => '(?, ?, ?)').join(', ')}`,
          traitIds.flatMap((id) => [provider.id, id, now]),
        ),
      );
    }
    const gens = new GenerationPlan();
    gens.bump(provider);
    await commitGuarded(store, [...statements, ...gens.statements(now)]);
    return provider.generation + 1;
  });
}

/**
 * replaceProviderTraits as one write batch with nothing read first: refused
 * (rolled back) when the provider is missing, its generation is not
 * `expectedGeneration`, or a name is not a trait, everything the ordinary
 * path answers with an error. Statements as the ordinary path's, the ids
 * resolved in SQL; the first returns the new generation.
 */
function oneBatchTraitStatements(uuid: string, expectedGeneration: number | undefined, names: string[], now: string): WriteStatement[] {
  const statements = [
    bumpProviderGeneration(uuid, expectedGeneration, now),
    stmt(`DELETE FROM resource_provider_traits WHERE ${RP_TRAIT.resourceProviderId} = ${PROVIDER_ID_BY_UUID}`, [uuid]),
  ];
  if (names.length > 0) {
    statements.push(
      guard(`(SELECT count(*) FROM traits WHERE ${TRAIT.name} IN (${placeholders(names.length)})) = ?`, [...names, names.length]),
      stmt(
        `INSERT INTO resource_provider_traits (${RP_TRAIT.resourceProviderId}, ${RP_TRAIT.traitId}, ${RP_TRAIT.createdAt})
        SELECT ${PROVIDER_ID_BY_UUID}, t.${TRAIT.id}, ? FROM (VALUES ${names.map(() => '(?, ?)').join(', ')}) v
        JOIN traits t ON t.${TRAIT.name} = v.column2 ORDER BY v.column1`,
        [uuid, now, ...names.flatMap((name, i) => [i, name])],
      ),
    );
  }
  return statements;
}

/**
 * PUT /traits/{name}: creates the trait unless it exists, in one write batch
 * (one round trip) that also reads its timestamps back.
 */
export async function ensureTraitBatched(
  store: DataStore,
  name: string,
  now: string,
): Promise<{ created: boolean; createdAt: string | null; updatedAt: string | null }> {
  const [inserted, read] = await commitGuarded(store, [
    stmt(`INSERT OR IGNORE INTO traits (${TRAIT.name}, ${TRAIT.createdAt}) VALUES (?, ?)`, [name, now]),
    stmt(`SELECT ${TRAIT.createdAt}, ${TRAIT.updatedAt} FROM traits WHERE ${TRAIT.name} = ?`, [name]),
  ]);
  const row = read!.rows[0];
  const text = (value: unknown) => (value === null || value === undefined ? null : String(value));
  return { created: inserted!.rowsAffected > 0, createdAt: text(row?.created_at), updatedAt: text(row?.updated_at) };
}

export type TraitDeletion = 'deleted' | 'not_found' | 'standard' | 'in_use';

/**
 * DELETE /traits/{name} in one round trip: a custom trait no provider has is
 * deleted by one statement whose condition holds as of the write, and the
 * row read back in the same batch says why nothing was deleted otherwise.
 * Standard traits are never deleted (only looked up, for 404 vs 400).
 */
export async function deleteTraitBatched(store: DataStore, name: string, standard: boolean): Promise<TraitDeletion> {
  const lookup = { sql: `SELECT ${TRAIT.id} FROM traits WHERE ${TRAIT.name} = ?`, args: [name] };
  if (standard) {
    const [found] = await store.readBatch([lookup]);
    return found!.rows.length > 0 ? 'standard' : 'not_found';
  }
  const [deleted, found] = await commitGuarded(store, [
    stmt(
      `DELETE FROM traits WHERE ${TRAIT.name} = ?
        AND NOT EXISTS (SELECT 1 FROM resource_provider_traits rpt WHERE rpt.${RP_TRAIT.traitId} = traits.${TRAIT.id})`,
      [name],
    ),
    stmt(lookup.sql, lookup.args),
  ]);
  if (deleted!.rowsAffected > 0) return 'deleted';
  return found!.rows.length > 0 ? 'in_use' : 'not_found';
}
