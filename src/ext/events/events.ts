// The events stream (docs/events.md): rows of ext_events, appended by any
// extension in the write batch of what they report (eventStatement, or a
// trigger of its migration), read in order of their sequence by an operator's
// process (GET /ext/events, a long poll), removed after the retention.
import type { BatchReader, DataStore } from '../../db/client.js';
import { EVENT } from '../../db/columns.js';
import { stmt, type WriteStatement } from '../../db/write-batch.js';

export interface EventView {
  seq: number;
  kind: string;
  at: string;
  body: Record<string, unknown>;
}

export interface EventPage {
  events: EventView[];
  /** Pass as `after` next: every event up to it that matches was answered (or was not there to match). */
  next_after: number;
  /** The oldest event kept (null: none kept). */
  oldest_seq: number | null;
  /** Events after `after` were removed by the retention sweep before this read: the reader missed some. */
  missed: boolean;
}

export interface EventQuery {
  after: number;
  /** Kinds or their prefixes (`preemption` matches `preemption.created`); empty: every kind. */
  kinds: readonly string[];
  limit: number;
}

/** The statement that appends one event, for the write batch of what it reports (it commits with it or not at all). */
export function eventStatement(kind: string, body: Record<string, unknown>, nowMs: number): WriteStatement {
  return stmt(`INSERT INTO ext_events (${EVENT.kind}, ${EVENT.atMs}, ${EVENT.body}) VALUES (?, ?, ?)`, [kind, nowMs, JSON.stringify(body)]);
}

/** One read batch: the events after `after` of the kinds asked, and where the stream stands. */
export async function readEvents(reader: BatchReader, query: EventQuery): Promise<EventPage> {
  const [found, bounds] = await reader.readBatch([
    {
      sql: `SELECT ${EVENT.seq}, ${EVENT.kind}, ${EVENT.atMs}, ${EVENT.body} FROM ext_events WHERE ${EVENT.seq} > ?
        AND (json_array_length(?) = 0 OR EXISTS (SELECT 1 FROM json_each(?) k WHERE ${EVENT.kind} = k.value OR substr(${EVENT.kind}, 1, length(k.value) + 1) = k.value || '.'))
        ORDER BY ${EVENT.seq} LIMIT ?`,
      args: [query.after, JSON.stringify(query.kinds), JSON.stringify(query.kinds), query.limit],
    },
    {
      // sqlite_sequence keeps the highest sequence ever given, even when the sweep removed it.
      sql: `SELECT (SELECT MIN(${EVENT.seq}) FROM ext_events) AS oldest, (SELECT seq FROM sqlite_sequence WHERE name = 'ext_events') AS newest`,
      args: [],
    },
  ]);
  const events = found!.rows.map((r) => ({
    seq: Number(r[EVENT.seq]),
    kind: String(r[EVENT.kind]),
    at: new Date(Number(r[EVENT.atMs])).toISOString(),
    body: JSON.parse(String(r[EVENT.body])) as Record<string, unknown>,
  }));
  const row = bounds!.rows[0]!;
  const oldest = row.oldest === null ? null : Number(row.oldest);
  const newest = row.newest === null ? 0 : Number(row.newest);
  // A full page: the next read starts after its last; otherwise every match up to the newest was read (same snapshot).
  const nextAfter = events.length === query.limit ? events[events.length - 1]!.seq : Math.max(query.after, newest);
  const missed = query.after < newest && (oldest === null ? true : query.after < oldest - 1);
  return { events, next_after: nextAfter, oldest_seq: oldest, missed };
}

export interface WaitOptions {
  /** How long to wait for a first event (0: answer at once). */
  waitMs: number;
  /** How often the stream is read again while waiting: events written by any process, sweep or trigger are seen. */
  pollMs: number;
  /** The caller went away: stop waiting. */
  signal?: AbortSignal;
}

const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** A long poll: answers as soon as some event after `after` matches, or with none once `waitMs` has passed. */
export async function waitForEvents(reader: BatchReader, query: EventQuery, options: WaitOptions): Promise<EventPage> {
  const deadline = performance.now() + options.waitMs;
  for (;;) {
    const page = await readEvents(reader, query);
    const left = deadline - performance.now();
    if (page.events.length > 0 || left <= 0 || options.signal?.aborted) return page;
    await pause(Math.min(options.pollMs, left), options.signal);
  }
}

/** Most events one sweep removes (one write batch); the next sweep takes the rest. */
export const EVENT_SWEEP_BATCH = 1000;

/** Removes events older than `retentionMs` (at most EVENT_SWEEP_BATCH); returns how many. */
export async function sweepOldEvents(store: DataStore, nowMs: number, retentionMs: number): Promise<number> {
  const [deleted] = await store.writeBatch([
    {
      sql: `DELETE FROM ext_events WHERE ${EVENT.seq} IN (SELECT ${EVENT.seq} FROM ext_events WHERE ${EVENT.atMs} < ? ORDER BY ${EVENT.seq} LIMIT ?)`,
      args: [nowMs - retentionMs, EVENT_SWEEP_BATCH],
    },
  ]);
  return deleted!.rowsAffected;
}
