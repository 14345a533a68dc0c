// Service configuration, read from the environment (Node) or bindings
// (Worker) and validated once. Names match the conformance contract.
import * as z from 'zod';
import type { ExtensionSettingProblem } from './extension.js';
import { EXTENSIONS } from './extensions.js';

/** Where a new user's database goes when PLACEMENT_DB_URL is not set (created with its directory). */
export const DEFAULT_DATABASE_URL = 'file:./data/placement.db';

/**
 * The URL schemes of libSQL, the only database placement-edge speaks: an
 * embedded file, or a libSQL server (sqld, Turso) over HTTP or WebSockets.
 */
export const DATABASE_URL_SCHEMES = ['file:', 'libsql:', 'http:', 'https:', 'ws:', 'wss:'] as const;

/** The scheme of a database URL placement-edge can open (':memory:' counts as file:), else undefined. */
export function databaseUrlScheme(url: string): (typeof DATABASE_URL_SCHEMES)[number] | undefined {
  if (url === ':memory:') return 'file:';
  const scheme = /^([a-z][a-z0-9+.-]*:)/i.exec(url)?.[1]?.toLowerCase();
  return DATABASE_URL_SCHEMES.find((known) => known === scheme);
}

const bool = z.enum(['true', 'false', '1', '0', 'yes', 'no', 'True', 'False']).transform((v) => ['true', '1', 'yes', 'True'].includes(v));

// --- Nova's identity for accelerator events (docs/keystone.md, Events to Nova): Cyborg's [nova] section. ---
const NOVA_INTERFACES = ['public', 'internal', 'admin'] as const;

/**
 * Who the service is towards Nova when it sends accelerator-request-bound
 * events, and where Nova is: with a Keystone identity (PLACEMENT_AUTH_STRATEGY=keystone,
 * or a PLACEMENT_NOVA_* user of its own) the `compute` endpoint comes from the
 * catalog of that identity's token and each event carries that token, renewed
 * before it expires and once more on a 401. NOVA_URL / NOVA_TOKEN override
 * the catalog and the token (and are the only way in the other modes).
 */
export const novaIdentitySettings = {
  /** keystoneauth's valid_interfaces: catalog interfaces tried in order (Cyborg's [nova] default internal,public). */
  PLACEMENT_NOVA_VALID_INTERFACES: z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.enum(NOVA_INTERFACES, { message: `each one of ${NOVA_INTERFACES.join(', ')} (comma separated)` })).min(1))
    .default(['internal', 'public']),
  /** The catalog region of Nova's endpoint; any region when unset. */
  PLACEMENT_NOVA_REGION_NAME: z.string().optional(),
  /** A Keystone user of its own for Nova ([nova] auth_type=password); without one, the PLACEMENT_KEYSTONE_* user. */
  PLACEMENT_NOVA_AUTH_URL: z.string().optional(),
  PLACEMENT_NOVA_USERNAME: z.string().optional(),
  PLACEMENT_NOVA_PASSWORD: z.string().optional(),
  PLACEMENT_NOVA_PROJECT_NAME: z.string().optional(),
  PLACEMENT_NOVA_USER_DOMAIN_NAME: z.string().default('Default'),
  PLACEMENT_NOVA_PROJECT_DOMAIN_NAME: z.string().default('Default'),
};

type NovaIdentityConfig = Pick<
  AppConfig,
  keyof typeof novaIdentitySettings | 'PLACEMENT_AUTH_STRATEGY' | 'PLACEMENT_KEYSTONE_AUTH_URL' | 'NOVA_URL'
>;

