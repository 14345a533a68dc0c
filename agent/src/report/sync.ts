// Brings placement in line with the host: providers (parents first),
// inventories, traits and aggregates; writes only what differs and retries a
// 409 generation conflict by re-reading the provider and recomputing.
// One writer per provider: where nova-compute made the compute node provider
// (or `compute_node: external`), the agent writes none of it and only keeps
// the accelerator children it made itself (computeNodeOwner below).
import type { DiscoveredProvider, InventoryFields } from '../discover/types.js';
import { providerUuid } from '../discover/uuid.js';
import { chooseAllocationRatio, isRatioClass, type RatioClass, type RatioSettings } from '../ratios/index.js';
import { PlacementError, type PlacementClient } from './client.js';
import type {
  Aggregates,
  CreateProviderBody,
  Inventories as StoredInventories,
  Provider,
  ProviderList,
  ProviderTraits,
  PutAggregatesBody,
  PutInventoriesBody,
  PutProviderTraitsBody,
} from './placement-api.js';

export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
}

/**
 * Who writes the compute node provider: `agent` (the agent, as without Nova),
 * `external` (nova-compute: the agent never writes it), or `auto` (external
 * where computeNodeOwner finds nova-compute's provider, else the agent).
 */
export type ComputeNodeMode = 'auto' | 'agent' | 'external';

/** `compute_node: external` and Placement has no provider named as the host yet. */
export class ComputeNodeMissingError extends Error {
  constructor(readonly provider: string) {
    super(
      `no compute node provider named ${provider} in Placement: with compute_node external the agent waits for nova-compute to create it ` +
        '(check nova-compute runs on this host with this host name, or set compute_node: agent)',
    );
    this.name = 'ComputeNodeMissingError';
  }
}

export interface SyncOptions {
  ratios: Record<RatioClass, RatioSettings>;
  /** Who writes the compute node provider (default auto). */
  computeNode?: ComputeNodeMode;
  /** aggregates for the compute node: added when missing, never removed */
  aggregates?: readonly string[];
  /** traits the agent owns: one that is no longer discovered is removed */
  ownedTraitPrefixes?: readonly string[];
  maxConflictRetries?: number;
  log?: Logger;
}

export interface SyncSummary {
  created: string[];
  inventoriesUpdated: string[];
  traitsUpdated: string[];
  aggregatesUpdated: string[];
  /** Providers whose shared counters (a MIG-mode GPU) were written. */
  countersUpdated: string[];
  deleted: string[];
  conflictsRetried: number;
  /** Who wrote the compute node provider this run: the agent, or another writer (nova-compute) it left alone. */
  computeNode: 'agent' | 'external';
  /** Providers of this host's devices that another writer made (a name the agent would give, another uuid): left alone. */
  skipped: string[];
}

