// Merges loaded provider configs into the discovered tree (seed 000), as
// Nova's resource tracker does (_merge_provider_configs): uuid/name entries win
// over $COMPUTE_NODE (which applies to the compute node only); one provider
// identified by both its uuid and its name is a conflict; a config inventory
// of a resource class the agent already reports is a conflict. A config trait
// never is (they are all CUSTOM_, and Nova leaves custom traits out of its
// check): one the provider already has stays. At startup a conflict stops the
// agent; later it is warned about and the conflicting part ignored (the spec).
import type { DiscoveredProvider } from '../discover/types.js';
import type { ConfiguredProvider } from './load.js';
import { COMPUTE_NODE } from './schema.js';

export class ProviderConfigConflictError extends Error {
  constructor(readonly conflicts: string[]) {
    super(`provider config conflicts with what the agent manages: ${conflicts.join('; ')}`);
  }
}

export interface MergeResult {
  providers: DiscoveredProvider[];
  conflicts: string[];
  /** config entries that matched no provider of this host */
  unmatched: string[];
}

export function mergeProviderConfigs(
  tree: readonly DiscoveredProvider[],
  configs: readonly ConfiguredProvider[],
  uuidOf: (name: string) => string,
  { startup }: { startup: boolean },
): MergeResult {
  const byId = new Map(configs.map((c) => [c.id, c]));
  const used = new Set<string>();
  const conflicts: string[] = [];
  const providers = tree.map((provider) => {
    const byUuid = byId.get(uuidOf(provider.name));
    const byName = byId.get(provider.name);
    if (byUuid && byName && byUuid !== byName) {
      conflicts.push(
        `${byName.sourceFile} providers[${byName.index}] and ${byUuid.sourceFile} providers[${byUuid.index}]: the same provider ${provider.name} is specified using both name '${provider.name}' and uuid '${uuidOf(provider.name)}'`,
      );
      used.add(byName.id);
    }
    const explicit = byUuid ?? byName;
    const config = explicit ?? (provider.parentName === undefined ? byId.get(COMPUTE_NODE) : undefined);
    if (!config) return provider;
    used.add(config.id);
    const where = `${config.sourceFile} providers[${config.index}] (${config.id}) on ${provider.name}`;
    const inventories = { ...provider.inventories };
    for (const [rc, inventory] of Object.entries(config.inventories)) {
      if (rc in provider.inventories) {
        conflicts.push(`${where}: inventory ${rc} is managed by the agent`);
        continue;
      }
      inventories[rc] = { ...inventory };
    }
    const traits = new Set([...provider.traits, ...config.traits]);
    return { ...provider, inventories, traits: [...traits].sort() };
  });
  if (startup && conflicts.length > 0) throw new ProviderConfigConflictError(conflicts);
  const unmatched = configs.filter((c) => !used.has(c.id)).map((c) => `${c.sourceFile} providers[${c.index}] (${c.id})`);
  return { providers, conflicts, unmatched };
}