/** The first PLACEMENT_NOVA_* (or NOVA_URL) setting that cannot work, named, with what to do. */
export function novaSettingsProblem(config: NovaIdentityConfig): { setting: string; problem: string; fix: string } | undefined {
  const url = /^https?:\/\/[^/\s]+/;
  if (config.NOVA_URL !== undefined && !url.test(config.NOVA_URL)) {
    return { setting: 'NOVA_URL', problem: 'not an http(s) URL', fix: "set Nova's compute API URL, e.g. http://controller:8774/v2.1" };
  }
  const user = config.PLACEMENT_NOVA_USERNAME;
  for (const name of ['PLACEMENT_NOVA_PASSWORD', 'PLACEMENT_NOVA_PROJECT_NAME', 'PLACEMENT_NOVA_AUTH_URL'] as const) {
    if (!user && config[name] !== undefined) {
      return {
        setting: 'PLACEMENT_NOVA_USERNAME',
        problem: `${name} is set but no user`,
        fix: 'set PLACEMENT_NOVA_USERNAME, or unset the other PLACEMENT_NOVA_* credentials',
      };
    }
  }
  if (!user) return undefined;
  for (const name of ['PLACEMENT_NOVA_PASSWORD', 'PLACEMENT_NOVA_PROJECT_NAME'] as const) {
    if (!config[name]) return { setting: name, problem: 'required with PLACEMENT_NOVA_USERNAME', fix: `set ${name}` };
  }
  const authUrl =
    config.PLACEMENT_NOVA_AUTH_URL ?? (config.PLACEMENT_AUTH_STRATEGY === 'keystone' ? config.PLACEMENT_KEYSTONE_AUTH_URL : undefined);
  if (!authUrl) {
    return {
      setting: 'PLACEMENT_NOVA_AUTH_URL',
      problem: 'required with PLACEMENT_NOVA_USERNAME unless PLACEMENT_AUTH_STRATEGY=keystone',
      fix: "set Keystone's v3 URL, e.g. http://controller:5000/v3",
    };
  }
  if (!url.test(authUrl)) {
    return {
      setting: 'PLACEMENT_NOVA_AUTH_URL',
      problem: `not an http(s) URL: ${JSON.stringify(authUrl)}`,
      fix: "set Keystone's v3 URL, e.g. http://controller:5000/v3",
    };
  }
  return undefined;
}
// --- end of Nova's identity ---

/** Every shipped extension's settings, beside the service's own. */
const EXTENSION_SETTINGS: z.ZodRawShape = Object.assign({}, ...EXTENSIONS.map((e) => e.settings?.shape ?? {}));

/**
 * PLACEMENT_CANDIDATE_TREE_CACHE where it is not set, by runtime. The trees' memory grows with the
 * cloud, per process or isolate: a Worker isolate's 128 MB must also hold a full answer's work,
 * while a Node process has its heap's gigabytes and otherwise pays the most CPU per answer on
 * exactly the large clouds. The figures behind both: docs/performance.md, "The tree cache's limit".
 */
export const TREE_CACHE_DEFAULTS = { worker: 20_000, node: 200_000 } as const;