const DEFAULT_OWNED_PREFIXES = ['HW_CPU_', 'HW_ARCH_', 'CUSTOM_GPU_', 'CUSTOM_FPGA_'];
const INVENTORY_FIELDS = ['total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'allocation_ratio'] as const;
const silent: Logger = { info() {}, warn() {} };

/**
 * Nova's capability traits: nova-compute puts COMPUTE_* traits of its virt
 * driver (COMPUTE_NET_ATTACH_INTERFACE, COMPUTE_IMAGE_TYPE_RAW, COMPUTE_ACCELERATORS, ...)
 * and COMPUTE_STATUS_DISABLED on its compute node; of that namespace the agent
 * writes COMPUTE_NODE only.
 */
const isNovaTrait = (trait: string) => trait.startsWith('COMPUTE_') && trait !== 'COMPUTE_NODE';

/**
 * Whether another writer owns the compute node provider `record` (named as
 * the host): the agent did not make it (every provider the agent makes has the
 * uuid providerUuid(name); nova-compute's has its compute node's uuid) and it
 * carries Nova's capability traits. Both, so an empty provider an operator
 * made for the agent is still the agent's, and the agent's own provider stays
 * its own whatever traits an operator adds.
 */
export async function computeNodeOwner(client: PlacementClient, record: Provider): Promise<'agent' | 'external'> {
  if (record.uuid === providerUuid(record.name)) return 'agent';
  const { body } = await client.request<ProviderTraits>('GET', `/resource_providers/${record.uuid}/traits`);
  return (body.traits ?? []).some(isNovaTrait) ? 'external' : 'agent';
}

const enc = encodeURIComponent;

/** Looks the tree up by name; returns name -> uuid for those placement has. */
export async function lookupProviders(client: PlacementClient, names: readonly string[]): Promise<Map<string, Provider>> {
  const found = new Map<string, Provider>();
  for (const name of names) {
    const { body } = await client.request<ProviderList>('GET', `/resource_providers?name=${enc(name)}`);
    const record = body.resource_providers?.[0];
    if (record) found.set(name, record);
  }
  return found;
}

/**
 * Who writes this host's providers this run: the compute node's writer (see
 * ComputeNodeMode) and, per provider, whether the agent writes it (with another
 * writer on the compute node, only the children the agent made itself: its uuid).
 * Throws ComputeNodeMissingError for `external` while there is no compute node.
 */
export async function writerOf(
  client: PlacementClient,
  tree: readonly DiscoveredProvider[],
  existing: ReadonlyMap<string, Provider>,
  mode: ComputeNodeMode,
): Promise<{ computeNode: 'agent' | 'external'; ours: (provider: DiscoveredProvider) => boolean }> {
  const rootName = tree.find((p) => p.parentName === undefined)?.name;
  const rootRecord = rootName === undefined ? undefined : existing.get(rootName);
  if (mode === 'external' && rootName !== undefined && !rootRecord) throw new ComputeNodeMissingError(rootName);
  const computeNode =
    !rootRecord || mode === 'agent' ? 'agent' : mode === 'external' ? 'external' : await computeNodeOwner(client, rootRecord);
  const ours = (provider: DiscoveredProvider) => {
    if (computeNode === 'agent') return true;
    if (provider.parentName === undefined) return false;
    const record = existing.get(provider.name);
    return !record || record.uuid === providerUuid(provider.name);
  };
  return { computeNode, ours };
}

export async function syncTree(client: PlacementClient, tree: readonly DiscoveredProvider[], options: SyncOptions): Promise<SyncSummary> {
  const log = options.log ?? silent;
  const summary: SyncSummary = {
    created: [],
    inventoriesUpdated: [],
    traitsUpdated: [],
    aggregatesUpdated: [],
    countersUpdated: [],
    deleted: [],
    conflictsRetried: 0,
    computeNode: 'agent',
    skipped: [],
  };
  const existing = await lookupProviders(
    client,
    tree.map((p) => p.name),
  );
  const { computeNode, ours } = await writerOf(client, tree, existing, options.computeNode ?? 'auto');
  summary.computeNode = computeNode;
  const external = computeNode === 'external';
  if (external && (options.aggregates?.length ?? 0) > 0) {
    log.warn(`aggregates not written: nova-compute owns the compute node (Nova's host aggregates are mirrored to Placement)`);
  }
  const uuids = new Map<string, string>();
  for (const provider of tree) {
    const record = existing.get(provider.name);
    if (record) {
      uuids.set(provider.name, record.uuid);
      if (!ours(provider) && provider.parentName !== undefined) {
        summary.skipped.push(provider.name);
        log.warn(`left ${provider.name} alone: another writer made it (uuid ${record.uuid})`);
      }
      continue;
    }
    const uuid = providerUuid(provider.name);
    const parent = provider.parentName === undefined ? undefined : uuids.get(provider.parentName);
    await client.request('POST', '/resource_providers', {
      name: provider.name,
      uuid,
      ...(parent ? { parent_provider_uuid: parent } : {}),
    } satisfies CreateProviderBody);
    uuids.set(provider.name, uuid);
    summary.created.push(provider.name);
    log.info(`created provider ${provider.name} (${uuid})`);
  }

  const ensureCustom = customNameEnsurer(client);
  const retries = options.maxConflictRetries ?? 5;
  const owned = options.ownedTraitPrefixes ?? DEFAULT_OWNED_PREFIXES;
  for (const provider of tree) {
    if (!ours(provider)) continue;
    const uuid = uuids.get(provider.name)!;
    const onConflict = () => {
      summary.conflictsRetried++;
      log.warn(`generation conflict on ${provider.name}; re-reading`);
    };
    if (await withGenerationRetry(retries, onConflict, () => syncInventories(client, uuid, provider, options.ratios, ensureCustom)))
      summary.inventoriesUpdated.push(provider.name);
    if (await withGenerationRetry(retries, onConflict, () => syncTraits(client, uuid, provider, owned, ensureCustom)))
      summary.traitsUpdated.push(provider.name);
    if (provider.counters) {
      try {
        if (await withGenerationRetry(retries, onConflict, () => syncCounters(client, uuid, provider.counters!)))
          summary.countersUpdated.push(provider.name);
      } catch (err) {
        // Allocations already over the new counters (an operator changed the MIG layout under running instances): keep going.
        if (!(err instanceof PlacementError) || err.isGenerationConflict) throw err;
        log.warn(`cannot write the counters of ${provider.name} yet: ${err.message}`);
      }
    }
    if (provider.parentName === undefined && (options.aggregates?.length ?? 0) > 0) {
      if (await withGenerationRetry(retries, onConflict, () => syncAggregates(client, uuid, options.aggregates ?? [])))
        summary.aggregatesUpdated.push(provider.name);
    }
  }

  // Devices that disappeared: delete their providers (placement refuses while in use).
  const root = tree.find((p) => p.parentName === undefined);
  if (root) {
    const rootUuid = uuids.get(root.name)!;
    const { body } = await client.request<ProviderList>('GET', `/resource_providers?in_tree=${rootUuid}`);
    const wanted = new Set(tree.map((p) => p.name));
    // With another writer on the compute node, only children the agent made (its uuids) are its to delete.
    const stale = (body.resource_providers ?? [])
      .filter((p) => !wanted.has(p.name) && p.name.startsWith(`${root.name}_pci_`) && (!external || p.uuid === providerUuid(p.name)))
      .reverse();
    for (const provider of stale) {
      try {
        await client.request('DELETE', `/resource_providers/${provider.uuid}`);
        summary.deleted.push(provider.name);
        log.info(`deleted provider ${provider.name}: device is gone`);
      } catch (err) {
        if (!(err instanceof PlacementError)) throw err;
        log.warn(`cannot delete ${provider.name} yet: ${err.message}`);
      }
    }
  }
  return summary;
}

/** Runs `attempt` again after each 409 generation conflict, up to `retries` times. */
async function withGenerationRetry(retries: number, onConflict: () => void, attempt: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof PlacementError) || !err.isGenerationConflict || i >= retries) throw err;
      onConflict();
    }
  }
}

