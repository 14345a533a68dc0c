// A simulated primary and three edge sites on a virtual clock, for the sites
// checker (test/ext/sites-history.test.ts). One scenario (a list of steps drawn
// from a seed) is played under two strategies:
// - escrow: src/ext/sites/model.ts (slices held on the primary, journal, replay);
// - kingbird: a test double of OPNFV Kingbird's quota sync as StarlingX
//   Distributed Cloud runs it (dcorch quota_manager: region limit = global
//   limit - usage everywhere + usage in that region, computed at each sync),
//   with each site deciding capacity from its last synced copy of the
//   primary's usage (a read replica) while cut off.
// The world's truth is kept apart from either strategy: every acknowledged
// claim is alive until an acknowledged delete. After every step the checker
// compares the truth with capacity and limits.
import {
  type Allocation,
  type Amounts,
  claimAtSite,
  claimOnPrimary,
  confirm,
  deleteAtSite,
  deleteOnPrimary,
  type JournalEntry,
  newSite,
  type PrimaryState,
  rebalance,
  refreshFromPrimary,
  replay,
  type SiteState,
  setSlice,
  sliceRemaining,
} from '../../src/ext/sites/model.js';
import { random } from '../helpers/random.js';

export const SITES = ['site-a', 'site-b', 'site-c'] as const;
export const PROJECTS = ['p-1', 'p-2'] as const;
const PARTITION_AFTER = 5;
const CAPACITY = 16;
const SLICE = 8;
const LIMIT = 48;
const LIMIT_SLICE = 10;
/** Each site's aggregate: two providers of its own; the primary's clients claim anywhere. */
export const providersOf = (site: string) => [`${site}-rp1`, `${site}-rp2`];
const PRIMARY_PROVIDERS = ['core-rp1', 'core-rp2'];
const ALL_PROVIDERS = [...SITES.flatMap(providersOf), ...PRIMARY_PROVIDERS];

export type Step =
  | { kind: 'tick'; by: number }
  | { kind: 'cut' | 'restore'; site: string }
  | { kind: 'claim'; at: string | null; project: string; provider: string; amount: number }
  | { kind: 'delete'; at: string | null; pick: number }
  | { kind: 'crash_mid_replay'; site: string; after: number }
  | { kind: 'duplicate_replay'; site: string }
  | { kind: 'rebalance'; site: string }
  | { kind: 'primary_shrinks'; site: string };

export function scenario(seed: number, steps: number): Step[] {
  const r = random(seed);
  const out: Step[] = [];
  for (let i = 0; i < steps; i++) {
    const roll = r.next();
    const site = r.pick(SITES);
    if (roll < 0.1) out.push({ kind: 'tick', by: r.int(1, 4) });
    else if (roll < 0.16) out.push({ kind: 'cut', site });
    else if (roll < 0.21) out.push({ kind: 'restore', site });
    else if (roll < 0.24) out.push({ kind: 'crash_mid_replay', site, after: r.int(0, 4) });
    else if (roll < 0.27) out.push({ kind: 'duplicate_replay', site });
    else if (roll < 0.31) out.push({ kind: 'rebalance', site });
    else if (roll < 0.33) out.push({ kind: 'primary_shrinks', site });
    else if (roll < 0.43) out.push({ kind: 'delete', at: r.chance(0.7) ? site : null, pick: r.below(1000) });
    else {
      const atSite = r.chance(0.75);
      out.push({
        kind: 'claim',
        at: atSite ? site : null,
        project: r.pick(PROJECTS),
        provider: atSite ? r.pick(providersOf(site)) : r.pick(ALL_PROVIDERS),
        amount: r.int(1, 4),
      });
    }
  }
  return out;
}

