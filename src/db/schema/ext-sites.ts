// Edge sites (docs/sites.md): the journal entries of each site the primary has
// applied. A site cut off from the primary journals its claims and deletes;
// healing, it replays them in order, each in the same write batch as this row,
// whose key makes a second replay of an entry fail as a whole: applied once.
import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export const extSiteReplays = sqliteTable(
  'ext_site_replays',
  {
    /** The site (PLACEMENT_SITE), as its slice's owner names it (`site:<site>`). */
    site: text('site').notNull(),
    /** The entry's sequence number in the site's journal. */
    seq: integer('seq').notNull(),
    /** The entry's idempotency key, as the site wrote it. */
    idemKey: text('idem_key').notNull(),
    appliedAt: text('applied_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.site, t.seq] })],
);
