// Merges loaded provider configs into the discovered tree (seed 000):
// uuid/name entries win over $COMPUTE_NODE (which applies to the compute node
// only); a config inventory or trait the agent already manages is a conflict:
// at startup the agent refuses to start, later it warns and ignores it.
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
    const explicit = byId.get(uuidOf(provider.name)) ?? byId.get(provider.name);
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
    const traits = new Set(provider.traits);
    for (const trait of config.traits) {
      if (provider.traits.includes(trait)) {
        conflicts.push(`${where}: trait ${trait} is managed by the agent`);
        continue;
      }
      traits.add(trait);
    }
    return { ...provider, inventories, traits: [...traits].sort() };
  });
  if (startup && conflicts.length > 0) throw new ProviderConfigConflictError(conflicts);
  const unmatched = configs.filter((c) => !used.has(c.id)).map((c) => `${c.sourceFile} providers[${c.index}] (${c.id})`);
  return { providers, conflicts, unmatched };
}
