// Shared counters on the write side (extension, docs/extensions-gpu.md), as the write
// kernel's claim guard (placement/writes/hooks.ts): the claim's snapshot reads
// the counters of the providers it names, the ordinary path refuses a claim
// that would push a counter over its total (model.ts holds the rule), and the
// one-batch claim's guard checks the same as of the write (sql.ts). The
// providers' generation compare-and-swap protects what it read, since only a
// claim, a reshape or an inventory change moves usage on a provider.
import type { ClaimGuard, WriteExtension } from '../../placement/writes/hooks.js';
import { ClaimRefused, consumersOn } from '../../placement/writes/refusals.js';
import { exceededCounter } from './model.js';
import { countersHoldSql, providerCountersOf, providerCountersStatements } from './sql.js';

export const countersClaimGuard: ClaimGuard = {
  name: 'shared counters',
  snapshotStatements: (providerUuids) => providerCountersStatements(providerUuids),
  decider: (results) => {
    const table = providerCountersOf(results);
    return (claim) => {
      for (const id of claim.providerIds) {
        const counters = table.get(id);
        if (!counters) continue;
        const over = exceededCounter(
          counters,
          (classId) => claim.usedBefore(id, classId),
          (classId) => claim.usedAfter(id, classId),
        );
        if (!over) continue;
        const onProvider = claim.entries.filter((entry) => entry.provider.id === id);
        const e = onProvider.find((entry) => counters.consumption.has(entry.classId)) ?? onProvider[0]!;
        return {
          resourceClass: e.resourceClass,
          error: new ClaimRefused(
            `Unable to create allocation for '${e.resourceClass}' on resource provider '${e.provider.uuid}'. The requested amount would exceed the capacity. (shared counter '${over.name}': ${over.load} of ${over.total})`,
            consumersOn(claim.claims, [e.provider.uuid]),
          ),
        };
      }
      return null;
    };
  },
  holdsSql: countersHoldSql,
};

export const countersWrites: WriteExtension = { claimGuards: [countersClaimGuard] };
