// Where a scrape's counters come from. In Node, one server process answers
// the scrape: alone it shows its own registry; in a cluster it gathers every
// process's over IPC (cluster.ts) and sums them. A Worker isolate shows none:
// each scrape lands on some isolate among many, each counting from its own
// start, so its counters would read as resets and their rates as noise.
import type { FamilySnapshot } from './registry.js';
import type { ServiceMetrics } from './service.js';

export interface GatheredMetrics {
  families: FamilySnapshot[];
  /** Processes whose counters are in `families`. */
  processes: number;
}

export interface MetricsSource {
  /** 'process': this one; 'cluster': every server process of a Node cluster; 'isolate': a Worker isolate (no counters). */
  scope: 'process' | 'cluster' | 'isolate';
  gather(): Promise<GatheredMetrics>;
}

export const processMetrics = (metrics: ServiceMetrics): MetricsSource => ({
  scope: 'process',
  gather: async () => ({ families: metrics.registry.snapshot(), processes: 1 }),
});

export const isolateMetrics: MetricsSource = { scope: 'isolate', gather: async () => ({ families: [], processes: 0 }) };
