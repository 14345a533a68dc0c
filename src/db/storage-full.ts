// A full disk under the database: SQLite refuses every write (SQLITE_FULL)
// while reads go on. The APIs answer such a write with 503 and the cause in
// their envelope; the episode is logged once when it begins and once when a
// write succeeds again, not once per refused request.
import type { Logger } from '../deps.js';

const FULL = /database or disk is full|SQLITE_FULL|ENOSPC|no space left on device/i;

/** Whether `err` (or one of its causes) is the database's disk being full. */
export function isStorageFull(err: unknown): boolean {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    const code = (cur as { code?: unknown }).code;
    if (code === 'SQLITE_FULL' || code === 'ENOSPC' || FULL.test(cur.message)) return true;
  }
  return false;
}

/** What a refused write answers, in either API's envelope. */
export const STORAGE_FULL_MESSAGE =
  "The service's database disk is full, so the change was not made; writes resume once space is freed (reads still work). Try again later.";

interface Episode {
  since: number;
  refused: number;
  log: Logger;
}

let episode: Episode | undefined;

/** A write failed for lack of space: logged when the episode begins, counted after. */
export function storageFullRefusal(log: Logger, fields: Record<string, unknown> = {}): void {
  if (episode) {
    episode.refused += 1;
    return;
  }
  episode = { since: Date.now(), refused: 1, log };
  log.error('database disk is full: writes are refused with 503 until space is freed; reads go on', fields);
}

/** A write committed: ends an episode, if one was going on. Cheap when none is. */
export function storageWriteSucceeded(): void {
  if (!episode) return;
  const { since, refused, log } = episode;
  episode = undefined;
  log.info('database disk has space again: writes succeed', { full_for_ms: Date.now() - since, writes_refused: refused });
}

/** Whether writes are being refused for lack of space now (for health checks). */
export const storageIsFull = (): boolean => episode !== undefined;

/** Marks a write's outcome: success ends an episode of a full disk. */
export function watchWrite<T>(write: Promise<T>): Promise<T> {
  return write.then((result) => {
    storageWriteSucceeded();
    return result;
  });
}
