// Group commit: the write batches that reach one process while it serves a
// turn of its event loop (the claims and deletes of concurrent clients) share
// one transaction and one COMMIT, instead of paying a COMMIT each and queueing
// one by one behind the write lock. Each batch still runs in a SAVEPOINT of
// its own, so it keeps its all-or-nothing outcome and its own answer (its
// results, or the error it failed with, statement index and all), exactly as
// when it ran alone and in the same order; no batch is answered before the
// shared COMMIT has returned, so an answered write is as durable as one that
// committed alone. Types and a scheduler only: the Worker bundle imports it.
import type { InStatement, ResultSet } from '@libsql/client';

/** One batch's outcome in a shared commit: its results, or the error it alone failed with. */
export type GroupOutcome = { results: ResultSet[] } | { error: unknown };

/** Commits batches together (db/node-batches.ts writeGroup), one outcome per batch, in order. */
export type CommitGroup = (batches: InStatement[][]) => Promise<GroupOutcome[]>;

interface Waiting {
  statements: InStatement[];
  resolve(results: ResultSet[]): void;
  reject(err: unknown): void;
}

/** Most batches in one shared transaction: the write lock is held for all of them. */
export const GROUP_LIMIT = 64;

/**
 * Collects the write batches sent during one turn of the event loop and
 * commits them as groups at the end of it (setImmediate: after the I/O
 * callbacks that brought the requests). A lone batch waits no longer than
 * that turn.
 */
export class CommitGroups {
  private waiting: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly commit: CommitGroup,
    private readonly limit = GROUP_LIMIT,
    private readonly schedule: (fn: () => void) => void = (fn) => setImmediate(fn),
  ) {}

  /** The batch's results once its group has committed; its own error if it failed (nothing of it written). */
  write(statements: InStatement[]): Promise<ResultSet[]> {
    return new Promise<ResultSet[]>((resolve, reject) => {
      this.waiting.push({ statements, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        this.schedule(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    while (this.waiting.length > 0) {
      const group = this.waiting.splice(0, this.limit);
      this.commit(group.map((w) => w.statements)).then(
        (outcomes) => {
          group.forEach((w, i) => {
            const outcome = outcomes[i]!;
            if ('error' in outcome) w.reject(outcome.error);
            else w.resolve(outcome.results);
          });
        },
        (err: unknown) => {
          for (const w of group) w.reject(err);
        },
      );
    }
  }
}
