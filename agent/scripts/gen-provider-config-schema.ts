// Regenerates schemas/provider-config.schema.json from the zod source of truth.
// Run: npx tsx agent/scripts/gen-provider-config-schema.ts
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { providerConfigJsonSchema } from '../src/provider-config/schema.js';

const target = fileURLToPath(new URL('../../schemas/provider-config.schema.json', import.meta.url));
writeFileSync(target, JSON.stringify(providerConfigJsonSchema(), null, 2) + '\n');
console.log(`wrote ${target}`);
