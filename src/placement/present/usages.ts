// Wire shapes of usage reports. From 1.38 /usages nests the per-class sums
// under each consumer type with a consumer_count beside them.
import type { TypedUsage, Usages } from '../repo/usages.js';
import type { ProviderUsagesJson, TypedUsagesJson } from '../schemas/responses.js';

export function presentProviderUsages(usages: Usages, generation: number): ProviderUsagesJson {
  return { resource_provider_generation: generation, usages };
}

export function presentTypedUsages(groups: Record<string, TypedUsage>): TypedUsagesJson {
  const usages: TypedUsagesJson['usages'] = {};
  for (const [type, group] of Object.entries(groups)) {
    usages[type] = { consumer_count: group.consumerCount, ...group.usages };
  }
  return { usages };
}
