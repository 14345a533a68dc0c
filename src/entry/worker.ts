// Cloudflare Worker entry: the same createApp(deps) as Node, on a libSQL
// server reached over HTTP. Deps are built once per isolate; migrations and
// the standard-name sync run on the isolate's first request (cheap when
// already applied: one read, one batched write).
//  - fetch: the HTTP API.
//  - queue: accelerator jobs (bind work, Nova events) -> jobs/consume.ts, the
//    same consumer Node's in-process queue calls. The dead-letter queue only
//    logs: the outbox row stays the record and the cron drain re-sends it.
//  - scheduled (cron): binding-timeout sweep + outbox drain (jobs/sweeps.ts).
// No handler leaves a failure to the runtime (an "Uncaught" line in the
// Worker's logs): a start that fails, a sweep that fails and a job that fails
// are each logged once in the service's log format.
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
import { createClient } from '@libsql/client/web';
import * as z from 'zod';
import { createApp } from '../app.js';
import { type AppConfig, loadConfig } from '../config.js';
import { createDataStore, type DataStore } from '../db/client.js';
import { databaseTimeoutIn } from '../db/deadline.js';
import { hranaReads } from '../db/hrana-reads.js';
import { clientRequestLimitMs, databaseDeadline, replicaWithDeadline } from './database-deadline.js';
import { databaseFailure } from './database-failure.js';
import { fetchWithTimeout } from '../db/replica.js';
import { makeDeps } from '../compose.js';
import { consoleByLevel, consoleLogger, parsePolicyOverrides, type Deps, type Logger } from '../deps.js';
import { STATUS_TITLES } from '../http/api-error.js';
import { consume } from '../jobs/consume.js';
import type { JobMessage } from '../jobs/messages.js';
import { cloudflareQueue, type QueueProducer } from '../jobs/queue.js';
import { runSweepsLogged } from '../jobs/sweeps.js';
import { configSummary } from '../observability/config-summary.js';
import { isolateMetrics } from '../observability/source.js';
import { prepareDatabase } from './prepare-database.js';
import { runWarmUp, workerWarmUp } from './warm-up.js';

// Nothing runs at module evaluation but these definitions: workerd forbids
// random values, timers and I/O in global scope. The warm-up hook runs after
// the isolate's first answer (warmUpOnce).

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
// Per isolate by design: an isolate runs this module for one deployment, so it serves one app.
let ready: Promise<Booted> | undefined;
let warming: Promise<boolean> | undefined;

/**
 * The warm-up hook (warm-up.ts), once per isolate, after the answer that
 * triggered it has been handed back (a timer, allowed in a request): that
 * request does not wait for it, the later ones find it done. A failure is
 * logged as an error.
 */
function warmUpOnce(deps: Deps, ctx: ExecutionContext): void {
  if (warming) return;
  warming = new Promise((resolve) => setTimeout(resolve, 0)).then(() => runWarmUp(workerWarmUp, deps));
  ctx.waitUntil(warming);
}

/**
 * The Worker's store: the primary over fetch, and the replica near this
 * location where PLACEMENT_DB_READ_URL names one (db/replica.ts).
 */
export function openWorkerStore(config: AppConfig, log: Logger): DataStore {
  // No client-side limit on concurrent requests: libSQL's default (20) queues the next one and starts it
  // from the code of whichever request finishes first, I/O on behalf of another request, which workerd
  // refuses: the queued request hung (seen with 24 concurrent binds in test/worker/accelerator-queue.test.ts).
  // Each request to the server closed a little after the longest deadline (database-deadline.ts).
  const limited = fetchWithTimeout(clientRequestLimitMs(config));
  const client = createClient({
    url: config.PLACEMENT_DB_URL,
    authToken: config.PLACEMENT_DB_AUTH_TOKEN,
    concurrency: Number.MAX_SAFE_INTEGER,
    fetch: limited,
  });
  const replica = config.PLACEMENT_DB_READ_URL
    ? {
        client: replicaWithDeadline(
          config,
          createClient({
            url: config.PLACEMENT_DB_READ_URL,
            authToken: config.PLACEMENT_DB_READ_AUTH_TOKEN,
            concurrency: Number.MAX_SAFE_INTEGER,
            fetch: fetchWithTimeout(config.PLACEMENT_DB_READ_TIMEOUT_MS),
          }),
        ),
        retryMs: config.PLACEMENT_DB_READ_RETRY_MS,
        log,
      }
    : undefined;
  // Read batches in one pipeline request of their own (db/hrana-reads.ts); writes through the client.
  // Every call given up at its deadline (db/deadline.ts).
  return createDataStore(
    client,
    hranaReads(client, config.PLACEMENT_DB_URL, config.PLACEMENT_DB_AUTH_TOKEN, limited),
    replica,
    undefined,
    databaseDeadline(config),
  );
}

