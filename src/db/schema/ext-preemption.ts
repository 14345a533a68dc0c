// Tables of preemption (docs/preemption.md): priorities of consumers and
// projects, and the preemptions made with their victims.
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';

/**
 * A consumer's preemption priority (docs/preemption.md): a consumer with one
 * (or whose project has a default, below) may be evicted by a preemptor of a
 * higher priority; one with neither is never preemptible. Removed with the
 * consumer (trigger in drizzle/0011_ext_preemption.sql).
 */
export const extConsumerPriorities = sqliteTable('ext_consumer_priorities', {
  consumerUuid: text('consumer_uuid').primaryKey(),
  priority: integer('priority').notNull(),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
});

/** A project's default priority (a "spot" project): its consumers without a priority of their own take it. */
export const extProjectPriorities = sqliteTable('ext_project_priorities', {
  projectExternalId: text('project_external_id').primaryKey(),
  priority: integer('priority').notNull(),
  createdAt: text('created_at').notNull(),
  updatedAt: text('updated_at').notNull(),
});

/**
 * A preemption: victims leased for eviction and the capacity they free held
 * for the preemptor (a hold owned by the preemptor's consumer).
 */
export const extPreemptions = sqliteTable(
  'ext_preemptions',
  {
    id: text('id').primaryKey(),
    preemptorConsumerUuid: text('preemptor_consumer_uuid').notNull(),
    preemptorProject: text('preemptor_project').notNull(),
    priority: integer('priority').notNull(),
    holdId: text('hold_id'),
    graceSeconds: integer('grace_seconds').notNull(),
    createdAt: text('created_at').notNull(),
  },
  // The events' triggers find a nomination's preemption by its hold (drizzle/0013).
  (t) => [index('ext_preemptions_hold_idx').on(t.holdId)],
);

/**
 * A victim of one preemption: the primary key on the consumer makes a second
 * preemption over the same victim fail in its own write batch (no consumer
 * is evicted twice); `consumer_generation` is the victim as the preemption saw it.
 */
export const extPreemptionVictims = sqliteTable(
  'ext_preemption_victims',
  {
    consumerUuid: text('consumer_uuid').primaryKey(),
    preemptionId: text('preemption_id').notNull(),
    consumerGeneration: integer('consumer_generation').notNull(),
    priority: integer('priority').notNull(),
    resources: text('resources').notNull(),
  },
  (t) => [index('ext_preemption_victims_preemption_idx').on(t.preemptionId)],
);
