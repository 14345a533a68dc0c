// Placement tables. Names and shapes follow OpenStack Placement's own schema
// (placement/db/sqlalchemy/models.py) so its query logic translates directly.
import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

const timestamps = {
  createdAt: text('created_at').notNull().default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`),
  updatedAt: text('updated_at'),
};

/** Standard classes keep their positional ids (0..N); custom ones start at 10000. */
export const resourceClasses = sqliteTable(
  'resource_classes',
  {
    id: integer('id').primaryKey(),
    name: text('name').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_resource_classes0name').on(t.name)],
);

export const traits = sqliteTable(
  'traits',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    name: text('name').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_traits0name').on(t.name)],
);

export const resourceProviders = sqliteTable(
  'resource_providers',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    name: text('name').notNull(),
    generation: integer('generation').notNull().default(0),
    // root_provider_id is the provider's own id for a root: tree queries then need no recursion.
    rootProviderId: integer('root_provider_id'),
    parentProviderId: integer('parent_provider_id'),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('uniq_resource_providers0uuid').on(t.uuid),
    uniqueIndex('uniq_resource_providers0name').on(t.name),
    index('resource_providers_root_provider_id_idx').on(t.rootProviderId),
    index('resource_providers_parent_provider_id_idx').on(t.parentProviderId),
  ],
);

export const inventories = sqliteTable(
  'inventories',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    resourceProviderId: integer('resource_provider_id').notNull(),
    resourceClassId: integer('resource_class_id').notNull(),
    total: integer('total').notNull(),
    reserved: integer('reserved').notNull().default(0),
    minUnit: integer('min_unit').notNull().default(1),
    maxUnit: integer('max_unit').notNull(),
    stepSize: integer('step_size').notNull().default(1),
    allocationRatio: real('allocation_ratio').notNull().default(1.0),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('uniq_inventories0resource_provider_resource_class').on(t.resourceProviderId, t.resourceClassId),
    // candidate search starts from "who has class X": keep that an index scan.
    index('inventories_resource_class_id_idx').on(t.resourceClassId),
  ],
);

export const allocations = sqliteTable(
  'allocations',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    resourceProviderId: integer('resource_provider_id').notNull(),
    consumerId: text('consumer_id').notNull(),
    resourceClassId: integer('resource_class_id').notNull(),
    used: integer('used').notNull(),
    ...timestamps,
  },
  (t) => [
    index('allocations_resource_provider_class_used_idx').on(t.resourceProviderId, t.resourceClassId, t.used),
    index('allocations_consumer_id_idx').on(t.consumerId),
  ],
);

export const placementAggregates = sqliteTable(
  'placement_aggregates',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_placement_aggregates0uuid').on(t.uuid)],
);

export const resourceProviderAggregates = sqliteTable(
  'resource_provider_aggregates',
  {
    resourceProviderId: integer('resource_provider_id').notNull(),
    aggregateId: integer('aggregate_id').notNull(),
    ...timestamps,
  },
  (t) => [
    primaryKey({ columns: [t.resourceProviderId, t.aggregateId] }),
    index('resource_provider_aggregates_aggregate_id_idx').on(t.aggregateId),
  ],
);

export const resourceProviderTraits = sqliteTable(
  'resource_provider_traits',
  {
    resourceProviderId: integer('resource_provider_id').notNull(),
    traitId: integer('trait_id').notNull(),
    ...timestamps,
  },
  (t) => [primaryKey({ columns: [t.resourceProviderId, t.traitId] }), index('resource_provider_traits_trait_id_idx').on(t.traitId)],
);

export const projects = sqliteTable(
  'projects',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    externalId: text('external_id').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_projects0external_id').on(t.externalId)],
);

export const users = sqliteTable(
  'users',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    externalId: text('external_id').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_users0external_id').on(t.externalId)],
);

export const consumerTypes = sqliteTable(
  'consumer_types',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    name: text('name').notNull(),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_consumer_types0name').on(t.name)],
);

export const consumers = sqliteTable(
  'consumers',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    uuid: text('uuid').notNull(),
    projectId: integer('project_id').notNull(),
    userId: integer('user_id').notNull(),
    generation: integer('generation').notNull().default(0),
    /** null means "unknown": allocations written before 1.38. */
    consumerTypeId: integer('consumer_type_id'),
    ...timestamps,
  },
  (t) => [uniqueIndex('uniq_consumers0uuid').on(t.uuid), index('consumers_project_id_user_id_uuid_idx').on(t.projectId, t.userId, t.uuid)],
);

/**
 * Which provider trees changed, and when: one row per root, its `seq` raised
 * by triggers (drizzle/0003_tree_changes.sql) on every write to a tree's
 * providers, inventories, traits or aggregates. Allocation candidates keep
 * the trees in memory and re-read only those whose seq passed theirs; root 0
 * stands for a change that touches every tree (a resource class renamed).
 */
export const placementTreeChanges = sqliteTable(
  'placement_tree_changes',
  {
    rootId: integer('root_id').primaryKey(),
    seq: integer('seq').notNull(),
  },
  (t) => [index('placement_tree_changes_seq_idx').on(t.seq)],
);

/**
 * Which providers' usage changed, and when: one row per provider, its `seq`
 * raised by triggers (drizzle/0015_usage_changes.sql) on every insert, update
 * or delete of its allocations, whichever process writes. A kept allocation
 * candidates answer reads the providers whose seq passed its own and their
 * usage, not every provider's usage.
 */
export const placementUsageChanges = sqliteTable(
  'placement_usage_changes',
  {
    providerId: integer('provider_id').primaryKey(),
    seq: integer('seq').notNull(),
  },
  (t) => [index('placement_usage_changes_seq_idx').on(t.seq)],
);

/**
 * One row: a random token made when the database is created. The trees kept
 * in memory remember it and read everything again when it changes (the
 * database file replaced under a running service).
 */
export const placementEpoch = sqliteTable('placement_epoch', {
  id: integer('id').primaryKey(),
  token: text('token').notNull(),
});

/**
 * One row: a counter every write batch raises when the instance reads from a
 * replica (PLACEMENT_DB_READ_URL; db/replica.ts). A replica whose mark is
 * below the last one this instance wrote has not caught up with it yet, so
 * its read goes to the primary instead: reads stay as fresh as our writes.
 */
export const placementWriteMarks = sqliteTable('placement_write_marks', {
  id: integer('id').primaryKey(),
  mark: integer('mark').notNull(),
});
