// Tables of the extensions under /ext/ (docs/extensions.md): device taints
// and allocation leases. Upstream has no such state; a stock client never
// writes it, and a cloud without taints or leases behaves exactly as upstream.
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * A provider's taints (KEP-5055's device taints on a Placement provider): a
 * NoSchedule or NoExecute taint keeps the provider (a root: its whole tree)
 * out of allocation candidates unless the request tolerates its key.
 * Removed with the provider (trigger in drizzle/0006_ext_taints_leases.sql).
 */
export const extProviderTaints = sqliteTable(
  'ext_provider_taints',
  {
    resourceProviderId: integer('resource_provider_id').notNull(),
    key: text('key').notNull(),
    value: text('value').notNull().default(''),
    effect: text('effect').notNull(),
    reason: text('reason').notNull().default(''),
    createdAt: text('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.resourceProviderId, t.key, t.effect] })],
);

/**
 * A lease on a consumer's allocations: unless confirmed (deleted) before
 * `expires_at_ms`, the sweep removes the allocations, provided the consumer
 * is still at `consumer_generation` (nobody rewrote it since). Removed with
 * the consumer (trigger).
 */
export const extLeases = sqliteTable(
  'ext_leases',
  {
    consumerUuid: text('consumer_uuid').primaryKey(),
    consumerGeneration: integer('consumer_generation').notNull(),
    seconds: integer('seconds').notNull(),
    expiresAtMs: integer('expires_at_ms').notNull(),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('ext_leases_expires_at_ms_idx').on(t.expiresAtMs)],
);

/** Counters of the lease sweep (one row, name 'leases'), for the audit. */
export const extSweepStats = sqliteTable('ext_sweep_stats', {
  name: text('name').primaryKey(),
  runs: integer('runs').notNull().default(0),
  released: integer('released').notNull().default(0),
  /** Leases dropped without touching allocations: the consumer was rewritten after the lease. */
  dropped: integer('dropped').notNull().default(0),
  /** Leases released at once by a failed or timed-out ARQ bind (the binding condition). */
  bindingFailures: integer('binding_failures').notNull().default(0),
  lastRunAt: text('last_run_at'),
});