type EnsureCustom = (kind: 'resource_classes' | 'traits', names: Iterable<string>) => Promise<void>;

/** Creates CUSTOM_ resource classes / traits right before first use (PUT is idempotent), once per run. */
function customNameEnsurer(client: PlacementClient): EnsureCustom {
  const done = new Set<string>();
  return async (kind, names) => {
    for (const name of names) {
      if (!name.startsWith('CUSTOM_') || done.has(`${kind}/${name}`)) continue;
      await client.request('PUT', `/${kind}/${enc(name)}`);
      done.add(`${kind}/${name}`);
    }
  };
}

type Inventories = Record<string, InventoryFields>;

export function desiredInventories(
  provider: DiscoveredProvider,
  stored: Inventories,
  ratios: Record<RatioClass, RatioSettings>,
): Inventories {
  const desired: Inventories = {};
  for (const [rc, inventory] of Object.entries(provider.inventories)) {
    const next: InventoryFields = { ...inventory };
    // reserved == total is allowed (1.26); more is not.
    if (next.reserved !== undefined && next.reserved > next.total) next.reserved = next.total;
    if (isRatioClass(rc) && provider.parentName === undefined) {
      next.allocation_ratio = chooseAllocationRatio(ratios[rc], stored[rc]?.allocation_ratio);
    }
    desired[rc] = next;
  }
  return desired;
}

