// What the agent sends to and reads from Placement, as types inferred from the
// service's own zod schemas (the ones GET /openapi.json is generated from).
// Type-only imports: nothing of the service is bundled into the agent.
import type { z } from 'zod';
import type { putAggregatesV1_19 } from '../../../src/placement/schemas/aggregates.js';
import type { putInventoriesSchema } from '../../../src/placement/schemas/inventories.js';
import type { createProviderV1_14 } from '../../../src/placement/schemas/providers.js';
import type {
  aggregatesV1_19,
  inventoriesSchema,
  PlacementErrorEnvelope,
  providerListV1_14,
  providerTraitsResponseSchema,
  providerV1_14,
} from '../../../src/placement/schemas/responses.js';
import type { putProviderTraitsSchema } from '../../../src/placement/schemas/traits.js';

/** A request body as the service's schema accepts it (the agent speaks 1.39, see client.ts). */
type Body<S extends z.ZodType> = z.input<S>;
/** An answer as the service's schema describes it at 1.39. */
type Answer<S extends z.ZodType> = z.infer<S>;

export type CreateProviderBody = Body<typeof createProviderV1_14>;
export type PutInventoriesBody = Body<typeof putInventoriesSchema>;
export type PutProviderTraitsBody = Body<typeof putProviderTraitsSchema>;
export type PutAggregatesBody = Body<typeof putAggregatesV1_19>;

export type Provider = Answer<typeof providerV1_14>;
export type ProviderList = Answer<typeof providerListV1_14>;
export type Inventories = Answer<typeof inventoriesSchema>;
export type ProviderTraits = Answer<typeof providerTraitsResponseSchema>;
export type Aggregates = Answer<typeof aggregatesV1_19>;
export type PlacementErrorBody = Answer<typeof PlacementErrorEnvelope>;
