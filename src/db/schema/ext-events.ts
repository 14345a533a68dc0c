// The events stream (docs/events.md): what extensions report to an operator's
// process (a reaper) that reads GET /ext/events. Generic: any extension appends
// a row from its own write batch (src/ext/events/append.ts) or by trigger, so
// an event is never lost and never reported for a write that did not commit.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * One event. `seq` is AUTOINCREMENT: it only grows, and a sequence the
 * retention sweep removed is never given again, so a reader's "after N" stays
 * meaningful. SQLite has one writer at a time, so a later seq never commits
 * before an earlier one. `kind` is `<extension>.<what>` (`preemption.created`),
 * `body` a JSON object.
 */
export const extEvents = sqliteTable(
  'ext_events',
  {
    seq: integer('seq').primaryKey({ autoIncrement: true }),
    kind: text('kind').notNull(),
    atMs: integer('at_ms').notNull(),
    body: text('body').notNull(),
  },
  (t) => [index('ext_events_at_ms_idx').on(t.atMs)],
);
