// Agent configuration: a YAML/JSON file (--config or PLACEMENT_AGENT_CONFIG),
// then PLACEMENT_AGENT_<KEY> environment variables, then command-line flags.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';

const ratio = z.coerce.number().positive();

export const AgentConfigSchema = z
  .object({
    /** compute node provider name; default the host name */
    host: z.string().min(1).max(200).optional(),
    /** root of /proc and /sys to read (tests use fixture trees) */
    root: z.string().default('/'),
    endpoint: z.url().optional(),
    token: z.string().optional(),
    /**
     * Keystone password auth instead of a static token (keystoneauth's names):
     * the agent signs in as this user, renews its token before expiry, and takes
     * the placement endpoint from the catalog when `endpoint` is unset.
     */
    auth_url: z.url().optional(),
    username: z.string().min(1).optional(),
    password: z.string().min(1).optional(),
    project_name: z.string().min(1).optional(),
    user_domain_name: z.string().min(1).default('Default'),
    project_domain_name: z.string().min(1).default('Default'),
    region_name: z.string().min(1).optional(),
    /** catalog interface of the placement endpoint */
    interface: z.enum(['public', 'internal', 'admin']).default('public'),
    interval_seconds: z.coerce.number().positive().default(60),
    instances_path: z.string().default('/var/lib/placement-agent/instances'),
    reserved_host_cpus: z.coerce.number().int().min(0).default(0),
    reserved_host_memory_mb: z.coerce.number().int().min(0).default(512),
    reserved_host_disk_mb: z.coerce.number().int().min(0).default(0),
    // Seed 004: overrides unset by default; initial_* only for new inventory.
    cpu_allocation_ratio: ratio.optional(),
    ram_allocation_ratio: ratio.optional(),
    disk_allocation_ratio: ratio.optional(),
    initial_cpu_allocation_ratio: ratio.default(16.0),
    initial_ram_allocation_ratio: ratio.default(1.5),
    initial_disk_allocation_ratio: ratio.default(1.0),
    /** unset: DEFAULT_PROVIDER_CONFIG_LOCATION where it exists, else none (and no warning: nothing was asked for) */
    provider_config_location: z.string().optional(),
    /** files writable by others than the agent's user: warn (default: Nova starts with them) or refuse */
    provider_config_permissions: z.enum(['refuse', 'warn']).default('warn'),
    /**
     * Who writes the compute node provider (named as the host): `agent` (this
     * agent, as on a host without Nova), `external` (nova-compute: the agent
     * never writes its inventory, traits or aggregates and only keeps the
     * accelerator children it made), or `auto` (external where the provider is
     * nova-compute's: not made by the agent and carrying Nova's COMPUTE_* traits).
     */
    compute_node: z.enum(['auto', 'agent', 'external']).default('auto'),
    /** aggregates the compute node is put in (added, never removed) */
    aggregates: z.preprocess(
      (v) =>
        typeof v === 'string'
          ? v
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : v,
      z.array(z.uuid()).default([]),
    ),
    /** also keep the accelerator API's device list (/accelerator/v2) up to date on once/run */
    report_accelerators: z.preprocess(
      (v) => (typeof v === 'string' ? !/^(0|false|no|off)$/i.test(v.trim()) : v),
      z.boolean().default(true),
    ),
    /** a GPU with more uncorrected ECC errors than this (nvidia-smi -q) gets the agent's NoSchedule taint */
    gpu_uncorrected_ecc_threshold: z.coerce.number().int().min(0).default(0),
    /** a GPU with more retired pages (or rows remapped for uncorrectable errors) than this gets it too */
    gpu_retired_pages_threshold: z.coerce.number().int().min(0).default(16),
    /** attempts for `once` before giving up when the service is down */
    max_attempts: z.coerce.number().int().min(1).default(5),
    /** reaper: Nova's compute endpoint (unset: the Keystone catalog's `compute` on `interface`) */
    compute_endpoint: z.url().optional(),
    /** reaper: where it remembers the last event it handled and the preemptions under way (restarts resume there) */
    reaper_state_file: z.string().min(1).default('/var/lib/placement-agent/reaper-state.json'),
    /** reaper: how long one read of the events stream waits for an event (a long poll, at most 60) */
    reaper_wait_seconds: z.coerce.number().int().min(0).max(60).default(30),
    /**
     * reaper: once every victim of a preemption is gone, remove its nomination so the freed capacity
     * is placement's to give again (Nova, unchanged, cannot claim with ext_hold); false: leave it
     * for a preemptor that claims with ext_hold
     */
    reaper_release_nominations: z.preprocess(
      (v) => (typeof v === 'string' ? !/^(0|false|no|off)$/i.test(v.trim()) : v),
      z.boolean().default(true),
    ),
  })
  .strict();

export type AgentConfig = z.infer<typeof AgentConfigSchema>;

/** Where provider configs are read from when `provider_config_location` is not set (read only if it exists). */
export const DEFAULT_PROVIDER_CONFIG_LOCATION = '/etc/placement-agent/provider_config';
export const CONFIG_KEYS = Object.keys(AgentConfigSchema.shape) as (keyof AgentConfig)[];

export class ConfigError extends Error {}

export function loadAgentConfig(opts: {
  file?: string;
  env?: Record<string, string | undefined>;
  overrides?: Partial<Record<keyof AgentConfig, unknown>>;
}): AgentConfig {
  const env = opts.env ?? process.env;
  const raw: Record<string, unknown> = {};
  const file = opts.file ?? env.PLACEMENT_AGENT_CONFIG;
  if (file) {
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new ConfigError(`cannot read config file ${file}: ${(err as Error).message}`);
    }
    if (parsed !== null && parsed !== undefined) {
      if (typeof parsed !== 'object' || Array.isArray(parsed)) throw new ConfigError(`config file ${file} must be a mapping`);
      Object.assign(raw, parsed);
    }
  }
  for (const key of CONFIG_KEYS) {
    const value = env[`PLACEMENT_AGENT_${key.toUpperCase()}`];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  for (const [key, value] of Object.entries(opts.overrides ?? {})) if (value !== undefined) raw[key] = value;
  const result = AgentConfigSchema.safeParse(raw);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || '(config)'}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid agent configuration: ${problems}`);
  }
  if (result.data.auth_url) {
    for (const key of ['username', 'password', 'project_name'] as const) {
      if (!result.data[key]) throw new ConfigError(`invalid agent configuration: ${key}: required with auth_url (Keystone)`);
    }
    if (result.data.token) throw new ConfigError('invalid agent configuration: token: set either token or auth_url, not both');
  }
  return result.data;
}
