// Project limits (extension, issue 35): the limits in force, as last read
// from Keystone (or PLACEMENT_LIMITS_JSON), in the database so that every
// instance's claims are guarded by the same limits inside their write
// transaction, and the limits stay in force while Keystone is down or after a
// restart. Project '' holds the registered default of a class.
import { integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export const extLimits = sqliteTable(
  'ext_limits',
  {
    project: text('project').notNull(),
    resourceClass: text('resource_class').notNull(),
    resourceLimit: integer('resource_limit').notNull(),
  },
  (t) => [primaryKey({ columns: [t.project, t.resourceClass] })],
);

/** One row (id 1): when the limits were last read successfully, and from where. */
export const extLimitsSync = sqliteTable('ext_limits_sync', {
  id: integer('id').primaryKey(),
  syncedAt: integer('synced_at').notNull(),
  source: text('source').notNull(),
});

/**
 * Each project's usage of each class by the consumers that count, kept by
 * the triggers of drizzle/0009 (src/ext/limits/sql.ts ledgerTriggers), so a
 * claim's guard reads one row instead of summing the project's allocations.
 */
export const extLimitUsage = sqliteTable(
  'ext_limit_usage',
  {
    projectId: integer('project_id').notNull(),
    resourceClassId: integer('resource_class_id').notNull(),
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.resourceClassId] })],
);

/**
 * Which consumers a project's usage counts (PLACEMENT_LIMITS_CONSUMER_TYPES,
 * PLACEMENT_LIMITS_COUNT_UNTYPED): a row per consumer type, '' for consumers
 * without one. Empty until limits are first on: the ledger's triggers then
 * cost one probe of this table.
 */
export const extLimitCounting = sqliteTable('ext_limit_counting', {
  consumerType: text('consumer_type').primaryKey(),
});
