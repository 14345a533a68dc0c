// Shared counters of partitionable devices (extension, docs/extensions-gpu.md; KEP-4815's
// idea on Placement's data): a provider may declare counters (an H100's 7
// compute slices, 8 memory slices) and how many units of each counter one
// unit of a resource class consumes. The capacity rule then also requires,
// per counter, sum over classes of usage x consumption <= the counter.
// Rows leave with their provider, and a consumption row with its inventory
// (triggers in the migration), so a stock client that deletes either never
// meets a dangling row.
import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core';

export const extProviderCounters = sqliteTable(
  'ext_provider_counters',
  {
    resourceProviderId: integer('resource_provider_id').notNull(),
    name: text('name').notNull(),
    total: integer('total').notNull(),
  },
  (t) => [primaryKey({ columns: [t.resourceProviderId, t.name] })],
);

export const extCounterConsumption = sqliteTable(
  'ext_counter_consumption',
  {
    resourceProviderId: integer('resource_provider_id').notNull(),
    resourceClassId: integer('resource_class_id').notNull(),
    counter: text('counter').notNull(),
    amount: integer('amount').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.resourceProviderId, t.resourceClassId, t.counter] }),
    // Candidates ask "does a requested class consume a counter anywhere?": an index scan by class.
    index('ext_counter_consumption_class_idx').on(t.resourceClassId),
  ],
);
