// Every table's SQL column names by their drizzle schema keys, resolved once
// at load (columnNames in ./rows.ts). The hand-written statements name their
// columns through these (`UPDATE resource_providers SET ${RP.generation} = ?`)
// and their row decoders read rows by them (`num(row, RP.generation)`), so
// renaming or dropping a column in src/db/schema fails `npm run typecheck`;
// at run time the statements are the same constant text as before.
import { columnNames } from './rows.js';
import * as t from './schema/index.js';

// Placement.
export const RC = columnNames(t.resourceClasses);
export const TRAIT = columnNames(t.traits);
export const RP = columnNames(t.resourceProviders);
export const INV = columnNames(t.inventories);
export const ALLOC = columnNames(t.allocations);
export const AGG = columnNames(t.placementAggregates);
export const RP_AGG = columnNames(t.resourceProviderAggregates);
export const RP_TRAIT = columnNames(t.resourceProviderTraits);
export const PROJECT = columnNames(t.projects);
export const USER = columnNames(t.users);
export const CONSUMER_TYPE = columnNames(t.consumerTypes);
export const CONSUMER = columnNames(t.consumers);
export const TREE_CHANGE = columnNames(t.placementTreeChanges);
export const USAGE_CHANGE = columnNames(t.placementUsageChanges);
export const EPOCH = columnNames(t.placementEpoch);
export const WRITE_MARK = columnNames(t.placementWriteMarks);
// Cyborg.
export const DEVICE_PROFILE = columnNames(t.deviceProfiles);
export const DEVICE = columnNames(t.devices);
export const DEPLOYABLE = columnNames(t.deployables);
export const ATTRIBUTE = columnNames(t.attributes);
export const ATTACH_HANDLE = columnNames(t.attachHandles);
export const ARQ = columnNames(t.acceleratorRequests);
export const OUTBOX = columnNames(t.outbox);
// Extensions.
export const COUNTER = columnNames(t.extProviderCounters);
export const COUNTER_USE = columnNames(t.extCounterConsumption);
export const TAINT = columnNames(t.extProviderTaints);
export const LEASE = columnNames(t.extLeases);
export const SWEEP_STAT = columnNames(t.extSweepStats);
export const LIMIT = columnNames(t.extLimits);
export const LIMIT_SYNC = columnNames(t.extLimitsSync);
export const LIMIT_USAGE = columnNames(t.extLimitUsage);
export const LIMIT_COUNTING = columnNames(t.extLimitCounting);
export const HOLD = columnNames(t.extHolds);
export const HOLD_AMOUNT = columnNames(t.extHoldAmounts);
export const HOLD_DRAW = columnNames(t.extHoldDraws);
export const HOLD_EPOCH = columnNames(t.extHoldsEpoch);
export const SITE_REPLAY = columnNames(t.extSiteReplays);
export const SITE_LIMIT_SLICE = columnNames(t.extSiteLimitSlices);

// Preemption (docs/preemption.md).
export const CONSUMER_PRIORITY = columnNames(t.extConsumerPriorities);
export const PROJECT_PRIORITY = columnNames(t.extProjectPriorities);
export const PREEMPTION = columnNames(t.extPreemptions);
export const PREEMPTION_VICTIM = columnNames(t.extPreemptionVictims);

// The events stream (docs/events.md).
export const EVENT = columnNames(t.extEvents);