export interface Outcome {
  /** Steps after which some provider's live usage was over its capacity. */
  capacityViolations: number;
  /** Steps after which some project's live usage, summed over every site, was over its limit. */
  limitViolations: number;
  /** The worst overshoot of a project's limit, in units. */
  worstLimitOvershoot: number;
  /** Replayed entries the primary refused. */
  conflicts: number;
  /** Claims granted by a cut-off site. */
  grantedCutOff: number;
  /** Claims a cut-off site refused as beyond its slice. */
  sliceExhausted: number;
  /** Acknowledged claims alive in the truth but missing on the primary after the final heal. */
  lost: number;
  /** Whether a replay applied twice left the primary exactly as once. */
  duplicateReplaysIdempotent: boolean;
  /** Slices changed by a connected site's rebalance. */
  rebalanced: number;
}

interface Truth {
  live: Map<string, { project: string; provider: string; amount: number; owner: string | null }>;
}

/** What a strategy does; the truth and the checks are the harness's. */
interface Strategy {
  /** A claim at a site (or at the primary: at null); true when acknowledged. */
  claim(at: string | null, consumer: string, project: string, provider: string, amount: number, now: number): boolean;
  /** A delete of a live consumer, asked at a site (or at the primary); true when acknowledged. */
  delete(at: string | null, consumer: string, now: number): boolean;
  /** Called on every tick, every cut and restore: the link's state changed or time went on. */
  link(site: string, up: boolean, now: number): void;
  crashMidReplay(site: string, after: number): void;
  duplicateReplay(site: string): void;
  /** A connected site asks for more or gives some back (escrow's demarcation; Kingbird has none). */
  rebalance(site: string): void;
  /** The operator shrinks a site's slice on the primary, whether or not the site can be reached. */
  primaryShrinks(site: string): void;
  /** What the primary records, after every site healed. */
  primaryConsumers(): Set<string>;
  counters: { conflicts: number; grantedCutOff: number; sliceExhausted: number; duplicatesIdempotent: boolean; rebalanced: number };
}

const one = (provider: string, amount: number): Amounts => new Map([[provider, amount]]);

function freshPrimary(): PrimaryState {
  const p: PrimaryState = {
    capacity: new Map(ALL_PROVIDERS.map((rp) => [rp, CAPACITY])),
    limits: new Map(PROJECTS.map((pr) => [pr, LIMIT])),
    slices: new Map(),
    allocations: new Map(),
    replayed: new Map(),
  };
  return p;
}

const serialized = (p: PrimaryState) =>
  JSON.stringify({
    allocations: [...p.allocations.entries()].map(([c, a]) => [c, a.project, a.site, [...a.amounts]]).sort(),
    replayed: [...p.replayed.entries()].sort(),
  });

class Escrow implements Strategy {
  constructor(readonly unsafeShrinkWhileCut = false) {
    this.setUp();
  }

  readonly primary = freshPrimary();
  readonly sites = new Map<string, SiteState>();
  readonly up = new Map<string, boolean>();
  readonly lastContact = new Map<string, number>();
  /** Every entry ever journaled per site (what a retried request could carry again). */
  readonly everJournaled = new Map<string, JournalEntry[]>();
  counters = { conflicts: 0, grantedCutOff: 0, sliceExhausted: 0, duplicatesIdempotent: true, rebalanced: 0 };
  private keys = 0;

  private setUp(): void {
    for (const site of SITES) {
      const refusal = setSlice(this.primary, site, {
        capacity: new Map(providersOf(site).map((rp) => [rp, SLICE])),
        limits: new Map(PROJECTS.map((pr) => [pr, LIMIT_SLICE])),
      });
      if (refusal) throw new Error(`slice refused: ${JSON.stringify(refusal)}`);
      this.sites.set(site, newSite(site, this.primary.slices.get(site)!));
      this.up.set(site, true);
      this.lastContact.set(site, 0);
      this.everJournaled.set(site, []);
    }
  }

  private partitioned(site: string, now: number): boolean {
    return !this.up.get(site) && now - this.lastContact.get(site)! >= PARTITION_AFTER;
  }

  /** Healing: the journal replays in order, then the site takes the primary's view. */
  private heal(site: string): void {
    const s = this.sites.get(site)!;
    if (s.journal.length > 0) {
      const result = replay(this.primary, site, s.journal);
      this.counters.conflicts += result.conflicts.length;
      confirm(s, this.primary.replayed.get(site) ?? 0);
    }
    refreshFromPrimary(s, this.primary);
  }

