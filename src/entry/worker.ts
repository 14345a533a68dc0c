// Cloudflare Worker entry: the same createApp(deps) as Node, on a libSQL
// server reached over HTTP. Deps are built once per isolate; migrations and
// the standard-name sync run on the isolate's first request (cheap when
// already applied: one read, one batched write).
//  - fetch: the HTTP API.
//  - queue: accelerator jobs (bind work, Nova events) -> jobs/consume.ts, the
//    same consumer Node's in-process queue calls. The dead-letter queue only
//    logs: the outbox row stays the record and the cron drain re-sends it.
//  - scheduled (cron): binding-timeout sweep + outbox drain (jobs/sweeps.ts).
import { createClient } from '@libsql/client/web';
import type { ExecutionContext } from 'hono';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { createDataStore } from '../db/client.js';
import { applyMigrations } from '../db/migrate.js';
import { MIGRATIONS } from '../db/migrations.generated.js';
import { syncStandards } from '../db/sync-standards.js';
import { consoleLogger, makeDeps, parsePolicyOverrides, type Deps } from '../deps.js';
import { consume } from '../jobs/consume.js';
import { cloudflareQueue, type QueueProducer } from '../jobs/queue.js';
import { runSweeps } from '../jobs/sweeps.js';

/** Bindings: string vars/secrets named as the Node environment, plus the JOBS queue producer. */
export type WorkerEnv = Record<string, unknown>;

/** The parts of Cloudflare's queue types this entry uses (no Workers globals in the Node tsconfig). */
interface QueueMessage { body: unknown; attempts: number; ack(): void; retry(options?: { delaySeconds?: number }): void }
interface QueueBatch { queue: string; messages: readonly QueueMessage[] }

type App = ReturnType<typeof createApp>;
interface Booted { app: App; deps: Deps }
let ready: Promise<Booted> | undefined;

function stringBindings(env: WorkerEnv): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value;
  return out;
}

function isQueueProducer(value: unknown): value is QueueProducer {
  return typeof value === 'object' && value !== null && typeof (value as { send?: unknown }).send === 'function';
}

async function boot(env: WorkerEnv): Promise<Booted> {
  const config = loadConfig(stringBindings(env));
  const client = createClient({ url: config.PLACEMENT_DB_URL, authToken: config.PLACEMENT_DB_AUTH_TOKEN });
  await applyMigrations(client, MIGRATIONS);
  await syncStandards(client);
  const overrides = config.PLACEMENT_POLICY_JSON
    ? parsePolicyOverrides(config.PLACEMENT_POLICY_JSON, 'PLACEMENT_POLICY_JSON')
    : undefined;
  const deps = makeDeps(createDataStore(client), config, consoleLogger(config.LOG_LEVEL), overrides);
  // Without a JOBS binding the cron drain delivers (outboxOnlyQueue).
  if (isQueueProducer(env.JOBS)) deps.jobs = cloudflareQueue(env.JOBS);
  return { app: createApp(deps), deps };
}

function booted(env: WorkerEnv): Promise<Booted> {
  // A failed boot is not cached: the next request tries again.
  ready ??= boot(env).catch((err: unknown) => {
    ready = undefined;
    throw err;
  });
  return ready;
}

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response> {
    return (await booted(env)).app.fetch(request, env, ctx);
  },

  async queue(batch: QueueBatch, env: WorkerEnv): Promise<void> {
    const { deps } = await booted(env);
    if (batch.queue.endsWith('-dlq')) {
      for (const msg of batch.messages) {
        deps.log.error('job reached the dead-letter queue; the outbox drain keeps retrying it', { body: JSON.stringify(msg.body) });
        msg.ack();
      }
      return;
    }
    for (const msg of batch.messages) {
      try {
        const result = await consume(deps, msg.body);
        if (result.outcome === 'retry') msg.retry({ delaySeconds: Math.max(1, Math.ceil(result.delayMs / 1000)) });
        else msg.ack();
      } catch (err) {
        deps.log.warn('job failed; queue will retry', { err: err instanceof Error ? err.message : String(err) });
        msg.retry({ delaySeconds: Math.min(300, 2 ** msg.attempts) });
      }
    }
  },

  async scheduled(_controller: unknown, env: WorkerEnv, ctx: ExecutionContext): Promise<void> {
    const { deps } = await booted(env);
    ctx.waitUntil(runSweeps(deps));
  },
};
