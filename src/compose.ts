// The composition root: builds a complete Deps from an opened store and the
// configuration. Both entries (Node, Worker), the CLI and tests call it; it is
// the one place that knows which API modules exist (their policies, their jobs).
import { keystoneSettingsProblem, type AppConfig } from './config.js';
import { cyborgJobs } from './cyborg/jobs.js';
import type { DataStore } from './db/client.js';
import type { Deps, Logger } from './deps.js';
import { writeExtensions } from './ext/install.js';
import { extJobs } from './ext/jobs.js';
import { limitsWrites } from './ext/limits/guard.js';
import { limitsJobs } from './ext/limits/jobs.js';
import { projectLimits } from './ext/limits/service.js';
import { KeystoneProjectNames } from './http/keystone/project-names.js';
import { type KeystoneSettings, KeystoneTokenValidator } from './http/keystone/validator.js';
import { PolicyEnforcer } from './http/policy.js';
import { outboxOnlyQueue, type JobQueue } from './jobs/queue.js';
import { JobRegistry } from './jobs/registry.js';
import { databaseObserver } from './observability/database.js';
import { createServiceMetrics, type ServiceMetrics } from './observability/service.js';
import { ProcessReadiness } from './observability/readiness.js';
import { processMetrics, type MetricsSource } from './observability/source.js';
import { placementPolicyRules } from './placement/policies.js';
import { writeHooks } from './placement/writes/hooks.js';

export interface DepsOptions {
  /** Policy file overrides: rule name -> check string. */
  policyOverrides?: Record<string, string>;
  /** Where committed jobs are announced; without one the periodic outbox drain delivers. */
  jobs?: JobQueue;
  /** Whose counters GET /metrics shows; this process's by default. */
  metricsSource?: MetricsSource;
  /** How Keystone is reached (keystone auth); the global fetch without one. */
  keystoneFetch?: typeof fetch;
  /** The app's metrics; a registry of its own by default (one app per process in production). */
  metrics?: ServiceMetrics;
}

export function makeDeps(store: DataStore, config: AppConfig, log: Logger, options: DepsOptions = {}): Deps {
  const metrics = options.metrics ?? createServiceMetrics();
  store.watch.observer = databaseObserver(metrics);
  const limits = projectLimits(store, config, log, options.keystoneFetch);
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
    jobHandlers: new JobRegistry([cyborgJobs, extJobs, limitsJobs]),
    novaFetch: (input, init) => fetch(input, init),
    metrics,
    writeHooks: writeHooks(limits ? [...writeExtensions, limitsWrites(limits, metrics)] : writeExtensions),
    limits,
    metricsSource: options.metricsSource ?? processMetrics(metrics),
    readiness: new ProcessReadiness(),
    keystone:
      config.PLACEMENT_AUTH_STRATEGY === 'keystone'
        ? keystoneValidator(config, options.keystoneFetch, (reason) => metrics.keystoneSignInFailures.inc([reason]))
        : undefined,
    projectNames:
      config.PLACEMENT_AUTH_STRATEGY === 'keystone' && config.PLACEMENT_KEYSTONE_AUTH_URL
        ? new KeystoneProjectNames({
            authUrl: config.PLACEMENT_KEYSTONE_AUTH_URL,
            fetcher: options.keystoneFetch,
            requestTimeoutMs: config.PLACEMENT_KEYSTONE_TIMEOUT_MS,
          })
        : undefined,
  };
}

/** The validator for PLACEMENT_KEYSTONE_* (loadConfig() has checked them; a hand-built config is checked here). */
export function keystoneValidator(
  config: AppConfig,
  fetcher?: typeof fetch,
  onSignInFailure?: KeystoneSettings['onSignInFailure'],
): KeystoneTokenValidator {
  const problem = keystoneSettingsProblem(config);
  if (problem) throw new Error(`invalid configuration: ${problem}`);
  const authUrl = config.PLACEMENT_KEYSTONE_AUTH_URL!;
  return new KeystoneTokenValidator(
    {
      authUrl,
      credentials: {
        username: config.PLACEMENT_KEYSTONE_USERNAME!,
        password: config.PLACEMENT_KEYSTONE_PASSWORD!,
        projectName: config.PLACEMENT_KEYSTONE_PROJECT_NAME!,
        userDomainName: config.PLACEMENT_KEYSTONE_USER_DOMAIN_NAME,
        projectDomainName: config.PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME,
      },
      cacheSeconds: config.PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS,
      cacheSize: config.PLACEMENT_KEYSTONE_TOKEN_CACHE_SIZE,
      timeoutMs: config.PLACEMENT_KEYSTONE_TIMEOUT_MS,
      wwwAuthenticateUri: config.PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI ?? authUrl,
      onSignInFailure,
    },
    fetcher,
  );
}
