// A full disk under the database: SQLite refuses every write (SQLITE_FULL)
// while reads go on. The APIs answer such a write with 503 and the cause in
// their envelope (the HTTP kit); here, the episode is logged once when it
// begins and once when a write succeeds again, not once per refused write.

/** Where the episode is told (the service's logger). */
export interface StorageLog {
  error(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
}

const FULL = /database or disk is full|SQLITE_FULL|ENOSPC|no space left on device/i;

/** Whether `err` (or one of its causes) is the database's disk being full. */
export function isStorageFull(err: unknown): boolean {
  for (let cur: unknown = err, depth = 0; cur instanceof Error && depth < 5; cur = cur.cause, depth++) {
    const code = (cur as { code?: unknown }).code;
    if (code === 'SQLITE_FULL' || code === 'ENOSPC' || FULL.test(cur.message)) return true;
  }
  return false;
}

interface Episode {
  since: number;
  refused: number;
  log: StorageLog;
}

// Per process: the disk is the process's, whichever store wrote to it.
let episode: Episode | undefined;

function refused(log: StorageLog): void {
  if (episode) {
    episode.refused += 1;
    return;
  }
  episode = { since: Date.now(), refused: 1, log };
  log.error('database disk is full: writes are refused with 503 until space is freed; reads go on');
}

function succeeded(): void {
  if (!episode) return;
  const { since, refused: count, log } = episode;
  episode = undefined;
  log.info('database disk has space again: writes succeed', { full_for_ms: Date.now() - since, writes_refused: count });
}

/** Whether a write's result (a result set, or a batch's) changed rows: a write that changed nothing commits on a full disk too. */
function wroteRows(result: unknown): boolean {
  const sets = Array.isArray(result) ? result : [result];
  return sets.some(
    (r) => typeof (r as { rowsAffected?: unknown } | null)?.rowsAffected === 'number' && (r as { rowsAffected: number }).rowsAffected > 0,
  );
}

/**
 * Follows a write: a refusal for lack of space begins (or counts in) an
 * episode, a write that changed rows ends it (a sweep finding nothing to do
 * commits on a full disk, and would split one episode into many).
 */
export function watchWrite<T>(write: Promise<T>, log: StorageLog | undefined): Promise<T> {
  return write.then(
    (result) => {
      if (wroteRows(result)) succeeded();
      return result;
    },
    (err: unknown) => {
      if (log && isStorageFull(err)) refused(log);
      throw err;
    },
  );
}
