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

/** Whether a write's result (a result set, or a batch's) changed rows: a write that changed nothing commits on a full disk too. */
function wroteRows(result: unknown): boolean {
  const sets = Array.isArray(result) ? result : [result];
  return sets.some(
    (r) => typeof (r as { rowsAffected?: unknown } | null)?.rowsAffected === 'number' && (r as { rowsAffected: number }).rowsAffected > 0,
  );
}

/** Follows one store's writes (see storageFullWatch). */
export type WriteWatch = <T>(write: Promise<T>) => Promise<T>;

/**
 * A store's follower of its writes: a refusal for lack of space begins (or
 * counts in) an episode, a write that changed rows ends it (a sweep finding
 * nothing to do commits on a full disk, and would split one episode into
 * many). The episode is the store's: another store's database may sit on
 * another disk, and its writes say nothing of this one's. Without `log`,
 * nobody hears of an episode, so none is kept.
 */
export function storageFullWatch(log: StorageLog | undefined): WriteWatch {
  if (!log) return (write) => write;
  let episode: { since: number; refused: number } | undefined;
  const refused = (): void => {
    if (episode) {
      episode.refused += 1;
      return;
    }
    episode = { since: Date.now(), refused: 1 };
    log.error('database disk is full: writes are refused with 503 until space is freed; reads go on');
  };
  const succeeded = (): void => {
    if (!episode) return;
    const { since, refused: count } = episode;
    episode = undefined;
    log.info('database disk has space again: writes succeed', { full_for_ms: Date.now() - since, writes_refused: count });
  };
  return (write) =>
    write.then(
      (result) => {
        if (wroteRows(result)) succeeded();
        return result;
      },
      (err: unknown) => {
        if (isStorageFull(err)) refused();
        throw err;
      },
    );
}
