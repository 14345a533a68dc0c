// Cloudflare Worker entry: the same createApp(deps) as Node, on a libSQL
// server reached over HTTP. Deps are built once per isolate; migrations and
// the standard-name sync run on the isolate's first request (cheap when
// already applied: one read, one batched write).
import { createClient } from '@libsql/client/web';
import type { ExecutionContext } from 'hono';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { createDataStore } from '../db/client.js';
import { applyMigrations } from '../db/migrate.js';
import { MIGRATIONS } from '../db/migrations.generated.js';
import { syncStandards } from '../db/sync-standards.js';
import { consoleLogger, makeDeps, parsePolicyOverrides } from '../deps.js';

/** Bindings: string vars/secrets named as the Node environment. */
export type WorkerEnv = Record<string, unknown>;


type App = ReturnType<typeof createApp>;
let ready: Promise<App> | undefined;

function stringBindings(env: WorkerEnv): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value;
  return out;
}

async function boot(env: WorkerEnv): Promise<App> {
  const config = loadConfig(stringBindings(env));
  const client = createClient({ url: config.PLACEMENT_DB_URL, authToken: config.PLACEMENT_DB_AUTH_TOKEN });
  await applyMigrations(client, MIGRATIONS);
  await syncStandards(client);
  const overrides = config.PLACEMENT_POLICY_JSON
    ? parsePolicyOverrides(config.PLACEMENT_POLICY_JSON, 'PLACEMENT_POLICY_JSON')
    : undefined;
  return createApp(makeDeps(createDataStore(client), config, consoleLogger(config.LOG_LEVEL), overrides));
}

function app(env: WorkerEnv): Promise<App> {
  // A failed boot is not cached: the next request tries again.
  ready ??= boot(env).catch((err: unknown) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response> {
    return (await app(env)).fetch(request, env, ctx);
  },
};
