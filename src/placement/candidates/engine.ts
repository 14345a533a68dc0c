// The candidates engine of one app (Deps.candidates): its settings, its tree
// cache, the read hooks the composition root installed and where it counts.
// Every caller (the route, headroom, why-no-host, the warm-up) takes its
// CandidateOptions from here, so two apps in one process share nothing.
import type { BatchReader } from '../../db/client.js';
import { TreeCache } from './cloud-model.js';
import type { CandidateReadHook } from './hooks.js';
import type { CandidateMetrics, CandidateOptions } from './index.js';
import { keepTreeModelFresh, type ModelRefresher, refreshTreeModel } from './model-refresh.js';
import type { GenerationStrategy } from './search.js';

/** The settings of the engine (PLACEMENT_* in config.ts; compose.ts maps them). */
export interface CandidateSettings {
  randomize: boolean;
  maxCandidates: number;
  timeBudgetMs: number;
  treeCacheProviders: number;
  generationStrategy: GenerationStrategy;
}

export class CandidateEngine {
  /** The provider trees kept in memory between requests, one model per database handle. */
  readonly trees: TreeCache;

  constructor(
    readonly settings: CandidateSettings,
    readonly hooks: readonly CandidateReadHook[],
    private readonly metrics: CandidateMetrics | undefined,
    private readonly clock: () => number = Date.now,
  ) {
    this.trees = new TreeCache(metrics ?? null);
  }

  /** The options of one request, now (`overrides`: what a caller changes, e.g. headroom's uncapped search). */
  options(overrides: Partial<CandidateOptions> = {}): CandidateOptions {
    const { settings } = this;
    return {
      randomize: settings.randomize,
      maxCandidates: settings.maxCandidates,
      timeBudgetMs: settings.timeBudgetMs,
      treeCacheProviders: settings.treeCacheProviders,
      generationStrategy: settings.generationStrategy,
      now: this.clock(),
      trees: this.trees,
      hooks: this.hooks,
      ...(this.metrics ? { metrics: this.metrics } : {}),
      ...overrides,
    };
  }

  /** Reads the trees changed since the cache's last refresh (every tree the first time); nothing with the cache off. */
  async refresh(reader: BatchReader): Promise<void> {
    const cap = this.settings.treeCacheProviders;
    if (cap > 0) await refreshTreeModel(reader, this.trees.modelFor(reader, cap), this.clock());
  }

  /**
   * Refreshes the cache every `everyMs` off the request path (Node mode), and
   * runs `rewarm` when the trees took a new shape (model-refresh.ts); a no-op
   * with the cache off or `everyMs` 0.
   */
  keepFresh(reader: BatchReader, everyMs: number, onError: (err: unknown) => void, rewarm?: () => Promise<void>): ModelRefresher {
    const cap = this.settings.treeCacheProviders;
    if (cap <= 0 || everyMs <= 0) return { stop: () => {} };
    return keepTreeModelFresh(reader, this.trees.modelFor(reader, cap), everyMs, onError, rewarm);
  }
}
