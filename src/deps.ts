// Everything the app needs from the outside world, injected by the entry
// (Node or Worker) or by a test. createApp() does no I/O of its own; the
// composition root that builds a Deps is src/compose.ts.
import * as z from 'zod';
import type { AppConfig } from './config.js';
import type { NovaIdentity } from './cyborg/nova-events.js';
import type { DataStore } from './db/client.js';
import type { InstalledExtensions } from './extension.js';
import type { ProjectNameLookup } from './http/keystone/project-names.js';
import type { KeystoneTokenValidator } from './http/keystone/validator.js';
import type { PolicyEnforcer } from './http/policy.js';
import type { JobQueue } from './jobs/queue.js';
import type { JobRegistry } from './jobs/registry.js';
import type { ServiceMetrics } from './observability/service.js';
import type { ProcessReadiness } from './observability/readiness.js';
import type { MetricsSource } from './observability/source.js';
import type { CandidateEngine } from './placement/candidates/index.js';
import type { WriteHooks } from './placement/writes/kernel.js';

export interface Logger {
  debug(msg: string, extra?: Record<string, unknown>): void;
  info(msg: string, extra?: Record<string, unknown>): void;
  warn(msg: string, extra?: Record<string, unknown>): void;
  error(msg: string, extra?: Record<string, unknown>): void;
}

export interface Deps {
  store: DataStore;
  config: AppConfig;
  policy: PolicyEnforcer;
  clock: () => Date;
  newId: () => string;
  log: Logger;
  /** Where committed accelerator work is announced (in-process or Cloudflare Queue). */
  jobs: JobQueue;
  /** What consume() and the sweeps run, per outbox topic. */
  jobHandlers: JobRegistry;
  /** Outbound fetch for Nova events (tests pass a fake). */
  novaFetch: typeof fetch;
  /** Where Nova is and the token events carry: NOVA_URL/NOVA_TOKEN, or the service's Keystone identity. */
  nova: NovaIdentity;
  /** This app's metrics (HTTP, database, product), counted into by every layer. */
  metrics: ServiceMetrics;
  /** What the installed extensions add to placement's writes (compose.ts installs them). */
  writeHooks: WriteHooks;
  /** Whose counters GET /metrics shows: this process's, the Node cluster's, none (a Worker isolate). */
  metricsSource: MetricsSource;
  /** The allocation-candidates engine of this app: its settings, tree cache and installed read hooks. */
  candidates: CandidateEngine;
  /** What this process holds against GET /readyz (warming at a Node start); none held by default. */
  readiness: ProcessReadiness;
  /** PLACEMENT_AUTH_STRATEGY=keystone: validates tokens, one cache for every API of the app. */
  keystone?: KeystoneTokenValidator;
  /** Project names for the dashboard, where Keystone knows them (keystone auth only). */
  projectNames?: ProjectNameLookup;
  /** The extensions installed in this app, set up (src/extensions.ts EXTENSIONS; src/ext/README.md). */
  extensions: InstalledExtensions;
}

/** Where a log line goes, by its level. */
export type LogSink = (level: 'debug' | 'info' | 'warn' | 'error', line: string) => void;

const ignore = () => {};
// Per process by design: stderr is the process's, whichever app logs to it.
let stderrGuarded = false;

/**
 * Node: every line on stderr (stdout stays free for a CLI's output; journald
 * keeps both), the bytes console.error wrote, written straight to the stream:
 * Console formats its arguments and checks colour support at every call (an
 * access line per request). As Console does, a stderr that fails (a closed
 * pipe) loses the line without taking the process down.
 */
export const stderrSink: LogSink = (_level, line) => {
  if (!stderrGuarded) {
    process.stderr.on('error', ignore);
    stderrGuarded = true;
  }
  process.stderr.write(`${line}\n`);
};

/**
 * A Worker: each line on the console method of its level. wrangler dev and
 * Workers Logs show console.error as an error (`✘ [ERROR]`) and console.warn
 * as a warning, so info and debug lines go to console.log.
 */
export const consoleByLevel: LogSink = (level, line) => {
  if (level === 'error') console.error(line);
  else if (level === 'warn') console.warn(line);
  else console.log(line);
};

export function consoleLogger(level: AppConfig['LOG_LEVEL'], sink: LogSink = stderrSink): Logger {
  const order = ['debug', 'info', 'warn', 'error', 'silent'];
  const min = order.indexOf(level);
  const at = (name: 'debug' | 'info' | 'warn' | 'error') => (msg: string, extra?: Record<string, unknown>) => {
    if (order.indexOf(name) >= min) sink(name, JSON.stringify({ time: new Date().toISOString(), level: name, msg, ...extra }));
  };
  return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

/** A policy file's content: rule name -> oslo.policy check string. */
const PolicyOverrides = z.record(z.string(), z.string());

export function parsePolicyOverrides(json: string, source: string): Record<string, string> {
  const parsed = PolicyOverrides.safeParse(JSON.parse(json));
  if (!parsed.success) throw new Error(`${source}: a policy file maps rule names to check strings`);
  return parsed.data;
}
