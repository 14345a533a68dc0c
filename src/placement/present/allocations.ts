// Wire shapes of GET /allocations/{consumer} and
// GET /resource_providers/{uuid}/allocations, by microversion.
import type { ConsumerView } from '../repo/consumers.js';
import type { ConsumerAllocationRow, ProviderAllocationRow } from '../repo/allocations.js';
import type { ConsumerAllocationsJson, ProviderAllocationsJson } from '../schemas/responses.js';
import { newest } from './timestamps.js';

export interface ConsumerAllocationsShape {
  /** 1.12+: project_id and user_id. */
  withOwner: boolean;
  /** 1.28+: consumer_generation. */
  withGeneration: boolean;
  /** 1.38+: consumer_type. */
  withType: boolean;
}

export function presentConsumerAllocations(
  rows: ConsumerAllocationRow[],
  consumer: ConsumerView | undefined,
  shape: ConsumerAllocationsShape,
): ConsumerAllocationsJson {
  const byProvider: ConsumerAllocationsJson['allocations'] = {};
  for (const row of rows) {
    const entry = (byProvider[row.providerUuid] ??= { generation: row.providerGeneration, resources: {} });
    entry.resources[row.resourceClass] = row.used;
  }
  const body: ConsumerAllocationsJson = { allocations: byProvider };
  // Owner fields appear only when there is something allocated, as upstream.
  if (rows.length > 0 && consumer && shape.withOwner) {
    body.project_id = consumer.projectId;
    body.user_id = consumer.userId;
    if (shape.withGeneration) body.consumer_generation = consumer.generation;
    if (shape.withType) body.consumer_type = consumer.consumerType;
  }
  return body;
}

export function presentProviderAllocations(
  rows: ProviderAllocationRow[],
  providerGeneration: number,
  withConsumerGeneration: boolean,
): ProviderAllocationsJson {
  // One entry type for both ranges: consumer_generation is set from 1.28 only.
  const byConsumer: Record<string, { resources: Record<string, number>; consumer_generation?: number | null }> = {};
  for (const row of rows) {
    let entry = byConsumer[row.consumerUuid];
    if (!entry) {
      entry = { resources: {} };
      if (withConsumerGeneration) entry.consumer_generation = row.consumerGeneration;
      byConsumer[row.consumerUuid] = entry;
    }
    entry.resources[row.resourceClass] = row.used;
  }
  return { allocations: byConsumer, resource_provider_generation: providerGeneration };
}

/** Newest write among the allocations, for last-modified (null = none: "now"). */
export function allocationsLastModified(rows: { createdAt: string; updatedAt: string | null }[]): string | null {
  return newest(...rows.flatMap((r) => [r.createdAt, r.updatedAt]));
}
