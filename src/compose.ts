// The composition root: builds a complete Deps from an opened store and the
// configuration. Both entries (Node, Worker), the CLI and tests call it; it is
// the one place that knows which API modules exist (their policies, their jobs)
// and which extensions are installed (EXTENSIONS).
import { keystoneSettingsProblem, novaSettingsProblem, type AppConfig } from './config.js';
import { cyborgJobs } from './cyborg/jobs.js';
import { staticNovaIdentity, type NovaIdentity } from './cyborg/nova-events.js';
import type { DataStore } from './db/client.js';
import type { Deps, Logger } from './deps.js';
import { type Extension, InstalledExtensions } from './extension.js';
import { KeystoneNovaIdentity } from './http/keystone/nova-identity.js';
import { KeystoneProjectNames } from './http/keystone/project-names.js';
import { type KeystoneSettings, KeystoneTokenValidator } from './http/keystone/validator.js';
import { PolicyEnforcer } from './http/policy.js';
import { outboxOnlyQueue, type JobQueue } from './jobs/queue.js';
import { JobRegistry } from './jobs/registry.js';
import { createServiceMetrics, type ServiceMetrics } from './observability/service.js';
import { ProcessReadiness } from './observability/readiness.js';
import { processMetrics, type MetricsSource } from './observability/source.js';
import { type CandidateExtensions, CandidateEngine, type CandidateMetrics } from './placement/candidates/index.js';
import { placementPolicyRules } from './placement/policies.js';
import { writeHooks } from './placement/writes/kernel.js';

import { EXTENSIONS } from './extensions.js';

export { EXTENSIONS };

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
  /** The extensions installed in this app; EXTENSIONS by default (a test builds one without some). */
  extensions?: readonly Extension[];
}

export function makeDeps(store: DataStore, config: AppConfig, log: Logger, options: DepsOptions = {}): Deps {
  const metrics = options.metrics ?? createServiceMetrics();
  store.watch.countInto(metrics);
  const clock = () => new Date();
  const extensions = InstalledExtensions.setUp(options.extensions ?? EXTENSIONS, {
    store,
    config,
    log,
    metrics,
    keystoneFetch: options.keystoneFetch,
  });
  const deps: Deps = {
    store,
    config,
    policy: new PolicyEnforcer(
      placementPolicyRules({
        enforceNewDefaults: config.PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS,
        overrides: options.policyOverrides,
      }),
    ),
    clock,
    newId: () => crypto.randomUUID(),
    log,
    jobs: options.jobs ?? outboxOnlyQueue,
    jobHandlers: new JobRegistry([cyborgJobs, ...extensions.jobs()]),
    novaFetch: (input, init) => fetch(input, init),
    nova: novaIdentity(config, options.keystoneFetch),
    metrics,
    writeHooks: writeHooks(extensions.writes()),
    extensions,
    metricsSource: options.metricsSource ?? processMetrics(metrics),
    // The app's clock as it is at each request (a test or a what-if may replace deps.clock).
    candidates: candidateEngine(config, metrics, () => deps.clock().getTime(), extensions.candidates()),
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
  return deps;
}

/** The allocation-candidates engine of one app, with what the installed extensions add (by default, EXTENSIONS' static parts). */
export function candidateEngine(
  config: AppConfig,
  metrics: CandidateMetrics | undefined,
  now: () => number = Date.now,
  extensions: CandidateExtensions = staticCandidateExtensions(EXTENSIONS),
): CandidateEngine {
  return new CandidateEngine(
    {
      randomize: config.PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES,
      maxCandidates: config.PLACEMENT_MAX_ALLOCATION_CANDIDATES,
      timeBudgetMs: config.PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS,
      treeCacheProviders: config.PLACEMENT_CANDIDATE_TREE_CACHE,
      generationStrategy: config.PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY,
    },
    extensions,
    metrics,
    now,
  );
}

/** What `list` adds to the candidates engine without being set up for an app (its gates need that). */
const staticCandidateExtensions = (list: readonly Extension[]): CandidateExtensions => ({
  params: list.flatMap((e) => e.params ?? []),
  hooks: list.flatMap((e) => e.read ?? []),
  gates: [],
});

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

/**
 * Who the service is towards Nova (PLACEMENT_NOVA_*, README "Configuration"):
 * NOVA_URL + NOVA_TOKEN when both are set or no Keystone identity exists;
 * otherwise a Keystone user (PLACEMENT_NOVA_USERNAME, else the service's own
 * PLACEMENT_KEYSTONE_* user) whose catalog names Nova unless NOVA_URL does.
 */
export function novaIdentity(config: AppConfig, fetcher?: typeof fetch): NovaIdentity {
  const problem = novaSettingsProblem(config);
  if (problem) throw new Error(`invalid configuration: ${problem.setting}: ${problem.problem}`);
  const staticOnly = config.NOVA_URL !== undefined && config.NOVA_TOKEN !== undefined;
  const user = config.PLACEMENT_NOVA_USERNAME;
  const keystone = config.PLACEMENT_AUTH_STRATEGY === 'keystone';
  if (staticOnly || (!user && !keystone)) return staticNovaIdentity(config.NOVA_URL, config.NOVA_TOKEN);
  const credentials = user
    ? {
        username: user,
        password: config.PLACEMENT_NOVA_PASSWORD!,
        projectName: config.PLACEMENT_NOVA_PROJECT_NAME!,
        userDomainName: config.PLACEMENT_NOVA_USER_DOMAIN_NAME,
        projectDomainName: config.PLACEMENT_NOVA_PROJECT_DOMAIN_NAME,
      }
    : {
        username: config.PLACEMENT_KEYSTONE_USERNAME!,
        password: config.PLACEMENT_KEYSTONE_PASSWORD!,
        projectName: config.PLACEMENT_KEYSTONE_PROJECT_NAME!,
        userDomainName: config.PLACEMENT_KEYSTONE_USER_DOMAIN_NAME,
        projectDomainName: config.PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME,
      };
  if (!user) {
    const keystoneProblem = keystoneSettingsProblem(config);
    if (keystoneProblem) throw new Error(`invalid configuration: ${keystoneProblem}`);
  }
  return new KeystoneNovaIdentity(
    {
      authUrl: (user ? config.PLACEMENT_NOVA_AUTH_URL : undefined) ?? config.PLACEMENT_KEYSTONE_AUTH_URL!,
      credentials,
      timeoutMs: config.PLACEMENT_KEYSTONE_TIMEOUT_MS,
      interfaces: config.PLACEMENT_NOVA_VALID_INTERFACES,
      region: config.PLACEMENT_NOVA_REGION_NAME,
      url: config.NOVA_URL,
      token: config.NOVA_TOKEN,
    },
    fetcher,
  );
}
