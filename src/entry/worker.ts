// Cloudflare Worker entry: the same createApp(deps) as Node, on a libSQL
// server reached over HTTP. Deps are built once per isolate; migrations and
// the standard-name sync run on the isolate's first request (cheap when
// already applied: one read, one batched write).
//  - fetch: the HTTP API.
//  - queue: accelerator jobs (bind work, Nova events) -> jobs/consume.ts, the
//    same consumer Node's in-process queue calls. The dead-letter queue only
//    logs: the outbox row stays the record and the cron drain re-sends it.
//  - scheduled (cron): binding-timeout sweep + outbox drain (jobs/sweeps.ts).
//
// Workers types come from the module form of @cloudflare/workers-types (no
// globals, so they do not clash with Node's in the shared tsconfig). workerd
// hands us its own Request; hono only needs the standard Fetch API shape.
import type {
  ExecutionContext,
  ExportedHandler,
  MessageBatch,
  Request as WorkerRequest,
  Response as WorkerResponse,
} from '@cloudflare/workers-types/index';
import { createClient, type Client } from '@libsql/client/web';
import { z } from 'zod';
import { createApp } from '../app.js';
import { type AppConfig, loadConfig } from '../config.js';
import { createDataStore, type DataStore } from '../db/client.js';
import { fetchWithTimeout } from '../db/replica.js';
import { applyMigrations } from '../db/migrate.js';
import { MIGRATIONS } from '../db/migrations.generated.js';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../placement/standard-names.generated.js';
import { syncStandards } from '../placement/sync-standards.js';
import { makeDeps } from '../compose.js';
import { consoleLogger, parsePolicyOverrides, type Deps, type Logger } from '../deps.js';
import { STATUS_TITLES } from '../http/api-error.js';
import { consume } from '../jobs/consume.js';
import type { JobMessage } from '../jobs/messages.js';
import { cloudflareQueue, type QueueProducer } from '../jobs/queue.js';
import { runSweeps } from '../jobs/sweeps.js';
import { configSummary } from '../observability/config-summary.js';
import { isolateMetrics } from '../observability/source.js';
import { RC, TRAIT } from '../db/columns.js';
import { warmUpIsolate } from './worker-warm-up.js';

// The app and the candidates engine run once while the module is evaluated,
// before the isolate's first request (worker-warm-up.ts). No I/O, only
// promises that settle at once: the evaluation waits for them.
await warmUpIsolate();

/**
 * Bindings: string vars/secrets named as the Node environment (see
 * src/config.ts), LIBSQL_URL / LIBSQL_AUTH_TOKEN as aliases of the
 * PLACEMENT_DB_* pair, and the JOBS queue producer.
 */
export type WorkerEnv = Record<string, unknown>;

const QueueProducerBinding = z.custom<QueueProducer>(
  (value) => typeof value === 'object' && value !== null && typeof (value as { send?: unknown }).send === 'function',
);

/** The non-string bindings, checked; the string ones go through ConfigSchema. */
const BindingsSchema = z.object({
  LIBSQL_URL: z.string().min(1).optional(),
  LIBSQL_AUTH_TOKEN: z.string().optional(),
  JOBS: QueueProducerBinding.optional(),
});

/** Node-style environment from the bindings: strings only, LIBSQL_* filling the PLACEMENT_DB_* names. */
export function environmentFromBindings(env: WorkerEnv): Record<string, string | undefined> {
  const bindings = BindingsSchema.parse(env);
  const out: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value;
  out.PLACEMENT_DB_URL ??= bindings.LIBSQL_URL;
  out.PLACEMENT_DB_AUTH_TOKEN ??= bindings.LIBSQL_AUTH_TOKEN;
  if (!out.PLACEMENT_DB_URL) throw new Error('PLACEMENT_DB_URL (or LIBSQL_URL) binding is required in Worker mode');
  return out;
}

type App = ReturnType<typeof createApp>;
interface Booted {
  app: App;
  deps: Deps;
}
let ready: Promise<Booted> | undefined;

/**
 * Migrations and the standard-name sync, safe when several isolates start at
 * once on a new database. Every new isolate runs this before its first
 * answer: a database already prepared is recognised in one read-only round
 * trip (the write transaction of the migrations check and the read of every
 * name took several, and the transaction queued isolates behind each other).
 */
export async function prepareDatabase(client: Client): Promise<void> {
  if (await alreadyPrepared(client)) return;
  await applyMigrations(client, MIGRATIONS);
  await syncStandards(client);
}

const LATEST_MIGRATION = Math.max(...MIGRATIONS.map((m) => m.when));

/**
 * Every bundled migration applied, and the standard names all there: the
 * classes by their positional ids, the traits by count (standard names are
 * only ever added upstream, so a database with exactly as many non-custom
 * traits holds exactly these; one with more came from a newer release and
 * takes the full check). False when in doubt: the full check is idempotent.
 */