  link(site: string, up: boolean, now: number): void {
    this.up.set(site, up);
    if (up) {
      this.lastContact.set(site, now);
      this.heal(site);
    }
  }

  claim(at: string | null, consumer: string, project: string, provider: string, amount: number, now: number): boolean {
    if (at === null || this.up.get(at)) {
      return claimOnPrimary(this.primary, { consumer, project, amounts: one(provider, amount), site: null }) === null;
    }
    if (!this.partitioned(at, now)) return false; // 503: the primary is late, not yet declared gone
    const s = this.sites.get(at)!;
    const refusal = claimAtSite(s, { consumer, project, amounts: one(provider, amount) }, `k${this.keys++}`, (pr) =>
      this.primary.limits.has(pr),
    );
    if (refusal === null) {
      this.everJournaled.get(at)!.push(s.journal.at(-1)!);
      this.counters.grantedCutOff++;
      return true;
    }
    if (refusal.kind === 'slice_exhausted' || refusal.kind === 'slice_limit_exhausted') this.counters.sliceExhausted++;
    return false;
  }

  delete(at: string | null, consumer: string, now: number): boolean {
    if (at === null || this.up.get(at)) {
      deleteOnPrimary(this.primary, consumer);
      // A connected site hears of it at once; its view of what is drawn follows the primary.
      for (const [site, s] of this.sites) if (this.up.get(site)) s.drawn.delete(consumer);
      return true;
    }
    if (!this.partitioned(at, now)) return false;
    const s = this.sites.get(at)!;
    if (!deleteAtSite(s, consumer, `k${this.keys++}`)) return false; // 503: not its own to decide
    this.everJournaled.get(at)!.push(s.journal.at(-1)!);
    return true;
  }

  crashMidReplay(site: string, after: number): void {
    if (!this.up.get(site)) return;
    const s = this.sites.get(site)!;
    // The primary applies a prefix; the site dies before it hears back. Its journal is on disk.
    replay(this.primary, site, s.journal.slice(0, after));
  }

  duplicateReplay(site: string): void {
    if (!this.up.get(site)) return;
    const before = serialized(this.primary);
    const result = replay(this.primary, site, this.everJournaled.get(site)!);
    if (result.applied > 0 || serialized(this.primary) !== before) this.counters.duplicatesIdempotent = false;
  }

  rebalance(site: string): void {
    if (!this.up.get(site)) return; // a cut-off site cannot ask
    const refusal = rebalance(this.primary, this.sites.get(site)!, WATERMARKS);
    if (refusal === null) this.counters.rebalanced++;
  }

  /**
   * The operator shrinks a slice on the primary. Safe only where the site hears of it: while the
   * site is cut off the primary keeps the slice (what a PUT does then: see docs/sites.md); the
   * unsafe variant, shrinking anyway, is what `unsafeShrinkWhileCut` turns on.
   */
  primaryShrinks(site: string): void {
    if (!this.up.get(site) && !this.unsafeShrinkWhileCut) return;
    const slice = this.primary.slices.get(site)!;
    const capacity = new Map([...slice.capacity].map(([k, v]) => [k, Math.max(0, v - 4)] as const));
    if (setSlice(this.primary, site, { capacity, limits: slice.limits }) === null && this.up.get(site)) {
      refreshFromPrimary(this.sites.get(site)!, this.primary);
    }
  }

  primaryConsumers(): Set<string> {
    for (const site of SITES) this.link(site, true, Number.POSITIVE_INFINITY);
    return new Set(this.primary.allocations.keys());
  }

  remaining(site: string) {
    return sliceRemaining(this.sites.get(site)!);
  }
}

/**
 * The Kingbird/StarlingX double. Each site keeps its own copy of the global usage, refreshed at
 * every sync while connected, and its region limit per project computed then; cut off, it grants
 * what fits its copy. What a cut-off site granted is running: at healing it is pushed to the
 * primary as usage, not asked for.
 */
