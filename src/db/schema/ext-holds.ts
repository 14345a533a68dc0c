// Holds (docs/holds.md): capacity held for a project over a window
// [start, end), on pinned providers, and the consumers drawing from one.
// Upstream has no such state; a cloud without holds behaves exactly as upstream.
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/** A hold: a project's window. What it holds is in ext_hold_amounts (removed with it, by trigger). */
export const extHolds = sqliteTable(
  'ext_holds',
  {
    uuid: text('uuid').primaryKey(),
    /** The project's external id (Keystone's), as consumers name it. */
    projectId: text('project_id').notNull(),
    startMs: integer('start_ms').notNull(),
    endMs: integer('end_ms').notNull(),
    /** 'release': claims drawn from the hold are removed at its end; 'keep': they outlive it. */
    endAction: text('end_action').notNull(),
    /** Admitted ignoring allocations without an end (Slurm's IGNORE_JOBS). */
    ignoreAllocations: integer('ignore_allocations').notNull().default(0),
    /** Compared by PATCH and DELETE (a stale one answers 409), bumped by every edit. */
    generation: integer('generation').notNull().default(1),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  // The guard and the sweep look for holds by their end (those not yet over).
  (t) => [index('ext_holds_end_ms_idx').on(t.endMs)],
);

/** What a hold holds, per (provider, class). Removed with the hold and with the provider (triggers). */
export const extHoldAmounts = sqliteTable(
  'ext_hold_amounts',
  {
    holdUuid: text('hold_uuid').notNull(),
    resourceProviderId: integer('resource_provider_id').notNull(),
    resourceClassId: integer('resource_class_id').notNull(),
    amount: integer('amount').notNull(),
  },
  // A claim's guard reads the holds of the (provider, class) pairs it touches.
  (t) => [
    primaryKey({ columns: [t.holdUuid, t.resourceProviderId, t.resourceClassId] }),
    index('ext_hold_amounts_provider_idx').on(t.resourceProviderId, t.resourceClassId),
  ],
);

/**
 * A consumer whose allocations are drawn from a hold (ext_hold), as of
 * `consumer_generation`: a later rewrite without ext_hold makes them ordinary.
 * Removed with the consumer and with the hold (triggers).
 */
export const extHoldDraws = sqliteTable(
  'ext_hold_draws',
  {
    consumerUuid: text('consumer_uuid').primaryKey(),
    holdUuid: text('hold_uuid').notNull(),
    consumerGeneration: integer('consumer_generation').notNull(),
  },
  (t) => [index('ext_hold_draws_hold_idx').on(t.holdUuid)],
);

/**
 * One row: what the candidates' read hook compares with the state it keeps
 * (src/ext/holds/candidates.ts). `epoch` moves with every change a hold's
 * rule reads (holds, draws, leases, allocations and inventories of held
 * pairs: triggers in drizzle/0010); `database` tells one database from another.
 */
export const extHoldsEpoch = sqliteTable('ext_holds_epoch', {
  id: integer('id').primaryKey(),
  epoch: integer('epoch').notNull(),
  database: text('database').notNull(),
});