export const ConfigSchema = z.object({
  HOST: z.string().default('127.0.0.1'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8778),
  PLACEMENT_DB_URL: z
    .string()
    .refine((url) => databaseUrlScheme(url) !== undefined, {
      message: `not a database URL placement-edge speaks (${DATABASE_URL_SCHEMES.join(', ')})`,
    })
    .default(DEFAULT_DATABASE_URL),
  PLACEMENT_DB_AUTH_TOKEN: z.string().optional(),
  /**
   * A libSQL replica near this instance (sqld started with --primary-grpc-url, a
   * hosted replica): allocation candidates, the dashboard and the diagnostics
   * read from it, never older than this instance's own writes; every other read
   * and every write go to PLACEMENT_DB_URL (README "Beyond one machine").
   */
  PLACEMENT_DB_READ_URL: z
    .string()
    .regex(/^(libsql|https?|wss?):\/\//, 'a libSQL server URL (libsql://, http://, https://, ws://, wss://)')
    .optional(),
  PLACEMENT_DB_READ_AUTH_TOKEN: z.string().optional(),
  /**
   * A read of a libSQL server not answered within this many ms is given up: a
   * replica's is answered by the primary, the primary's ends its request with
   * 503 naming the database (docs/operations.md "The database does not answer").
   */
  PLACEMENT_DB_READ_TIMEOUT_MS: z.coerce.number().int().min(1).default(2000),
  /**
   * A write to a libSQL server not answered within this many ms (its wait
   * behind this process's other writes included) is given up: 503 naming the
   * database, saying whether it was sent (its outcome then unknown) or not.
   */
  PLACEMENT_DB_WRITE_TIMEOUT_MS: z.coerce.number().int().min(1).default(10_000),
  /** After a replica fails, reads go to the primary for this many ms before it is tried again. */
  PLACEMENT_DB_READ_RETRY_MS: z.coerce.number().int().min(0).default(5000),
  /**
   * Node mode on a file database: the write batches one process receives
   * while it serves a turn of its event loop share one transaction and one
   * COMMIT, each batch in a savepoint of its own (db/group-commit.ts). Writes
   * that lose a race (claims on one provider decided in the same turn) retry
   * in turns (db/write-batch.ts), so a hot provider costs retries, not 409s.
   */
  PLACEMENT_GROUP_COMMIT: bool.default(true),
  /**
   * Node mode on a file database: when a commit reaches the disk. normal: it
   * survives the process's crash; the OS crashing or the power failing may
   * lose the last ones (the WAL is synced at checkpoints). full: each COMMIT
   * is synced before any write it holds is answered (one fsync per shared
   * commit, PLACEMENT_GROUP_COMMIT).
   */
  PLACEMENT_DB_SYNCHRONOUS: z.enum(['normal', 'full']).default('normal'),
  PLACEMENT_AUTH_STRATEGY: z.enum(['noauth2', 'token', 'keystone']).default('noauth2'),
  /** token mode: JSON {"<token>": {"roles": [...], "project_id": "...", "user_id": "..."}} */
  PLACEMENT_AUTH_TOKENS: z.string().optional(),
  /** keystone mode: keystonemiddleware's [keystone_authtoken] settings; see keystoneSettingsProblem(). */
  PLACEMENT_KEYSTONE_AUTH_URL: z.string().optional(),
  PLACEMENT_KEYSTONE_USERNAME: z.string().optional(),
  PLACEMENT_KEYSTONE_PASSWORD: z.string().optional(),
  PLACEMENT_KEYSTONE_PROJECT_NAME: z.string().optional(),
  PLACEMENT_KEYSTONE_USER_DOMAIN_NAME: z.string().default('Default'),
  PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME: z.string().default('Default'),
  /** token_cache_time: seconds a validated token is reused without asking Keystone (0: ask every time). */
  PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS: z.coerce.number().int().min(0).default(300),
  /** Most validated tokens kept at once (per server process or Worker isolate). */
  PLACEMENT_KEYSTONE_TOKEN_CACHE_SIZE: z.coerce.number().int().min(0).default(10_000),
  /** www_authenticate_uri: named in 401 answers; default the auth URL. */
  PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI: z.string().optional(),
  /** One request to Keystone's time limit (http_request_max_retries aside, keystonemiddleware's http_connect_timeout). */
  PLACEMENT_KEYSTONE_TIMEOUT_MS: z.coerce.number().int().min(1).default(10_000),
  PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: bool.default(true),
  PLACEMENT_POLICY_FILE: z.string().optional(),
  /** Worker mode has no files: the policy overrides as a JSON string. */
  PLACEMENT_POLICY_JSON: z.string().optional(),
  PLACEMENT_CORS_ALLOWED_ORIGIN: z.string().optional(),
  PLACEMENT_CORS_ALLOW_HEADERS: z.string().optional(),
  /** Allocation candidates: shuffle results as placement's [placement] randomize_allocation_candidates. */
  PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: bool.default(false),
  /**
   * Most allocation candidates one request computes (placement's
   * max_allocation_candidates; 0 = no cap). A cap by default: without one, a
   * request on a wide tree (12 children x 6 groups: ~3M candidates) would
   * exhaust memory. 10,000 candidates answer in well under a second, in tens of MB.
   */
  PLACEMENT_MAX_ALLOCATION_CANDIDATES: z.coerce.number().int().min(0).default(10_000),
  /**
   * Longest an allocation candidate search runs, in ms (0 = no limit); it then
   * answers with the candidates found so far, as at the cap. Without one, a
   * request whose combinations are all refused late (same_subtree over 8
   * groups on a tree of 20 children: 20^8 combinations) would keep a core
   * busy for hours.
   */
  PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS: z.coerce.number().int().min(0).default(10_000),
  /**
   * Allocation candidates keep the provider trees (structure, traits,
   * aggregates, inventory limits; never usage) in memory between requests
   * while the cloud has at most this many providers, and re-read only the
   * trees that changed; a larger cloud is answered from SQL alone. 0 = never.
   * About 2.6 KiB of memory per provider. Default: TREE_CACHE_DEFAULTS.worker here,
   * .node in a Node process (nodeEnvironment).
   */
  PLACEMENT_CANDIDATE_TREE_CACHE: z.coerce.number().int().min(0).default(TREE_CACHE_DEFAULTS.worker),
  /**
   * The order allocation candidates are produced in (upstream's
   * allocation_candidates_generation_strategy): depth-first, every candidate
   * of the first tree before the next; breadth-first, one candidate from each
   * tree in turn, so a limited or capped answer spreads over as many hosts
   * as it can (wide device trees).
   */
  PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY: z.enum(['depth-first', 'breadth-first']).default('depth-first'),
  /** Request bodies larger than this get 413 before they are parsed (both APIs). */
  PLACEMENT_MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1)
    .default(1024 * 1024),
  /**
   * Node server: the most time a client has to send a whole request, head and
   * body; then 408 in the envelope and the connection closes. Node's own
   * defaults (60 s for the head, 300 s in all) let half-sent requests hold
   * sockets for minutes; a legitimate body (at most 1 MiB) needs far less.
   */
  PLACEMENT_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1).default(30_000),
  NOVA_URL: z.string().optional(),
  NOVA_TOKEN: z.string().optional(),
  ...novaIdentitySettings,
  /**
   * Cyborg 2026.1 (CVE-2026-40214) lets only an admin or a caller with a service
   * token bind, unbind and delete bound ARQs; true lets project members do it
   * alone again, for a Nova without [service_user] send_service_user_token.
   */
  ARQ_ALLOW_BIND_WITHOUT_SERVICE_TOKEN: bool.default(false),
  ARQ_BINDING_TIMEOUT: z.coerce.number().int().min(1).default(300),
  /** Nova event delivery: attempts before the dead letter, first backoff, request timeout. */
  NOVA_EVENT_MAX_ATTEMPTS: z.coerce.number().int().min(1).default(10),
  NOVA_EVENT_BACKOFF_MS: z.coerce.number().int().min(1).default(1000),
  NOVA_TIMEOUT_MS: z.coerce.number().int().min(1).default(10000),
  /** Node mode: how often the outbox drain and binding-timeout sweep run. */
  JOBS_SWEEP_INTERVAL_MS: z.coerce.number().int().min(10).default(1000),
  /**
   * Node mode: server processes answering HTTP on the one database (0 = one
   * per core). Above 1, a primary migrates once, runs the sweeps, and forks.
   */
  PLACEMENT_WORKERS: z.coerce.number().int().min(0).max(256).default(0),
  /**
   * Node mode: how the server processes share new connections. 'os': the
   * kernel hands each to a process that accepts (a killed process takes none
   * with it); 'round-robin': node:cluster's primary accepts and passes them
   * on, and those it had passed to a process killed at that moment hang.
   */
  PLACEMENT_CLUSTER_SCHEDULING: z.enum(['os', 'round-robin']).default('os'),
  /**
   * Node mode, on SIGTERM/SIGINT: the longest requests in flight get to
   * finish (answered with Connection: close) before their connections are cut.
   */
  PLACEMENT_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(10_000),
  /**
   * Node mode on a database file: how often each server process brings its
   * provider trees in memory up to date with writes from any process, so the
   * first candidates request after a load does not read them. 0 = only when
   * a request asks.
   */
  PLACEMENT_TREE_REFRESH_MS: z.coerce.number().int().min(0).default(100),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error', 'silent']).default('info'),
  /** One JSON line per request, at this level ('off': none); shown when LOG_LEVEL lets the level through. */
  PLACEMENT_ACCESS_LOG: z.enum(['info', 'debug', 'off']).default('info'),
  /**
   * Paths whose requests leave no access line (a comma-separated list, e.g.
   * /healthz,/readyz,/metrics: probes and scrapes every few seconds); they are
   * still counted in the metrics. Exact paths, without the query.
   */
  PLACEMENT_ACCESS_LOG_EXCLUDE: z
    .string()
    .default('')
    .transform((list) =>
      list
        .split(',')
        .map((path) => path.trim())
        .filter((path) => path !== ''),
    )
    .pipe(z.array(z.string().regex(/^\//, 'a comma-separated list of paths, each starting with / (e.g. /healthz,/readyz,/metrics)'))),
  /**
   * GET /metrics shows openstack-exporter's capacity gauges (four series per
   * inventory, read in one query per scrape); false for clouds too large to scrape.
   */
  PLACEMENT_METRICS_CAPACITY: bool.default(true),
  /** A token Prometheus may scrape GET /metrics with (Authorization: Bearer), besides an admin token; noauth2 needs none. */
  PLACEMENT_METRICS_TOKEN: z.string().optional(),
  /** The settings of the extensions this service ships (each in its folder: Extension.settings). */
  ...EXTENSION_SETTINGS,
});
/** The configuration: the service's own settings, typed; an extension reads its own through its settings' schema (Extension.settings). */
export type AppConfig = z.infer<typeof ConfigSchema> & Readonly<Record<string, unknown>>;

/** The settings `env` sets, as ConfigSchema reads them: an empty value counts as unset. */
export function pickSettings(env: Record<string, string | undefined>): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const key of Object.keys(ConfigSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') picked[key] = value;
  }
  return picked;
}

/** `env` with a Node process's own defaults (npm start, server.mjs) where it leaves them unset. */
export function nodeEnvironment(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const treeCache = env.PLACEMENT_CANDIDATE_TREE_CACHE;
  return treeCache === undefined || treeCache === '' ? { ...env, PLACEMENT_CANDIDATE_TREE_CACHE: String(TREE_CACHE_DEFAULTS.node) } : env;
}

export function loadConfig(env: Record<string, string | undefined>): AppConfig {
  const picked = pickSettings(env);
  const parsed = ConfigSchema.safeParse(picked);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    const names = [...new Set(parsed.error.issues.map((i) => String(i.path[0])))].join(', ');
    throw new Error(`invalid configuration: ${problems}. Fix: correct ${names} or unset it for the default`);
  }
  const keystoneProblem = keystoneSettingsProblem(parsed.data);
  if (keystoneProblem) {
    // In a Worker the password is a secret (wrangler secret put), the rest [vars] in wrangler.toml.
    throw new Error(
      `invalid configuration: ${keystoneProblem}. Fix: set it (the service user placement-edge validates tokens as; docs/keystone.md), or choose another PLACEMENT_AUTH_STRATEGY`,
    );
  }
  const novaProblem = novaSettingsProblem(parsed.data);
  if (novaProblem) throw new Error(`invalid configuration: ${novaProblem.setting}: ${novaProblem.problem}`);
  const extensionProblem = extensionSettingsProblem(parsed.data);
  if (extensionProblem)
    throw new Error(`invalid configuration: ${extensionProblem.setting}: ${extensionProblem.problem}. Fix: ${extensionProblem.fix}`);
  return parsed.data;
}

