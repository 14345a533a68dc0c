// Shared counters (docs/extensions-gpu.md), declared once: on a provider with
// counters, for each counter, the sum over classes of usage x consumption
// stays within the counter's total. Every path is derived from this
// declaration by placement/capacity.ts: the candidates' capacity rule
// (candidates.ts), the claim guard's decision and its one-batch SQL
// (claim-guard.ts), the audit (audit.ts) and the dashboard.
import { COUNTER, COUNTER_USE } from '../../db/columns.js';
import type { ProviderConstraint } from '../../placement/capacity.js';

export const COUNTERS: ProviderConstraint = {
  name: 'shared counters',
  bounds: {
    table: 'ext_provider_counters',
    provider: COUNTER.resourceProviderId,
    key: COUNTER.name,
    bound: (c) => `${c}.${COUNTER.total}`,
  },
  weights: {
    table: 'ext_counter_consumption',
    provider: COUNTER_USE.resourceProviderId,
    resourceClass: COUNTER_USE.resourceClassId,
    key: COUNTER_USE.counter,
    weight: (cc) => `${cc}.${COUNTER_USE.amount}`,
  },
  describe: (counter, load, total) => `shared counter '${counter}': ${load} of ${total}`,
};
