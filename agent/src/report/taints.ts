// The agent's device taints (the service's /ext/resource_providers/{uuid}/taints
// extension): a GPU found unhealthy gets the agent's own NoSchedule taint, and
// loses it when healthy again. Taints others set (an operator's maintenance)
// are kept as they are. A 409 (the provider changed) is retried on a fresh read.
import { PlacementError, type PlacementClient } from './client.js';

/** The key of the agent's own taint. */
export const AGENT_TAINT_KEY = 'placement-agent/gpu-unhealthy';

interface Taint {
  key: string;
  value: string;
  effect: 'NoSchedule' | 'NoExecute';
  reason: string;
}

interface ProviderTaints {
  resource_provider_generation: number;
  taints: (Taint & { created_at?: string })[];
}

export interface GpuVerdict {
  providerUuid: string;
  /** Why the GPU is unhealthy, or null when healthy. */
  unhealthy: string | null;
}

export interface TaintOutcome {
  tainted: string[];
  cleared: string[];
}

/** Brings each GPU provider's own taint in line with its health; 'unsupported' when the service has no taints extension. */
export async function syncGpuTaints(client: PlacementClient, verdicts: readonly GpuVerdict[]): Promise<TaintOutcome | 'unsupported'> {
  const outcome: TaintOutcome = { tainted: [], cleared: [] };
  for (const { providerUuid, unhealthy } of verdicts) {
    const path = `/ext/resource_providers/${providerUuid}/taints`;
    for (let attempt = 0; ; attempt += 1) {
      let current: ProviderTaints;
      try {
        current = (await client.request<ProviderTaints>('GET', path)).body;
      } catch (err) {
        // The tree was just synced, so a 404 here means no extension (a plain OpenStack Placement).
        if (err instanceof PlacementError && (err.status === 404 || err.status === 405)) return 'unsupported';
        throw err;
      }
      const others = current.taints.filter((t) => t.key !== AGENT_TAINT_KEY);
      const mine = current.taints.find((t) => t.key === AGENT_TAINT_KEY);
      const wanted: Taint[] = others.map(({ key, value, effect, reason }) => ({ key, value, effect, reason }));
      if (unhealthy) wanted.push({ key: AGENT_TAINT_KEY, value: 'unhealthy', effect: 'NoSchedule', reason: unhealthy });
      if ((unhealthy && mine?.reason === unhealthy && mine.effect === 'NoSchedule') || (!unhealthy && !mine)) break;
      try {
        await client.request('PUT', path, { resource_provider_generation: current.resource_provider_generation, taints: wanted });
        (unhealthy ? outcome.tainted : outcome.cleared).push(providerUuid);
        break;
      } catch (err) {
        if (err instanceof PlacementError && err.isGenerationConflict && attempt < 4) continue;
        throw err;
      }
    }
  }
  return outcome;
}
