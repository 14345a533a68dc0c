// What a Worker isolate runs while its module is evaluated, before its first
// request: the platform evaluates the module when it starts the isolate, and
// no I/O is allowed there, so both parts below work without a database.
//  1. The app: a throwaway createApp() over a store that is never reached
//     answers GET / and a refused candidates query (parsed, refused before
//     any read). A fresh isolate's first request otherwise ran Hono's
//     routing, the middlewares and the error envelope for the first time.
//  2. The candidates engine over a made-up cloud
//     (placement/candidates/engine-warm-up.ts).
// Measured with bench/worker-first.ts (the Worker's own workerd process CPU): see the commits
// that added each part and bench/README.md.
import { createClient } from '@libsql/client/web';
import type { ExecutionContext } from 'hono';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { makeDeps } from '../compose.js';
import { createDataStore } from '../db/client.js';
import type { Logger } from '../deps.js';
import { isolateMetrics } from '../observability/source.js';
import { warmUpEngine } from '../placement/candidates/engine-warm-up.js';

/** Rounds of the engine's warm-up (each: flat, nested and limit=10 answers over 280 providers). */
const ENGINE_WARM_UP_ROUNDS = 4;

const quiet: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
const context: ExecutionContext = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };

/** The app's request path once, on an app of its own whose database is never reached: the statuses it answered. */
export async function warmUpApp(): Promise<number[]> {
  const config = loadConfig({
    PLACEMENT_DB_URL: 'http://warm-up.invalid',
    PLACEMENT_AUTH_STRATEGY: 'noauth2',
    LOG_LEVEL: 'silent',
    PLACEMENT_ACCESS_LOG: 'off',
  });
  const store = createDataStore(createClient({ url: config.PLACEMENT_DB_URL }));
  const app = createApp(makeDeps(store, config, quiet, { metricsSource: isolateMetrics }));
  const headers = { 'x-auth-token': 'admin', accept: 'application/json', 'openstack-api-version': 'placement latest' };
  const statuses: number[] = [];
  for (const path of ['/', '/allocation_candidates?resources=VCPU:x']) {
    const res = await app.fetch(new Request(`http://warm-up${path}`, { headers }), {}, context);
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}

/** Both parts; a failure only costs the warm-up, never the isolate. */
export async function warmUpIsolate(): Promise<void> {
  // warmUpApp() is not run here: at module evaluation it called crypto.randomUUID() and new Response(), which workerd refuses (an ERROR per start).
  await warmUpEngine(ENGINE_WARM_UP_ROUNDS).catch(() => {});
}
