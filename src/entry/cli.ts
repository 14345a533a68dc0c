// Management commands (the analogue of placement-manage):
//   npm run sync      apply migrations, sync standard resource classes and traits
// A setting that cannot work, or a database that cannot be reached, is one
// line naming the setting and the fix (as a refused start), not a stack.
import { openNodeClient } from '../db/node-client.js';
import { applyMigrations } from '../db/migrate.js';
import { readMigrationsDir } from '../db/node-migrations.js';
import { syncStandards } from '../placement/sync-standards.js';
import { databaseFailure } from '../database-failure.js';
import { checkSettings, SettingProblem } from '../settings-check.js';

const [command] = process.argv.slice(2);
if (command !== 'sync') {
  console.error('usage: tsx src/entry/cli.ts sync');
  process.exit(2);
}
try {
  // Authentication plays no part in a sync: only the database settings are checked.
  const config = checkSettings({ ...process.env, PLACEMENT_AUTH_STRATEGY: 'noauth2' });
  try {
    const client = await openNodeClient(config.PLACEMENT_DB_URL, config.PLACEMENT_DB_AUTH_TOKEN);
    const migrated = await applyMigrations(client, readMigrationsDir());
    const added = await syncStandards(client);
    console.log(`migrations applied: ${migrated}; resource classes added: ${added.resourceClasses}; traits added: ${added.traits}`);
    client.close();
  } catch (err) {
    const { problem, fix } = databaseFailure(config.PLACEMENT_DB_URL, err);
    throw new SettingProblem('PLACEMENT_DB_URL', problem, fix);
  }
} catch (err) {
  if (!(err instanceof SettingProblem)) throw err;
  console.error(`placement-edge sync: ${err.message}`);
  process.exit(1);
}