async function alreadyPrepared(client: Client): Promise<boolean> {
  try {
    const [migration, classes, traits] = await client.batch(
      [
        'SELECT max(created_at) FROM __drizzle_migrations',
        { sql: `SELECT count(*) FROM resource_classes WHERE ${RC.id} < ?`, args: [STANDARD_RESOURCE_CLASSES.length] },
        `SELECT count(*) FROM traits WHERE ${TRAIT.name} NOT LIKE 'CUSTOM\\_%' ESCAPE '\\'`,
      ],
      'read',
    );
    return (
      Number(migration!.rows[0]![0] ?? -1) >= LATEST_MIGRATION &&
      Number(classes!.rows[0]![0]) === STANDARD_RESOURCE_CLASSES.length &&
      Number(traits!.rows[0]![0]) === STANDARD_TRAITS.length
    );
  } catch {
    // No bookkeeping table yet: a new database.
    return false;
  }
}

/**
 * The Worker's store: the primary over fetch, and the replica near this
 * location where PLACEMENT_DB_READ_URL names one (db/replica.ts).
 */
export function openWorkerStore(config: AppConfig, log: Logger): DataStore {
  // No client-side limit on concurrent requests: libSQL's default (20) queues the next one and starts it
  // from the code of whichever request finishes first, I/O on behalf of another request, which workerd
  // refuses: the queued request hung (seen with 24 concurrent binds in test/worker/accelerator-queue.test.ts).
  const client = createClient({
    url: config.PLACEMENT_DB_URL,
    authToken: config.PLACEMENT_DB_AUTH_TOKEN,
    concurrency: Number.MAX_SAFE_INTEGER,
  });
  const replica = config.PLACEMENT_DB_READ_URL
    ? {
        client: createClient({
          url: config.PLACEMENT_DB_READ_URL,
          authToken: config.PLACEMENT_DB_READ_AUTH_TOKEN,
          concurrency: Number.MAX_SAFE_INTEGER,
          fetch: fetchWithTimeout(config.PLACEMENT_DB_READ_TIMEOUT_MS),
        }),
        retryMs: config.PLACEMENT_DB_READ_RETRY_MS,
        log,
      }
    : undefined;
  return createDataStore(client, undefined, replica);
}

async function boot(env: WorkerEnv): Promise<Booted> {
  const config = loadConfig(environmentFromBindings(env));
  const log = consoleLogger(config.LOG_LEVEL);
  const store = openWorkerStore(config, log);
  await prepareDatabase(store.client);
  const overrides = config.PLACEMENT_POLICY_JSON ? parsePolicyOverrides(config.PLACEMENT_POLICY_JSON, 'PLACEMENT_POLICY_JSON') : undefined;
  // Without a JOBS binding the cron drain delivers (outboxOnlyQueue).
  const producer = BindingsSchema.parse(env).JOBS;
  const deps = makeDeps(store, config, log, {
    policyOverrides: overrides,
    jobs: producer ? cloudflareQueue(producer) : undefined,
    // Each scrape lands on some isolate: its own counters would read as resets. The database gauges are complete.
    metricsSource: isolateMetrics,
  });
  // Project limits (PLACEMENT_LIMITS): the cron refreshes them; the first isolate of a database never read them reads them now.
  if (deps.limits) {
    await deps.limits.prepare();
    if ((await deps.limits.readAt()) === null) await deps.limits.start();
  }
  log.info('placement-edge isolate started', { config: configSummary(config) });
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

/** A boot failure (bad bindings, libSQL unreachable) in the API's error envelope; the reason stays in the log. */
export function bootFailure(): Response {
  const status = 503;
  const body = {
    errors: [
      {
        status,
        title: STATUS_TITLES[status] ?? 'Service Unavailable',
        detail: 'The service could not start (configuration or database); see the Worker logs.',
        request_id: `req-${crypto.randomUUID()}`,
      },
    ],
  };
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

// The Fetch API objects are the same at run time; only the two type packages differ.
const asFetchRequest = (request: WorkerRequest): Request => request as unknown as Request;
const asWorkerResponse = (response: Response): WorkerResponse => response as unknown as WorkerResponse;

export default {
  async fetch(request, env, ctx) {
    let app: App;
    try {
      ({ app } = await booted(env));
    } catch (err) {
      // The bindings may be what failed: log as consoleLogger does, without it.
      const reason = err instanceof Error ? err.message : String(err);
      console.error(
        JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'placement-edge worker failed to start', err: reason }),
      );
      return asWorkerResponse(bootFailure());
    }
    return asWorkerResponse(await app.fetch(asFetchRequest(request), env, ctx));
  },

  async queue(batch: MessageBatch<JobMessage>, env) {
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
        // consume() validates the body itself (zod): a malformed message is acked, not retried forever.
        const result = await consume(deps, msg.body);
        if (result.outcome === 'retry') msg.retry({ delaySeconds: Math.max(1, Math.ceil(result.delayMs / 1000)) });
        else msg.ack();
      } catch (err) {
        deps.log.warn('job failed; queue will retry', { err: err instanceof Error ? err.message : String(err) });
        msg.retry({ delaySeconds: Math.min(300, 2 ** msg.attempts) });
      }
    }
  },

  async scheduled(_controller, env, ctx: ExecutionContext) {
    const { deps } = await booted(env);
    ctx.waitUntil(runSweeps(deps));
  },
} satisfies ExportedHandler<WorkerEnv, JobMessage>;