/** The world a Kingbird double decides in: its sites, projects, every provider's capacity, every project's limit. */
export interface KingbirdWorld {
  sites: readonly string[];
  projects: readonly string[];
  capacity: number;
  limit: number;
  /** How long without the primary before a site decides alone. */
  partitionAfter: number;
}

const SIM_WORLD: KingbirdWorld = { sites: SITES, projects: PROJECTS, capacity: CAPACITY, limit: LIMIT, partitionAfter: PARTITION_AFTER };

export class Kingbird implements Strategy {
  readonly primary = new Map<string, Allocation>();
  readonly up = new Map<string, boolean>();
  readonly lastContact = new Map<string, number>();
  /** Per site: the global usage by provider and the region limits, as of its last sync. */
  readonly synced = new Map<string, { usage: Map<string, number>; regionLimit: Map<string, number> }>();
  /** Per site: what it granted while cut off, not yet pushed. */
  readonly local = new Map<string, Map<string, Allocation>>();
  counters = { conflicts: 0, grantedCutOff: 0, sliceExhausted: 0, duplicatesIdempotent: true, rebalanced: 0 };

  constructor(readonly world: KingbirdWorld = SIM_WORLD) {
    for (const site of world.sites) {
      this.up.set(site, true);
      this.lastContact.set(site, 0);
      this.local.set(site, new Map());
      this.sync(site);
    }
  }

  private usage(filter: (a: Allocation) => boolean): number {
    let total = 0;
    for (const a of this.primary.values()) if (filter(a)) for (const v of a.amounts.values()) total += v;
    return total;
  }

  /** dcorch's formula: region limit = global limit - usage everywhere + usage in that region. */
  private sync(site: string): void {
    const usage = new Map<string, number>();
    for (const a of this.primary.values()) for (const [k, v] of a.amounts) usage.set(k, (usage.get(k) ?? 0) + v);
    const regionLimit = new Map(
      this.world.projects.map((pr) => [
        pr,
        this.world.limit - this.usage((a) => a.project === pr) + this.usage((a) => a.project === pr && a.site === site),
      ]),
    );
    this.synced.set(site, { usage, regionLimit });
  }

  link(site: string, up: boolean, now: number): void {
    this.up.set(site, up);
    if (!up) return;
    this.lastContact.set(site, now);
    for (const a of this.local.get(site)!.values()) this.primary.set(a.consumer, a);
    this.local.get(site)!.clear();
    this.sync(site);
  }

  claim(at: string | null, consumer: string, project: string, provider: string, amount: number, now: number): boolean {
    if (at === null || this.up.get(at)) {
      const onProvider = this.usage((a) => a.amounts.has(provider));
      const ofProject = this.usage((a) => a.project === project);
      if (onProvider + amount > this.world.capacity || ofProject + amount > this.world.limit) return false;
      this.primary.set(consumer, { consumer, project, amounts: one(provider, amount), site: at });
      if (at !== null) this.sync(at);
      return true;
    }
    if (now - this.lastContact.get(at)! < this.world.partitionAfter) return false;
    const { usage, regionLimit } = this.synced.get(at)!;
    const local = [...this.local.get(at)!.values()];
    const localOn = local.filter((a) => a.amounts.has(provider)).reduce((n, a) => n + a.amounts.get(provider)!, 0);
    const regionUse =
      this.usage((a) => a.project === project && a.site === at) +
      local.filter((a) => a.project === project).reduce((n, a) => n + [...a.amounts.values()].reduce((x, y) => x + y, 0), 0);
    if (
      (usage.get(provider) ?? 0) + localOn + amount > this.world.capacity ||
      regionUse + amount > (regionLimit.get(project) ?? this.world.limit)
    ) {
      this.counters.sliceExhausted++;
      return false;
    }
    this.local.get(at)!.set(consumer, { consumer, project, amounts: one(provider, amount), site: at });
    this.counters.grantedCutOff++;
    return true;
  }

