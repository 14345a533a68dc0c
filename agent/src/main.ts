// placement-agent: discover | validate DIR | once | run. Wires config,
// discovery, provider configs and reporting; no logic of its own beyond that.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAgentConfig, ConfigError, DEFAULT_PROVIDER_CONFIG_LOCATION, type AgentConfig } from './config.js';
import { discover, type Discovery } from './discover/index.js';
import { providerUuid } from './discover/uuid.js';
import { formatProblem, loadProviderConfigs, providerConfigsAsJson, type ConfiguredProvider } from './provider-config/load.js';
import { mergeProviderConfigs, ProviderConfigConflictError } from './provider-config/merge.js';
import { ratioSettings } from './ratios/index.js';
import { PlacementClient, PlacementError, ServiceUnavailableError, type FetchLike } from './report/client.js';
import { reportAccelerators, type AcceleratorOutcome } from './report/accelerators.js';
import { placementConnection, type PlacementConnection, serviceConnection, type ServiceConnection } from './report/keystone-session.js';
import { NovaServers } from './reaper/nova.js';
import { Reaper } from './reaper/reaper.js';
import { lookupProviders, syncTree, writerOf, type SyncSummary } from './report/sync.js';
import { VERSION } from '../../src/shared/version.js';
import { syncGpuTaints, type TaintOutcome } from './report/taints.js';
import { parseNvidiaSmiXml, readNvidiaSmiXml, unhealthyReason } from './discover/gpu-health.js';
import type { DiscoveredProvider } from './discover/types.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
  fetch?: FetchLike;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  env?: Record<string, string | undefined>;
  signal?: AbortSignal;
}

const USAGE = `usage: placement-agent <command> [options] | --help | --version
  discover [--root DIR] [--json]         print the provider tree found on this host
  validate DIR [--json] [--strict-permissions]
                                         check provider config files (*.yaml); non-zero exit when bad
  once --endpoint URL [--token T]        report to placement once (and, unless
                                         report_accelerators is false, GPUs/FPGAs to /accelerator/v2)
  accelerators --endpoint URL [--token T]
                                         only the accelerator report (after \`once\` created the tree)
  run  [--interval SECONDS]              report periodically until SIGTERM/SIGINT
  reaper [--once]                        delete preempted servers through Nova (events stream of
                                         placement-edge, docs/preemption.md) until SIGTERM/SIGINT
common: --config FILE (or PLACEMENT_AGENT_CONFIG), --host NAME, --root DIR, --max-attempts N (once, accelerators);
environment PLACEMENT_AGENT_<KEY> sets any config key (ENDPOINT, TOKEN, ...)`;

const defaultSleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