function sameInventories(stored: Inventories, desired: Inventories): boolean {
  const a = Object.keys(stored).sort();
  const b = Object.keys(desired).sort();
  if (a.join() !== b.join()) return false;
  return b.every((rc) => INVENTORY_FIELDS.every((f) => desired[rc][f] === undefined || desired[rc][f] === stored[rc][f]));
}

async function syncInventories(
  client: PlacementClient,
  uuid: string,
  provider: DiscoveredProvider,
  ratios: Record<RatioClass, RatioSettings>,
  ensureCustom: EnsureCustom,
): Promise<boolean> {
  const { body } = await client.request<StoredInventories>('GET', `/resource_providers/${uuid}/inventories`);
  const stored = body.inventories ?? {};
  const desired = desiredInventories(provider, stored, ratios);
  if (sameInventories(stored, desired)) return false;
  await ensureCustom(
    'resource_classes',
    Object.keys(desired).filter((rc) => !(rc in stored)),
  );
  await client.request('PUT', `/resource_providers/${uuid}/inventories`, {
    resource_provider_generation: body.resource_provider_generation,
    inventories: desired,
  } satisfies PutInventoriesBody);
  return true;
}

async function syncTraits(
  client: PlacementClient,
  uuid: string,
  provider: DiscoveredProvider,
  owned: readonly string[],
  ensureCustom: EnsureCustom,
): Promise<boolean> {
  const { body } = await client.request<ProviderTraits>('GET', `/resource_providers/${uuid}/traits`);
  const current = new Set(body.traits ?? []);
  const desired = new Set(provider.traits);
  // Keep what an operator added; drop owned traits the host no longer has.
  for (const trait of current) if (!owned.some((p) => trait.startsWith(p)) || desired.has(trait)) desired.add(trait);
  if (current.size === desired.size && [...desired].every((t) => current.has(t))) return false;
  await ensureCustom(
    'traits',
    [...desired].filter((t) => !current.has(t)),
  );
  await client.request('PUT', `/resource_providers/${uuid}/traits`, {
    resource_provider_generation: body.resource_provider_generation,
    traits: [...desired].sort(),
  } satisfies PutProviderTraitsBody);
  return true;
}

interface StoredCounters {
  resource_provider_generation: number;
  counters: Record<string, number>;
  consumption: Record<string, Record<string, number>>;
}

/** The provider's shared counters as discovered (docs/extensions-gpu.md): written only when they differ from what is stored. */
async function syncCounters(client: PlacementClient, uuid: string, wanted: NonNullable<DiscoveredProvider['counters']>): Promise<boolean> {
  const { body } = await client.request<StoredCounters>('GET', `/ext/resource_providers/${uuid}/counters`);
  const canonical = (v: unknown) =>
    JSON.stringify(v, (_k, value: unknown) =>
      value && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort()) : value,
    );
  if (canonical(body.counters) === canonical(wanted.counters) && canonical(body.consumption) === canonical(wanted.consumption))
    return false;
  await client.request('PUT', `/ext/resource_providers/${uuid}/counters`, {
    resource_provider_generation: body.resource_provider_generation,
    counters: wanted.counters,
    consumption: wanted.consumption,
  });
  return true;
}

async function syncAggregates(client: PlacementClient, uuid: string, wanted: readonly string[]): Promise<boolean> {
  const { body } = await client.request<Aggregates>('GET', `/resource_providers/${uuid}/aggregates`);
  const current = body.aggregates ?? [];
  const missing = wanted.filter((a) => !current.includes(a));
  if (missing.length === 0) return false;
  await client.request('PUT', `/resource_providers/${uuid}/aggregates`, {
    resource_provider_generation: body.resource_provider_generation,
    aggregates: [...current, ...missing],
  } satisfies PutAggregatesBody);
  return true;
}