async function boot(env: WorkerEnv): Promise<Booted> {
  const config = loadConfig(environmentFromBindings(env));
  const log = consoleLogger(config.LOG_LEVEL, consoleByLevel);
  const store = openWorkerStore(config, log);
  await prepareDatabase(store.client).catch((err: unknown) => {
    const { problem, fix } = databaseFailure(config.PLACEMENT_DB_URL, err, 'Cloudflare, over https on port 443');
    throw new Error(`PLACEMENT_DB_URL: ${problem}. Fix: ${fix}`, { cause: err });
  });
  const overrides = config.PLACEMENT_POLICY_JSON ? parsePolicyOverrides(config.PLACEMENT_POLICY_JSON, 'PLACEMENT_POLICY_JSON') : undefined;
  // Without a JOBS binding the cron drain delivers (outboxOnlyQueue).
  const producer = BindingsSchema.parse(env).JOBS;
  const deps = makeDeps(store, config, log, {
    policyOverrides: overrides,
    jobs: producer ? cloudflareQueue(producer) : undefined,
    // Each scrape lands on some isolate: its own counters would read as resets. The database gauges are complete.
    metricsSource: isolateMetrics,
  });
  // The extensions' own start (project limits: the first isolate of a database that never read them reads them now).
  await deps.extensions.startIsolate();
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

/**
 * The isolate's app, or null when it could not start: the reason is logged as
 * an error, in the service's log format (without the logger: the bindings may
 * be what failed), and no handler throws it to the runtime.
 */
async function bootedOrLogged(env: WorkerEnv, failed?: (err: unknown) => void): Promise<Booted | null> {
  try {
    return await booted(env);
  } catch (err) {
    failed?.(err);
    const reason = err instanceof Error ? err.message : String(err);
    console.error(
      JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'placement-edge worker failed to start', err: reason }),
    );
    return null;
  }
}

/**
 * A boot failure (bad bindings, libSQL unreachable) in the API's error
 * envelope; the reason stays in the log, except a database that did not
 * answer in time, which the answer names (db/deadline.ts words it without secrets).
 */
export function bootFailure(err?: unknown): Response {
  const silent = databaseTimeoutIn(err);
  const status = 503;
  const body = {
    errors: [
      {
        status,
        title: STATUS_TITLES[status] ?? 'Service Unavailable',
        detail: silent
          ? `The service could not start: ${silent.message} See the Worker logs.`
          : 'The service could not start (configuration or database); see the Worker logs.',
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
    let why: unknown;
    const started = await bootedOrLogged(env, (err) => {
      why = err;
    });
    if (!started) return asWorkerResponse(bootFailure(why));
    const { app, deps } = started;
    const response = await app.fetch(asFetchRequest(request), env, ctx);
    warmUpOnce(deps, ctx);
    return asWorkerResponse(response);
  },

  async queue(batch: MessageBatch<JobMessage>, env) {
    const started = await bootedOrLogged(env);
    // The queue delivers the batch again later.
    if (!started) return batch.retryAll();
    const { deps } = started;
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
    // A failure is logged; the next trigger tries again.
    const started = await bootedOrLogged(env);
    if (started) ctx.waitUntil(runSweepsLogged(started.deps));
  },
} satisfies ExportedHandler<WorkerEnv, JobMessage>;