export async function main(argv: string[], io: Io): Promise<number> {
  // biome-ignore lint/suspicious/noImplicitAnyLet: parseArgs' result type is inferred from the assignment below
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: 'boolean' },
        root: { type: 'string' },
        host: { type: 'string' },
        config: { type: 'string' },
        endpoint: { type: 'string' },
        token: { type: 'string' },
        interval: { type: 'string' },
        'max-attempts': { type: 'string' },
        'strict-permissions': { type: 'boolean' },
        once: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'V' },
      },
    });
  } catch (err) {
    io.err(`${(err as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.version) {
    io.out(`placement-agent ${VERSION}`);
    return 0;
  }
  if (values.help || !command) {
    (values.help ? io.out : io.err)(USAGE);
    return values.help ? 0 : 2;
  }
  if (command === 'validate') {
    if (rest.length !== 1) {
      io.err(`validate needs exactly one directory\n${USAGE}`);
      return 2;
    }
    return validateCommand(rest[0], Boolean(values.json), Boolean(values['strict-permissions']), io);
  }
  let config: AgentConfig;
  try {
    config = loadAgentConfig({
      file: values.config,
      env: io.env ?? process.env,
      overrides: {
        root: values.root,
        host: values.host,
        endpoint: values.endpoint,
        token: values.token,
        interval_seconds: values.interval,
        max_attempts: values['max-attempts'],
      },
    });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    io.err(err.message);
    return 2;
  }
  switch (command) {
    case 'discover':
      return discoverCommand(config, Boolean(values.json), io);
    case 'once':
    case 'run':
      return reportCommand(command, config, io);
    case 'accelerators':
      return acceleratorsCommand(config, io);
    case 'reaper':
      return reaperCommand(config, Boolean(values.once), io);
    default:
      io.err(`unknown command ${command}\n${USAGE}`);
      return 2;
  }
}

function discoverFromConfig(config: AgentConfig): Promise<Discovery> {
  return discover({
    root: config.root,
    hostname: config.host,
    instancesPath: config.instances_path,
    reserved: {
      vcpu: config.reserved_host_cpus,
      memoryMb: config.reserved_host_memory_mb,
      diskGb: Math.ceil(config.reserved_host_disk_mb / 1024),
    },
  });
}

async function discoverCommand(config: AgentConfig, json: boolean, io: Io): Promise<number> {
  if (!existsSync(join(config.root, 'proc/cpuinfo'))) {
    io.err(`no ${join(config.root, 'proc/cpuinfo')}: --root must point at a Linux root (real or a fixture tree)`);
    return 1;
  }
  const found = await discoverFromConfig(config);
  const providers = found.providers.map((p) => ({ uuid: providerUuid(p.name), ...p }));
  if (json) {
    io.out(JSON.stringify({ host: found.host, providers }, null, 2));
    return 0;
  }
  const h = found.host;
  io.out(
    `host ${h.hostname}: ${h.arch}, ${h.cpuModel ?? 'unknown CPU'}, ${h.onlineCpus} CPUs, ${h.memoryMiB} MiB, ${h.diskGiB} GiB at ${h.instancesPath}`,
  );
  for (const p of providers) {
    io.out(`\n${p.parentName ? '  └ ' : ''}${p.name}  ${p.uuid}`);
    for (const [rc, inv] of Object.entries(p.inventories))
      io.out(`    ${rc.padEnd(12)} total=${inv.total} reserved=${inv.reserved ?? 0} max_unit=${inv.max_unit ?? inv.total}`);
    if (p.device) {
      const d = p.device;
      io.out(
        `    device ${d.kind} ${d.vendorName} ${d.vendorId}:${d.productId} at ${d.pciAddress}${d.model ? `, ${d.model}` : ''}${d.memoryMiB ? `, ${d.memoryMiB} MiB` : ''}`,
      );
    }
    io.out(`    traits ${p.traits.join(' ')}`);
  }
  return 0;
}

function validateCommand(dir: string, json: boolean, strictPermissions: boolean, io: Io): number {
  const result = loadProviderConfigs(dir, { permissions: strictPermissions ? 'refuse' : 'warn' });
  for (const warning of result.warnings) io.err(`warning: ${formatProblem(warning)}`);
  for (const error of result.errors) io.err(`error: ${formatProblem(error)}`);
  if (result.errors.length > 0) return 1;
  if (json) io.out(providerConfigsAsJson(result.providers));
  else io.out(`${result.files.length} file(s), ${result.providers.length} provider(s): OK`);
  return 0;
}

/** The endpoint and token source, or the exit code after saying why there is none (2: configuration, 3: Keystone down). */
async function connect(config: AgentConfig, io: Io): Promise<PlacementConnection | number> {
  try {
    const connection = await placementConnection(config, io.fetch ?? ((request) => fetch(request)));
    if (typeof connection === 'string') {
      io.err(connection);
      return 2;
    }
    return connection;
  } catch (err) {
    io.err(`error: ${(err as Error).message}`);
    return (err as Error).name === 'KeystoneUnavailable' ? 3 : 2;
  }
}

async function reportCommand(command: 'once' | 'run', config: AgentConfig, io: Io): Promise<number> {
  const connection = await connect(config, io);
  if (typeof connection === 'number') return connection;
  const log = { info: (m: string) => io.err(`info: ${m}`), warn: (m: string) => io.err(`warning: ${m}`) };
  // Provider configs are read once, at startup; a bad one stops the agent.
  const loaded = providerConfigsOf(config);
  for (const w of loaded.warnings) log.warn(formatProblem(w));
  if (loaded.errors.length > 0) {
    for (const e of loaded.errors) io.err(`error: ${formatProblem(e)}`);
    io.err('refusing to start: fix the provider config files above');
    return 1;
  }
  const client = new PlacementClient({ endpoint: connection.endpoint, tokenSource: connection.token, fetch: io.fetch });
  const sleep = io.sleep ?? defaultSleep;
  let startup = true;
  let failures = 0;
  for (;;) {
    try {
      const summary = await reportOnce(client, config, loaded.providers, startup, log);
      io.out(JSON.stringify(summary));
      startup = false;
      failures = 0;
      if (command === 'once') return 0;
    } catch (err) {
      if (err instanceof ProviderConfigConflictError) {
        io.err(`error: ${err.message}`);
        if (startup) return 1;
      } else if (err instanceof ServiceUnavailableError) {
        failures++;
        log.warn(`placement unavailable (${err.message})`);
        if (command === 'once' && failures >= config.max_attempts) {
          io.err(gaveUp(connection.endpoint, failures, err));
          return 3;
        }
      } else {
        io.err(`error: ${(err as Error).message}`);
        if (command === 'once') return 1;
      }
    }
    if (io.signal?.aborted) return 0;
    // Back off exponentially while the service is down, never beyond the interval.
    const intervalMs = config.interval_seconds * 1000;
    const delay = failures > 0 ? Math.min(intervalMs, 1000 * 2 ** (failures - 1)) : intervalMs;
    await sleep(delay, io.signal);
    if (io.signal?.aborted) return 0;
  }
}

/**
 * Sends this host's devices, deployables and attach handles to the accelerator
 * service, naming device providers by the uuids Placement already has for them.
 */
async function acceleratorsCommand(config: AgentConfig, io: Io): Promise<number> {
  const connection = await connect(config, io);
  if (typeof connection === 'number') return connection;
  const client = new PlacementClient({ endpoint: connection.endpoint, tokenSource: connection.token, fetch: io.fetch });
  try {
    const found = await discoverFromConfig(config);
    const known = await lookupProviders(
      client,
      found.providers.map((p) => p.name),
    );
    const uuidOf = (name: string) => known.get(name)?.uuid ?? providerUuid(name);
    // Beside nova-compute, devices whose provider another writer made are not the agent's to report.
    const { ours } = await writerOf(client, found.providers, known, config.compute_node);
    const devices = found.providers.filter((p) => p.parentName === undefined || ours(p));
    const outcome = await reportAccelerators(client, found.host.hostname, devices, uuidOf);
    io.out(JSON.stringify({ host: found.host.hostname, ...outcome }));
    return 0;
  } catch (err) {
    if (err instanceof ServiceUnavailableError) {
      io.err(gaveUp(connection.endpoint, 1, err));
      return 3;
    }
    io.err(`error: ${(err as Error).message}`);
    return 1;
  }
}

/** The reaper (agent/src/reaper/): placement's events stream in, Nova's server deletes out; one JSON line per action on stdout. */
async function reaperCommand(config: AgentConfig, once: boolean, io: Io): Promise<number> {
  const connection = await connect(config, io);
  if (typeof connection === 'number') return connection;
  const fetchLike = io.fetch ?? ((request: Request) => fetch(request));
  let compute: ServiceConnection | string;
  try {
    compute = await serviceConnection(config, fetchLike, 'compute', config.compute_endpoint);
  } catch (err) {
    io.err(`error: ${(err as Error).message}`);
    return (err as Error).name === 'KeystoneUnavailable' ? 3 : 2;
  }
  if (typeof compute === 'string') {
    io.err(`${compute} (compute_endpoint)`);
    return 2;
  }
  const reaper = new Reaper({
    placement: new PlacementClient({ endpoint: connection.endpoint, tokenSource: connection.token, fetch: io.fetch }),
    nova: new NovaServers(compute, fetchLike),
    stateFile: config.reaper_state_file,
    waitSeconds: config.reaper_wait_seconds,
    releaseNominations: config.reaper_release_nominations,
    log: (entry) => io.out(JSON.stringify({ at: new Date().toISOString(), ...entry })),
    warn: (message) => io.err(`warning: ${message}`),
    sleep: io.sleep ?? defaultSleep,
    signal: io.signal,
    once,
  });
  try {
    return await reaper.run();
  } catch (err) {
    io.err(`error: ${(err as Error).message}`);
    return 1;
  }
}

/** The last line of a run that gave up on an unreachable or unavailable placement: where it was, how often it was tried. */
function gaveUp(endpoint: string, attempts: number, err: Error): string {
  return `error: placement at ${endpoint} did not answer (${err.message}); gave up after ${attempts} attempt${attempts === 1 ? '' : 's'} (max_attempts, --max-attempts)`;
}

/**
 * The provider configs to apply: from `provider_config_location` when set (a missing
 * directory is then warned about, as Nova does), else from the default location only where it
 * exists: an agent nobody gave provider configs says nothing about them.
 */
function providerConfigsOf(config: AgentConfig): ReturnType<typeof loadProviderConfigs> {
  const dir = config.provider_config_location ?? DEFAULT_PROVIDER_CONFIG_LOCATION;
  if (config.provider_config_location === undefined && !existsSync(dir)) return { files: [], providers: [], errors: [], warnings: [] };
  return loadProviderConfigs(dir, { permissions: config.provider_config_permissions });
}

export async function reportOnce(
  client: PlacementClient,
  config: AgentConfig,
  configs: readonly ConfiguredProvider[],
  startup: boolean,
  log: { info(m: string): void; warn(m: string): void },
): Promise<ReportSummary> {
  const found = await discoverFromConfig(config);
  const known = await lookupProviders(
    client,
    found.providers.map((p) => p.name),
  );
  const uuidOf = (name: string) => known.get(name)?.uuid ?? providerUuid(name);
  const merged = mergeProviderConfigs(found.providers, configs, uuidOf, { startup });
  for (const conflict of merged.conflicts) log.warn(`ignored: ${conflict}`);
  const synced = await syncTree(client, merged.providers, {
    ratios: ratioSettings(config),
    aggregates: config.aggregates,
    computeNode: config.compute_node,
    log,
  });
  // Devices whose provider another writer made are not this agent's to report.
  const devices = found.providers.filter((p) => !synced.skipped.includes(p.name));
  const summary = { ...synced, ...(await reportGpuHealth(client, config, devices, uuidOf, log)) };
  if (!config.report_accelerators) return { ...summary, accelerators: 'disabled' };
  try {
    // After the tree exists, so every deployable names a device provider Placement has.
    const outcome = await reportAccelerators(client, found.host.hostname, devices, uuidOf);
    return { ...summary, accelerators: outcome };
  } catch (err) {
    // A plain OpenStack Placement has no accelerator API: keep reporting the tree.
    if (err instanceof PlacementError && (err.status === 404 || err.status === 405)) {
      log.warn(`no accelerator API at this endpoint (${err.status}); set report_accelerators: false to stop trying`);
      return { ...summary, accelerators: 'unsupported' };
    }
    throw err;
  }
}

export type ReportSummary = SyncSummary & {
  accelerators: AcceleratorOutcome | 'disabled' | 'unsupported';
  /** GPU health taints (service extension), present when the host has NVIDIA GPUs nvidia-smi reports on. */
  taints?: TaintOutcome | 'unsupported';
};

/**
 * Taints each GPU nvidia-smi finds unhealthy (uncorrected ECC errors or
 * retired pages over the configured thresholds) and clears the agent's own
 * taint from a healthy one; nothing without nvidia-smi's report.
 */
async function reportGpuHealth(
  client: PlacementClient,
  config: AgentConfig,
  providers: readonly DiscoveredProvider[],
  uuidOf: (name: string) => string,
  log: { warn(m: string): void },
): Promise<{ taints?: TaintOutcome | 'unsupported' }> {
  const xml = await readNvidiaSmiXml(config.root);
  if (!xml) return {};
  const health = new Map(parseNvidiaSmiXml(xml).map((gpu) => [gpu.pciAddress, gpu]));
  const limits = { uncorrectedEcc: config.gpu_uncorrected_ecc_threshold, retiredPages: config.gpu_retired_pages_threshold };
  const verdicts = providers.flatMap((p) => {
    const gpu = p.device?.kind === 'GPU' ? health.get(p.device.pciAddress) : undefined;
    return gpu ? [{ providerUuid: uuidOf(p.name), unhealthy: unhealthyReason(gpu, limits) }] : [];
  });
  if (!verdicts.length) return {};
  const taints = await syncGpuTaints(client, verdicts);
  if (taints === 'unsupported') log.warn('no taints extension at this endpoint: unhealthy GPUs are not taken out of candidates');
  else
    for (const uuid of taints.tainted)
      log.warn(`GPU provider ${uuid} tainted: ${verdicts.find((v) => v.providerUuid === uuid)?.unhealthy}`);
  return { taints };
}
