// The accelerator API's side of the write model (src/db/write-batch.ts): one
// read batch, a decision in TypeScript, one guarded write batch, decided again
// when it loses a race; here the retry loop with the API's own answer when the
// data keeps changing.
import { withRaceRetries, WriteContention } from '../../db/write-batch.js';
import { DomainError } from '../../errors.js';

/** Runs one read-decide-write attempt until it does not lose a race; 409 when it keeps losing. */
export async function cyborgWrite<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await withRaceRetries(attempt);
  } catch (err) {
    if (err instanceof WriteContention) throw new DomainError('conflict', 'The accelerator data changed concurrently; please retry.');
    throw err;
  }
}
