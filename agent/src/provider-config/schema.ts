// The provider config file format (seed 000, schema major 1) as zod, written
// after Nova's SCHEMA_V1 (nova/compute/provider_config.py). The committed JSON
// Schema in schemas/provider-config.schema.json is generated from this
// (agent/scripts/gen-provider-config-schema.ts) for editors and other tools; a
// test fails when the two drift. The loader itself judges files with the
// port of Nova's code in nova-rules.ts, which also follows Python's own
// semantics (`$` before a final newline, 1.0 as an integer, untyped items).
import * as z from 'zod';

export const COMPUTE_NODE = '$COMPUTE_NODE';
const NAME = /^[A-Z0-9_]{1,255}$/;
const UUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;

// Placement fills the optional fields; unknown fields are refused, as Nova does.
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

// Exactly one identification method; Nova checks only CUSTOM_ names after the schema.
export const IdentificationSchema = z.union([
  z.object({ uuid: z.union([z.string().regex(UUID), z.literal(COMPUTE_NODE)]) }).strict(),
  z.object({ name: z.string().min(1).max(200) }).strict(),
]);

export const ProviderSchema = z
  .object({
    identification: IdentificationSchema,
    inventories: z
      .object({
        // Nova's list of {RESOURCE_CLASS: inventory} mappings (the spec's bare mapping is refused).
        additional: z.array(z.record(z.string().regex(NAME), InventorySchema)).optional(),
      })
      .loose()
      .optional(),
    traits: z
      .object({ additional: z.array(z.string().regex(NAME)).optional() })
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
        // A string: an unquoted 1.0 is a float, which Nova cannot read a version from.
        schema_version: z.string().regex(/^1\.([0-9]|[1-9][0-9]+)$/),
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
