// The candidates engine of one app (Deps.candidates): its settings, its tree
// cache, what the installed extensions add (query parameters, read hooks,
// gates; the composition root installs them) and where it counts.
// Every caller (the route, headroom, why-no-host, the warm-up) takes its
// CandidateOptions from here, so two apps in one process share nothing.
import type { BatchReader } from '../../db/client.js';
import type { Microversion } from '../../microversion.js';
import { TreeCache } from './cloud-model.js';
import { parseCandidateRequestWithExt } from './ext-params.js';
import type { CandidateGate, CandidateParam, CandidateReadHook, Caller } from './hooks.js';
import type { CandidateMetrics, CandidateOptions } from './index.js';
import { keepTreeModelFresh, type ModelRefresher, refreshTreeModel } from './model-refresh.js';
import type { CandidateRequest } from './parse.js';
import type { GenerationStrategy } from './search.js';

/** What the installed extensions add to the engine (hooks.ts), each list in installation order. */
export interface CandidateExtensions {
  params: readonly CandidateParam[];
  hooks: readonly CandidateReadHook[];
  gates: readonly CandidateGate[];
}

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
  /** The installed read hooks, joined to every read batch of a search. */
  readonly hooks: readonly CandidateReadHook[];
  /** The installed extensions' query parameters, by name. */
  readonly params: ReadonlyMap<string, CandidateParam>;
  private readonly gates: readonly CandidateGate[];

  constructor(
    readonly settings: CandidateSettings,
    extensions: CandidateExtensions,
    private readonly metrics: CandidateMetrics | undefined,
    private readonly clock: () => number = Date.now,
  ) {
    this.trees = new TreeCache(metrics ?? null);
    this.hooks = extensions.hooks;
    this.gates = extensions.gates;
    this.params = new Map(extensions.params.map((param) => [param.name, param]));
  }

  /** A candidates query, parsed: upstream's keys and the installed extensions' (ext-params.ts); throws DomainError('invalid'). */
  parse(query: Record<string, string[]>, mv: Microversion): CandidateRequest {
    return parseCandidateRequestWithExt(query, mv, this.params);
  }

  /** The first installed gate that answers `request` with none, and why; null when the search goes on. */
  async refusal(request: CandidateRequest, caller: Caller): Promise<{ gate: CandidateGate; reason: string } | null> {
    for (const gate of this.gates) {
      const reason = await gate.refusal(request, caller);
      if (reason !== null) return { gate, reason };
    }
    return null;
  }

  /** The options of one request, now (`overrides`: what a caller changes, e.g. headroom's uncapped search). */
  options(overrides: Partial<CandidateOptions> = {}): CandidateOptions {
    const { randomize, maxCandidates, timeBudgetMs, treeCacheProviders, generationStrategy } = this.settings;
    return {
      randomize,
      maxCandidates,
      timeBudgetMs,
      treeCacheProviders,
      generationStrategy,
      now: this.clock(),
      trees: this.trees,
      hooks: this.hooks,
      params: this.params,
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