  delete(at: string | null, consumer: string, _now: number): boolean {
    if (at === null || this.up.get(at)) {
      this.primary.delete(consumer);
      return true;
    }
    return this.local.get(at)!.delete(consumer);
  }

  crashMidReplay(): void {}
  duplicateReplay(): void {}
  rebalance(): void {}
  primaryShrinks(): void {}

  primaryConsumers(): Set<string> {
    for (const site of this.world.sites) if (!this.up.get(site)) this.link(site, true, Number.POSITIVE_INFINITY);
    return new Set(this.primary.keys());
  }
}

export type StrategyName = 'escrow' | 'escrow-unsafe-shrink' | 'kingbird';
const WATERMARKS = { low: 0.25, high: 0.75, step: 2 };

/** Plays one scenario under one strategy, checking the truth after every step. */
export function play(steps: readonly Step[], strategyName: StrategyName): Outcome {
  const strategy: Strategy = strategyName === 'kingbird' ? new Kingbird() : new Escrow(strategyName === 'escrow-unsafe-shrink');
  const truth: Truth = { live: new Map() };
  let now = 0;
  let next = 0;
  const outcome: Outcome = {
    capacityViolations: 0,
    limitViolations: 0,
    worstLimitOvershoot: 0,
    conflicts: 0,
    grantedCutOff: 0,
    sliceExhausted: 0,
    lost: 0,
    duplicateReplaysIdempotent: true,
    rebalanced: 0,
  };
  const cut = new Set<string>();
  for (const step of steps) {
    switch (step.kind) {
      case 'tick':
        now += step.by;
        for (const site of SITES) if (!cut.has(site)) strategy.link(site, true, now);
        break;
      case 'cut':
        cut.add(step.site);
        strategy.link(step.site, false, now);
        break;
      case 'restore':
        cut.delete(step.site);
        strategy.link(step.site, true, now);
        break;
      case 'claim': {
        const consumer = `c${next++}`;
        if (strategy.claim(step.at, consumer, step.project, step.provider, step.amount, now)) {
          truth.live.set(consumer, { project: step.project, provider: step.provider, amount: step.amount, owner: step.at });
        }
        break;
      }
      case 'delete': {
        const candidates = [...truth.live.entries()].filter(([, v]) => step.at === null || v.owner === step.at);
        if (candidates.length === 0) break;
        const [consumer] = candidates[step.pick % candidates.length]!;
        if (strategy.delete(step.at, consumer, now)) truth.live.delete(consumer);
        break;
      }
      case 'crash_mid_replay':
        strategy.crashMidReplay(step.site, step.after);
        break;
      case 'duplicate_replay':
        strategy.duplicateReplay(step.site);
        break;
      case 'rebalance':
        strategy.rebalance(step.site);
        break;
      case 'primary_shrinks':
        strategy.primaryShrinks(step.site);
        break;
    }
    const byProvider = new Map<string, number>();
    const byProject = new Map<string, number>();
    for (const v of truth.live.values()) {
      byProvider.set(v.provider, (byProvider.get(v.provider) ?? 0) + v.amount);
      byProject.set(v.project, (byProject.get(v.project) ?? 0) + v.amount);
    }
    if ([...byProvider.values()].some((u) => u > CAPACITY)) outcome.capacityViolations++;
    const over = Math.max(0, ...[...byProject.values()].map((u) => u - LIMIT));
    if (over > 0) outcome.limitViolations++;
    outcome.worstLimitOvershoot = Math.max(outcome.worstLimitOvershoot, over);
  }
  const recorded = strategy.primaryConsumers();
  for (const consumer of truth.live.keys()) if (!recorded.has(consumer)) outcome.lost++;
  outcome.conflicts = strategy.counters.conflicts;
  outcome.grantedCutOff = strategy.counters.grantedCutOff;
  outcome.sliceExhausted = strategy.counters.sliceExhausted;
  outcome.duplicateReplaysIdempotent = strategy.counters.duplicatesIdempotent;
  outcome.rebalanced = strategy.counters.rebalanced;
  return outcome;
}

export { Escrow as EscrowSimulation };
