// Node-mode wiring: open the libSQL database, apply migrations, sync the
// standard names, and build the Deps createApp() needs. Shared by the
// server entry, the CLI, tests and the benchmark.
import type { AppConfig } from './config.js';
import { createDataStore, type DataStore } from './db/client.js';
import { applyMigrations } from './db/migrate.js';
import { openNodeClient } from './db/node-client.js';
import { readMigrationsDir } from './db/node-migrations.js';
import { syncStandards } from './db/sync-standards.js';
import { consoleLogger, type Deps, type Logger } from './deps.js';
import { PolicyEnforcer } from './http/policy.js';
import { readFileSync } from 'node:fs';
import { placementPolicyRules } from './placement/policies.js';

export async function openStore(config: AppConfig): Promise<DataStore> {
  const client = await openNodeClient(config.PLACEMENT_DB_URL, config.PLACEMENT_DB_AUTH_TOKEN);
  await applyMigrations(client, readMigrationsDir());
  await syncStandards(client);
  return createDataStore(client);
}

export function buildPolicy(config: AppConfig, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): PolicyEnforcer {
  const overrides = config.PLACEMENT_POLICY_FILE
    ? (JSON.parse(readFile(config.PLACEMENT_POLICY_FILE)) as Record<string, string>)
    : undefined;
  return new PolicyEnforcer(placementPolicyRules({ enforceNewDefaults: config.PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS, overrides }));
}

export async function buildNodeDeps(config: AppConfig, log: Logger = consoleLogger(config.LOG_LEVEL)): Promise<Deps> {
  const store = await openStore(config);
  return {
    store,
    config,
    policy: buildPolicy(config),
    clock: () => new Date(),
    newId: () => crypto.randomUUID(),
    log,
  };
}
