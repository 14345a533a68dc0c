// Edge sites (docs/sites.md): the journal entries of each site the primary has
// applied. A site cut off from the primary journals its claims and deletes;
// healing, it replays them in order, each in the same write batch as this row,
// whose key makes a second replay of an entry fail as a whole: applied once.
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

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

/**
 * Per-project limit slices (docs/sites.md): the part of a project's limit of a
 * class taken out for a site, so that only the site's own claims (drawn from
 * its capacity slice's hold) may spend it. Project and class by name, as the
 * limits (ext_limits) name them; what the site has drawn is read from its hold's draws.
 */
export const extSiteLimitSlices = sqliteTable(
  'ext_site_limit_slices',
  {
    site: text('site').notNull(),
    /** The project's external id (as ext_limits.project). */
    project: text('project').notNull(),
    resourceClass: text('resource_class').notNull(),
    amount: integer('amount').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.site, t.project, t.resourceClass] }),
    index('ext_site_limit_slices_project').on(t.project, t.resourceClass),
  ],
);
