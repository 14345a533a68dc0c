// The provider config file format (seed 000, schema major 1) as zod. The
// committed JSON Schema in schemas/provider-config.schema.json is generated
// from this (agent/scripts/gen-provider-config-schema.ts) and a test fails when
// the two drift; files are validated with ajv against the JSON file.
import { z } from 'zod';

/** Nova's pattern for resource class and trait names (CUSTOM_ is checked after). */
export const NAME_PATTERN = /^[A-Z0-9_]{1,255}$/;
export const UUID_PATTERN = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;
export const SCHEMA_VERSION_PATTERN = /^1\.([0-9]|[1-9][0-9]+)$/;
export const COMPUTE_NODE = '$COMPUTE_NODE';

// Placement fills the optional fields; unknown fields are refused (as Nova does:
// they mirror placement's data model, a typo here would silently do nothing).
export const InventorySchema = z
  .object({
    total: z.int(),
    reserved: z.int().optional(),
    min_unit: z.int().optional(),
    max_unit: z.int().optional(),
    step_size: z.int().optional(),
    allocation_ratio: z.number().optional(),
  })
  .strict();

const inventoryByClass = z.record(z.string().regex(NAME_PATTERN), InventorySchema);

export const IdentificationSchema = z
  .object({
    uuid: z.union([z.string().regex(UUID_PATTERN), z.literal(COMPUTE_NODE)]).optional(),
    name: z.string().min(1).max(200).optional(),
  })
  // Future identification methods must pass the schema; "exactly one of
  // uuid/name" is checked after validation with a precise message.
  .loose();

export const ProviderSchema = z
  .object({
    identification: IdentificationSchema,
    inventories: z
      .object({
        // The spec's mapping form and the list-of-mappings form Nova deployments use.
        additional: z.union([z.array(inventoryByClass), inventoryByClass]).optional(),
      })
      .loose()
      .optional(),
    traits: z
      .object({ additional: z.array(z.string().regex(NAME_PATTERN)).optional() })
      .loose()
      .optional(),
  })
  .loose();

export const ProviderConfigFileSchema = z
  .object({
    // Reserved by Nova for the loader's own bookkeeping; never allowed in a file.
    __source_file: z.never().optional(),
    meta: z
      .object({
        // '1.0' (quoted, as Nova requires) or the spec's unquoted 1.0; the
        // loader checks the number's source text against the same pattern.
        schema_version: z.union([z.string().regex(SCHEMA_VERSION_PATTERN), z.number()]),
      })
      .loose(),
    providers: z.array(ProviderSchema).optional(),
  })
  .loose()
  .meta({
    $id: 'https://placement-edge/schemas/provider-config.schema.json',
    title: 'Provider config file (schema_version 1.x)',
    description: 'Resource provider inventory and trait customisation, as nova-compute reads it from [compute]provider_config_location.',
  });

export type Inventory = z.infer<typeof InventorySchema>;
export type Identification = z.infer<typeof IdentificationSchema>;
export type ProviderEntry = z.infer<typeof ProviderSchema>;
export type ProviderConfigFile = z.infer<typeof ProviderConfigFileSchema>;

export function providerConfigJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(ProviderConfigFileSchema, { target: 'draft-07', io: 'input' }) as Record<string, unknown>;
}
