// The composition root: builds a complete Deps from an opened store and the
// configuration. Both entries (Node, Worker), the CLI and tests call it; it is
// the one place that knows which API modules exist (their policies, their jobs).
import type { AppConfig } from './config.js';
import { cyborgJobs } from './cyborg/jobs.js';
import type { DataStore } from './db/client.js';
import type { Deps, Logger } from './deps.js';
import { extJobs } from './ext/jobs.js';
import { PolicyEnforcer } from './http/policy.js';
import { outboxOnlyQueue, type JobQueue } from './jobs/queue.js';
import { JobRegistry } from './jobs/registry.js';
import { observeDatabase } from './db/observe.js';
import { databaseObserver } from './observability/database.js';
import { serviceMetrics } from './observability/service.js';
import { processMetrics, type MetricsSource } from './observability/source.js';
import { placementPolicyRules } from './placement/policies.js';

export interface DepsOptions {
  /** Policy file overrides: rule name -> check string. */
  policyOverrides?: Record<string, string>;
  /** Where committed jobs are announced; without one the periodic outbox drain delivers. */
  jobs?: JobQueue;
  /** Whose counters GET /metrics shows; this process's by default. */
  metricsSource?: MetricsSource;
}

export function makeDeps(store: DataStore, config: AppConfig, log: Logger, options: DepsOptions = {}): Deps {
  observeDatabase(databaseObserver(serviceMetrics));
  return {
    store,
    config,
    policy: new PolicyEnforcer(
      placementPolicyRules({
        enforceNewDefaults: config.PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS,
        overrides: options.policyOverrides,
      }),
    ),
    clock: () => new Date(),
    newId: () => crypto.randomUUID(),
    log,
    jobs: options.jobs ?? outboxOnlyQueue,
    jobHandlers: new JobRegistry([cyborgJobs, extJobs]),
    novaFetch: (input, init) => fetch(input, init),
    metrics: serviceMetrics,
    metricsSource: options.metricsSource ?? processMetrics(serviceMetrics),
  };
}