/** The first shipped extension's setting that cannot work with the rest, or undefined. */
export function extensionSettingsProblem(config: AppConfig): ExtensionSettingProblem | undefined {
  for (const extension of EXTENSIONS) {
    const problem = extension.settings?.problem?.(config);
    if (problem) return problem;
  }
  return undefined;
}

const KEYSTONE_REQUIRED = [
  'PLACEMENT_KEYSTONE_AUTH_URL',
  'PLACEMENT_KEYSTONE_USERNAME',
  'PLACEMENT_KEYSTONE_PASSWORD',
  'PLACEMENT_KEYSTONE_PROJECT_NAME',
] as const;

/** With PLACEMENT_AUTH_STRATEGY=keystone: the first missing or unusable PLACEMENT_KEYSTONE_* setting, named. */
export function keystoneSettingsProblem(config: AppConfig): string | undefined {
  if (config.PLACEMENT_AUTH_STRATEGY !== 'keystone') return undefined;
  for (const name of KEYSTONE_REQUIRED) {
    if (!config[name]) return `${name}: required when PLACEMENT_AUTH_STRATEGY=keystone`;
  }
  for (const name of ['PLACEMENT_KEYSTONE_AUTH_URL', 'PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI'] as const) {
    const value = config[name];
    if (value !== undefined && !/^https?:\/\/[^/\s]+/.test(value)) {
      return `${name}: not an http(s) URL: ${JSON.stringify(value)} (Keystone's v3 URL, e.g. http://keystone:5000/v3)`;
    }
  }
  return undefined;
}
