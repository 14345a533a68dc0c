// Management commands (the analogue of placement-manage):
//   npm run sync      apply migrations, sync standard resource classes and traits
import { loadConfig } from '../config.js';
import { openNodeClient } from '../db/node-client.js';
import { applyMigrations } from '../db/migrate.js';
import { readMigrationsDir } from '../db/node-migrations.js';
import { syncStandards } from '../placement/sync-standards.js';

const [command] = process.argv.slice(2);
if (command !== 'sync') {
  console.error('usage: tsx src/entry/cli.ts sync');
  process.exit(2);
}
const config = loadConfig(process.env);
const client = await openNodeClient(config.PLACEMENT_DB_URL, config.PLACEMENT_DB_AUTH_TOKEN);
const migrated = await applyMigrations(client, readMigrationsDir());
const added = await syncStandards(client);
console.log(`migrations applied: ${migrated}; resource classes added: ${added.resourceClasses}; traits added: ${added.traits}`);
client.close();
