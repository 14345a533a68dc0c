// One-batch writes (issue 13): a write whose common case needs nothing read
// first is sent as ONE guarded write batch, one round trip. Every condition
// the ordinary path (read, decide, write) would check is checked in SQL
// inside the write transaction; when one fails the batch rolls back and the
// caller takes the ordinary path, which decides again and words the answer.
// So a write that the ordinary path would grant takes 1 round trip, a refusal
// 2 (the refused batch, then the read that words it), as the one-batch claim
// of new consumers (claims.ts).
import type { ResultSet } from '@libsql/client';
import type { DataStore } from '../../db/client.js';
import { commitGuarded, LostRace, stmt, type WriteStatement } from '../../db/write-batch.js';

/**
 * Runs `statements` as one guarded write batch. Returns their results, or
 * null when a guard refused it (nothing was written): the caller then takes
 * the ordinary path. Any other failure is rethrown.
 */
export async function tryOneBatch(store: DataStore, statements: WriteStatement[]): Promise<ResultSet[] | null> {
  try {
    return await commitGuarded(store, statements);
  } catch (err) {
    if (err instanceof LostRace) return null;
    throw err;
  }
}

/**
 * Bumps the generation of the provider `uuid`, compared with `expected`
 * when the client gave one, and returns the new generation (RETURNING): the
 * batch is refused when the provider is missing or its generation differs.
 * The ordinary path's GenerationPlan writes the same row.
 */
export function bumpProviderGeneration(uuid: string, expected: number | undefined, now: string): WriteStatement {
  return expected === undefined
    ? stmt('UPDATE resource_providers SET generation = generation + 1, updated_at = ? WHERE uuid = ? RETURNING generation', [now, uuid], {
        mustChange: true,
      })
    : stmt(
        'UPDATE resource_providers SET generation = generation + 1, updated_at = ? WHERE uuid = ? AND generation = ? RETURNING generation',
        [now, uuid, expected],
        { mustChange: true },
      );
}

/** The new generation a bumpProviderGeneration statement returned. */
export const bumpedGeneration = (result: ResultSet): number => Number(result.rows[0]!.generation);

/** The id of the provider `uuid` as of the write (an SQL expression taking one argument). */
export const PROVIDER_ID_BY_UUID = '(SELECT id FROM resource_providers WHERE uuid = ?)';
