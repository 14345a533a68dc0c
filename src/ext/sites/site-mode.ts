// Site mode (docs/sites.md): an instance started with PLACEMENT_SITE serves
// one site. Connected, it is an ordinary instance on the primary, and it
// keeps a copy of its slice (the hold owned by `site:<site>`, the inventories'
// unit constraints there, the consumers drawn from it) in its local file.
// When the primary has not answered for PLACEMENT_SITE_PARTITION_AFTER_MS it
// is partitioned: claims on its providers are decided here, within what is
// left of the slice, by placement's own claim rules (rules.ts), and written
// with a journal entry in one local write batch before they are acknowledged.
// When the primary answers again the journal is replayed in order, each entry
// drawn from the slice's hold in one write batch on the primary with the row
// that marks it applied (ext_site_replays), so a replay twice is a replay once
// and one cut short by a crash resumes; then the site is connected again.
// Connected, it rebalances its slice by watermarks (demarcation). No HTTP here.
import type { SetAsideConstraint } from '../../placement/capacity.js';
import type { DataStore, Mutex as MutexType } from '../../db/client.js';
import { Mutex } from '../../db/client.js';
import type { Logger } from '../../deps.js';
import { DomainError } from '../../errors.js';
import type { ConsumerClaim } from '../../placement/repo/allocations.js';
import { INCOMPLETE_CONSUMER_PROJECT_ID, INCOMPLETE_CONSUMER_USER_ID } from '../../placement/repo/consumers.js';
import { claimAllocations } from '../../placement/writes/claims.js';
import type { WriteDeps } from '../../placement/writes/kernel.js';
import { type ClaimEndpoint, ClaimRefused, ConsumerGenerationMismatch } from '../../placement/writes/refusals.js';
import { brokenRule, CLAIM_RULES } from '../../placement/writes/rules.js';
import { type Key, keyOf } from '../holds/model.js';
import { type HoldDeps, ownedHold, putOwnedHold } from '../holds/service.js';
import {
  type JournalEntry,
  type LocalSiteFile,
  type LocalSnapshot,
  type SiteConsumer,
  type SliceEntry,
  usedBy,
  usedByProject,
} from './local.js';
import { appliedSince, readSiteView, replayApplied, replayRecord } from './repo.js';
import { siteOwner } from './service.js';
import type { SiteSettings } from './settings.js';

export const SLICE_EXHAUSTED = 'placement.ext.slice_exhausted';
export const SITE_PARTITIONED = 'placement.ext.site_partitioned';

/** What a cut-off site cannot decide alone: answered 503, naming the partition. */
export class SiteCutOff extends Error {
  readonly code = SITE_PARTITIONED;
  constructor(message: string) {
    super(message);
    this.name = 'SiteCutOff';
  }
}

export type SiteLink = 'connected' | 'partitioned';

/** What GET /ext/site, /metrics and /readyz say of the site. */
export interface SiteStatus {
  site: string;
  link: SiteLink;
  since: string;
  primaryLastAnswered: string | null;
  slice: Record<string, { resources: Record<string, number> }>;
  sliceRemaining: Record<string, { resources: Record<string, number> }>;
  /** Per project and class: the site's limit slices, and what is left of them as the site knows it. */
  limitSlices: Record<string, Record<string, number>>;
  limitSlicesRemaining: Record<string, Record<string, number>>;
  journalDepth: number;
  lastReplayedSeq: number;
  replayConflicts: number;
  refreshedAt: string | null;
}

/** Where the site's figures go as they change (/metrics). */
export interface SiteGauges {
  changed(status: SiteStatus): void;
}

const iso = (ms: number) => new Date(ms).toISOString();

function byProvider(
  values: Iterable<[Key, number]>,
  entries: readonly SliceEntry[],
): Record<string, { resources: Record<string, number> }> {
  const out: Record<string, { resources: Record<string, number> }> = {};
  const amounts = new Map(values);
  for (const e of entries)
    (out[e.provider] ??= { resources: {} }).resources[e.resourceClass] = amounts.get(keyOf(e.provider, e.resourceClass)) ?? 0;
  return out;
}

/** At most this many journal entries are replayed in one claim on the primary. */
const REPLAY_GROUP = 64;

/**
 * The pending entries in order, in groups that can be replayed as one claim: runs of entries not
 * yet applied whose consumers are all distinct (a consumer met again starts a new group, so each
 * consumer's entries stay in order), and the applied ones (to be marked) apart.
 */
function replayGroups(
  notApplied: readonly JournalEntry[],
  applied: ReadonlySet<number>,
  pending: readonly JournalEntry[],
): { applied: boolean; entries: JournalEntry[] }[] {
  const groups: { applied: boolean; entries: JournalEntry[] }[] = [];
  const duplicates = pending.filter((e) => applied.has(e.seq));
  if (duplicates.length > 0) groups.push({ applied: true, entries: duplicates });
  let current: JournalEntry[] = [];
  let consumers = new Set<string>();
  for (const entry of notApplied) {
    const uuids = entry.claims.map((c) => c.uuid);
    if (current.length >= REPLAY_GROUP || uuids.some((u) => consumers.has(u))) {
      groups.push({ applied: false, entries: current });
      current = [];
      consumers = new Set();
    }
    current.push(entry);
    for (const u of uuids) consumers.add(u);
  }
  if (current.length > 0) groups.push({ applied: false, entries: current });
  return groups;
}

/** The consumers `claims` leave with allocations, as the site records them (owner kept where a claim names none). */
function consumersAfter(claims: readonly ConsumerClaim[], known: ReadonlyMap<string, SiteConsumer>): SiteConsumer[] {
  return claims
    .filter((c) => Object.keys(c.allocations).length > 0)
    .map((c) => {
      const existing = known.get(c.uuid);
      return {
        uuid: c.uuid,
        project: c.projectId ?? existing?.project ?? INCOMPLETE_CONSUMER_PROJECT_ID,
        user: c.userId ?? existing?.user ?? INCOMPLETE_CONSUMER_USER_ID,
        consumerType: c.consumerType ?? existing?.consumerType ?? null,
        generation: (existing?.generation ?? 0) + 1,
        allocations: c.allocations,
      };
    });
}

/** `after` holding at least what `before` held, per provider and class (a write whose outcome is unknown). */
function atLeastAsBefore(after: SiteConsumer, before: SiteConsumer | undefined): SiteConsumer {
  if (!before) return after;
  const allocations: SiteConsumer['allocations'] = {};
  for (const side of [before.allocations, after.allocations])
    for (const [provider, resources] of Object.entries(side))
      for (const [rc, n] of Object.entries(resources)) {
        const mine = (allocations[provider] ??= {});
        mine[rc] = Math.max(mine[rc] ?? 0, n);
      }
  return { ...after, allocations };
}

export interface SiteModeOptions {
  settings: SiteSettings;
  primary: DataStore;
  /** What the site's hold on the primary sets aside (the holds extension's declaration): its rebalancing is admitted by it. */
  held: SetAsideConstraint;
  local: LocalSiteFile;
  log: Logger;
  nowMs?: () => number;
  newId?: () => string;
  gauges?: SiteGauges;
}

export class SiteMode {
  readonly site: string;
  private link: SiteLink = 'connected';
  private sinceMs: number;
  private lastAnswerMs: number | null = null;
  private startedMs: number;
  private probing = false;
  private timer: ReturnType<typeof setInterval> | undefined;
  /** Local decisions, replays and the switch back to connected, one at a time. */
  private readonly turns: MutexType = new Mutex();
  private writeDeps: WriteDeps | undefined;
  private depth = 0;
  private lastReplayed = 0;
  private conflicts = 0;
  private readonly now: () => number;
  private readonly newId: () => string;
  /** Called whenever the link changes (readiness). */
  onLinkChange?: (link: SiteLink, status: SiteStatus) => void;

  constructor(private readonly options: SiteModeOptions) {
    this.site = options.settings.site;
    this.now = options.nowMs ?? Date.now;
    this.newId = options.newId ?? (() => crypto.randomUUID());
    this.startedMs = this.now();
    this.sinceMs = this.startedMs;
  }

  get owner(): string {
    return siteOwner(this.site);
  }

  get partitioned(): boolean {
    return this.link === 'partitioned';
  }

  /** Starts probing the primary; `deps` writes the replays (the app's write hooks: the same guards as any claim). */
  async start(deps: WriteDeps): Promise<void> {
    this.writeDeps = deps;
    this.depth = await this.options.local.depth();
    this.lastReplayed = (await this.options.local.snapshot()).lastReplayed;
    // A journal left to replay (a crash while cut off, or mid-replay): still partitioned until it is,
    // so a claim or delete now is journaled after it, never sent to the primary ahead of it.
    if (this.depth > 0) {
      this.link = 'partitioned';
      await this.report(true);
    }
    this.timer = setInterval(() => void this.tick(), this.options.settings.probeMs);
    this.timer.unref?.();
    await this.tick();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One probe of the primary: its answer heals, refreshes and rebalances; its silence, long enough, partitions. */
  async tick(): Promise<void> {
    this.judge();
    if (this.probing) return;
    this.probing = true;
    try {
      await this.options.primary.readBatch([{ sql: 'SELECT 1', args: [] }]);
      this.lastAnswerMs = this.now();
      // The file's own count: entries left by a crash mid-replay (or made pending again) are replayed too.
      this.depth = await this.options.local.depth();
      if (this.partitioned || this.depth > 0) await this.heal();
      else {
        await this.refresh();
        await this.rebalance();
      }
    } catch (err) {
      this.judge();
      if (!(err instanceof DomainError)) return;
      this.options.log.warn('site: a refresh or rebalance was refused', { site: this.site, err: err.message });
    } finally {
      this.probing = false;
      await this.report();
    }
  }

  /** Partitioned once the primary has been silent for PLACEMENT_SITE_PARTITION_AFTER_MS. */
  private judge(): void {
    if (this.link !== 'connected') return;
    const silentSince = this.lastAnswerMs ?? this.startedMs;
    if (this.now() - silentSince < this.options.settings.partitionAfterMs) return;
    this.link = 'partitioned';
    this.sinceMs = this.now();
    this.options.log.warn('site: the primary does not answer: partitioned, claiming within the slice', {
      site: this.site,
      silent_ms: this.now() - silentSince,
    });
    void this.report(true);
  }

  /** Replays the journal, then (nothing left, under the turns so no local claim slips in between) back to connected. */
  private async heal(): Promise<void> {
    const { primary, local } = this.options;
    for (;;) {
      const pending = await local.pending();
      const hold = (await local.snapshot()).holdUuid;
      // What the primary has applied already (a crash after its commit, before the local mark): one read.
      const applied = pending.length > 0 ? await appliedSince(primary, this.site, pending[0]!.seq) : new Set<number>();
      // Marked done in groups: an entry applied but not yet marked is found applied next time (idempotent).
      const marks: { seq: number; outcome: string }[] = [];
      const flush = async () => {
        if (marks.length === 0) return;
        const batch = marks.splice(0);
        await local.replayed(batch, this.now());
        this.lastReplayed = Math.max(this.lastReplayed, ...batch.map((m) => m.seq));
        this.depth = Math.max(0, this.depth - batch.length);
      };
      try {
        for (const group of replayGroups(
          pending.filter((e) => !applied.has(e.seq)),
          applied,
          pending,
        )) {
          if (group.applied) marks.push(...group.entries.map((e) => ({ seq: e.seq, outcome: 'duplicate' })));
          else {
            const together = await this.turns.run(() => this.replayTogether(group.entries, hold));
            if (together) marks.push(...together);
            else
              for (const entry of group.entries)
                marks.push({ seq: entry.seq, outcome: await this.turns.run(() => this.replayOne(entry, hold, false)) });
          }
          if (marks.length >= 64) await flush();
        }
      } finally {
        await flush();
      }
      const done = await this.turns.run(async () => {
        this.depth = await local.depth();
        if (this.depth > 0) return false;
        if (this.link === 'partitioned') {
          this.link = 'connected';
          this.sinceMs = this.now();
          this.options.log.info('site: the primary answers: journal replayed, connected', {
            site: this.site,
            last_replayed: this.lastReplayed,
          });
          await this.report(true);
        }
        return true;
      });
      if (done) break;
    }
    await this.refresh();
  }

  /**
   * Entries of distinct consumers in one claim on the primary (one read, one write batch), each with
   * its ext_site_replays row: all applied, or none. Null where the primary refused the group (one by
   * one then finds which entry, and words its refusal); a primary that does not answer throws.
   */
  private async replayTogether(
    entries: readonly JournalEntry[],
    holdUuid: string | null,
  ): Promise<{ seq: number; outcome: string }[] | null> {
    const deps = this.writeDeps;
    if (!deps) throw new Error('site mode not started');
    if (entries.length === 1 || holdUuid === null) return null;
    const nowMs = this.now();
    const params = new Map([['ext_hold', holdUuid]]);
    const claims = entries.flatMap((e) => e.claims.map((c) => ({ ...c, generation: undefined })));
    const alongside = [
      ...deps.writeHooks.claimParams.flatMap((p) => p.alongside(params, claims, nowMs)),
      ...entries.map((e) => replayRecord(this.site, e.seq, e.idemKey, iso(nowMs))),
    ];
    try {
      await claimAllocations(deps, claims, { requireGeneration: false, now: iso(nowMs), endpoint: 'allocations', alongside, params });
      return entries.map((e) => ({ seq: e.seq, outcome: 'applied' }));
    } catch (err) {
      if (err instanceof DomainError) return null;
      throw err;
    }
  }

  /** One journal entry on the primary, at most once (ext_site_replays' key): what became of it. */
  private async replayOne(entry: JournalEntry, holdUuid: string | null, knownApplied: boolean): Promise<string> {
    const deps = this.writeDeps;
    if (!deps) throw new Error('site mode not started');
    if (knownApplied) return 'duplicate';
    const nowMs = this.now();
    const params = new Map<string, string>(entry.kind === 'claim' && holdUuid ? [['ext_hold', holdUuid]] : []);
    const claims = entry.claims.map((c) => ({ ...c, generation: undefined }));
    const alongside = [
      ...(params.size > 0 ? deps.writeHooks.claimParams.flatMap((p) => p.alongside(params, claims, nowMs)) : []),
      replayRecord(this.site, entry.seq, entry.idemKey, iso(nowMs)),
    ];
    try {
      await claimAllocations(deps, claims, { requireGeneration: false, now: iso(nowMs), endpoint: 'allocations', alongside, params });
      return 'applied';
    } catch (err) {
      // A replay racing another replay of the same entry loses on ext_site_replays' key: applied once.
      if (await replayApplied(this.options.primary, this.site, entry.seq)) return 'duplicate';
      if (!(err instanceof DomainError)) throw err;
      this.conflicts += 1;
      this.options.log.error('site: the primary refused a journal entry', { site: this.site, seq: entry.seq, err: err.message });
      return `refused: ${err.message}`;
    }
  }

  /**
   * The primary's view of the slice into the local file (only with nothing left to replay), read and
   * written in one turn: a connected draw between the two would otherwise be forgotten.
   */
  private async refresh(): Promise<void> {
    await this.turns.run(async () => {
      if (this.partitioned || (await this.options.local.depth()) > 0) return;
      const view = await readSiteView(this.options.primary, this.options.held, this.owner, this.options.settings.limitsOn);
      await this.options.local.refresh(view, this.now());
    });
  }

  /**
   * A connected site's claim on its slice: on the primary, drawn from the site's hold (ext_hold), so
   * the slice tracks what the site uses and the watermarks mean something. False where it is not all
   * on the slice or the primary refuses it: the ordinary claim then decides, as on any instance. The
   * consumer is recorded in the local file at once, and also where the outcome is unknown (the
   * primary did not answer): a site that is cut off next counts it as drawn, never less than the truth.
   */
  drawConnected(claims: ConsumerClaim[], requireGeneration: boolean, endpoint: ClaimEndpoint): Promise<boolean> {
    const deps = this.writeDeps;
    if (!deps || this.partitioned) return Promise.resolve(false);
    return this.turns.run(async () => {
      if (this.partitioned) return false;
      const snap = await this.options.local.snapshot();
      const slice = new Set(snap.slice.map((e) => keyOf(e.provider, e.resourceClass)));
      const onSlice = claims.every((c) =>
        Object.entries(c.allocations).every(([provider, resources]) =>
          Object.keys(resources).every((rc) => slice.has(keyOf(provider, rc))),
        ),
      );
      if (snap.holdUuid === null || !onSlice || claims.every((c) => Object.keys(c.allocations).length === 0)) return false;
      const nowMs = this.now();
      const params = new Map([['ext_hold', snap.holdUuid]]);
      const alongside = deps.writeHooks.claimParams.flatMap((p) => p.alongside(params, claims, nowMs));
      const consumers = new Map(snap.consumers.map((c) => [c.uuid, c]));
      const after = consumersAfter(claims, consumers);
      try {
        await claimAllocations(deps, claims, { requireGeneration, now: iso(nowMs), endpoint, alongside, params });
      } catch (err) {
        if (err instanceof DomainError) return false;
        // Applied or not: counted as the larger of what it held and what it asked, per provider and class.
        await this.options.local.remember(after.map((c) => atLeastAsBefore(c, consumers.get(c.uuid))));
        throw err;
      }
      await this.options.local.remember(after);
      return true;
    });
  }

  /**
   * Demarcation: per (provider, class), below the low watermark of the slice
   * left it asks for `step` more, above the high one it gives `step` back (never
   * below what is drawn): one edit of its hold, admitted by the holds rule on the
   * primary like any, at the generation the site last read (another edit since: nothing).
   */
  private async rebalance(): Promise<void> {
    const { lowWatermark, highWatermark, rebalanceStep } = this.options.settings;
    if (rebalanceStep === 0) return;
    const asked = await this.turns.run(async () => {
      if (this.partitioned) return false;
      const snap = await this.options.local.snapshot();
      if (snap.holdUuid === null || snap.slice.length === 0) return false;
      const used = usedBy(snap.consumers);
      const target = new Map<Key, number>();
      let changed = false;
      for (const e of snap.slice) {
        const key = keyOf(e.provider, e.resourceClass);
        const drawn = used.get(key) ?? 0;
        const left = e.amount - drawn;
        let amount = e.amount;
        if (left < lowWatermark * e.amount) amount = e.amount + rebalanceStep;
        else if (left > highWatermark * e.amount) amount = Math.max(drawn, 1, e.amount - rebalanceStep);
        if (amount !== e.amount) changed = true;
        target.set(key, amount);
      }
      if (!changed) return false;
      const holdDeps: HoldDeps = { store: this.options.primary, declaration: this.options.held, nowMs: this.now, newId: this.newId };
      const current = await ownedHold(holdDeps, this.owner);
      if (!current || current.generation !== snap.holdGeneration) return false;
      // What shrinks is taken from the local slice first, what grows only once the primary has
      // admitted it: whatever becomes of the edit (refused, or no answer), the site never counts on
      // more than the primary holds for it.
      const smaller = snap.slice.map((e) => ({ ...e, amount: Math.min(e.amount, target.get(keyOf(e.provider, e.resourceClass))!) }));
      await this.options.local.setSlice(smaller);
      try {
        await putOwnedHold(holdDeps, this.owner, target);
      } catch (err) {
        if (!(err instanceof DomainError)) throw err;
        // More does not fit beside the others: the slice stays as it is.
        this.options.log.info('site: rebalancing refused', { site: this.site, err: err.message });
        return false;
      }
      return true;
    });
    if (asked) await this.refresh();
  }

  /**
   * Claims decided here while partitioned: within the slice left on every
   * (provider, class), by placement's claim rules with the slice as the
   * capacity; written with their journal entry in one local batch. Returns
   * false where the site is connected again (the primary decides).
   */
  claim(claims: ConsumerClaim[], requireGeneration: boolean): Promise<boolean> {
    return this.turns.run(async () => {
      if (!this.partitioned) return false;
      const snap = await this.options.local.snapshot();
      const consumers = new Map(snap.consumers.map((c) => [c.uuid, c]));
      const claimed = new Set(claims.map((c) => c.uuid));
      const used = usedBy(snap.consumers.filter((c) => !claimed.has(c.uuid)));
      const slice = new Map(snap.slice.map((e) => [keyOf(e.provider, e.resourceClass), e]));
      const providers = new Set(snap.slice.map((e) => e.provider));
      if (requireGeneration) {
        for (const claim of claims) {
          const existing = consumers.get(claim.uuid);
          if (existing && existing.generation !== claim.generation)
            throw new ConsumerGenerationMismatch(existing.generation, claim.generation ?? null, claim.uuid);
          if (!existing && claim.generation !== null && claim.generation !== undefined)
            throw new ConsumerGenerationMismatch(null, claim.generation, claim.uuid);
        }
      }
      const requested = new Map<Key, number>();
      for (const claim of claims) {
        for (const [provider, resources] of Object.entries(claim.allocations)) {
          if (!providers.has(provider)) throw this.cutOff(`resource provider ${provider} is outside the site's slice`);
          for (const [rc, amount] of Object.entries(resources)) {
            const key = keyOf(provider, rc);
            const entry = slice.get(key);
            const total = (requested.get(key) ?? 0) + amount;
            requested.set(key, total);
            const drawn = used.get(key) ?? 0;
            const broken = brokenRule(CLAIM_RULES, {
              amount,
              usage: drawn + total,
              inventory: {
                total: entry?.amount ?? 0,
                reserved: 0,
                allocationRatio: 1,
                minUnit: entry?.minUnit ?? 1,
                maxUnit: entry?.maxUnit ?? amount,
                stepSize: entry?.stepSize ?? 1,
              },
            });
            if (broken?.refusal === 'constraints')
              throw new ClaimRefused(
                `Unable to create allocation for '${rc}' on resource provider '${provider}'. The requested amount would violate inventory constraints.`,
                [claim.uuid],
              );
            if (broken)
              throw new DomainError(
                'conflict',
                `Site ${this.site} is cut off from the primary and its slice has ${Math.max(0, (entry?.amount ?? 0) - drawn - total + amount)} of ${entry?.amount ?? 0} '${rc}' left on resource provider '${provider}', not ${amount}`,
                SLICE_EXHAUSTED,
              );
          }
        }
      }
      const after = consumersAfter(claims, consumers);
      this.refuseBeyondLimitSlices(after, snap, claimed);
      const removed = claims.filter((c) => Object.keys(c.allocations).length === 0).map((c) => c.uuid);
      const journaled = claims.map((c) => ({
        ...c,
        projectId: after.find((a) => a.uuid === c.uuid)?.project ?? c.projectId,
        userId: after.find((a) => a.uuid === c.uuid)?.user ?? c.userId,
      }));
      await this.options.local.record('claim', journaled, after, removed, `${this.site}:${this.newId()}`, this.now());
      this.depth += 1;
      return true;
    });
  }

  /**
   * The limit slices' part of a cut-off claim: per project and class with a limit, what the site's
   * consumers of the project use (every consumer, whichever type: never less than the primary
   * counts) stays within the project's slice here; a limited pair with no slice here has none.
   */
  private refuseBeyondLimitSlices(after: readonly SiteConsumer[], snap: LocalSnapshot, claimed: ReadonlySet<string>): void {
    if (snap.limited.length === 0) return;
    const limited = (project: string, rc: string) =>
      snap.limited.some((e) => e.resourceClass === rc && (e.project === project || e.project === ''));
    const asked = usedByProject(after);
    const used = usedByProject(snap.consumers.filter((c) => !claimed.has(c.uuid)));
    for (const [k, amount] of asked) {
      const [project, rc] = k.split('\u0000') as [string, string];
      if (!limited(project, rc)) continue;
      const slice = snap.limitSlices.find((e) => e.project === project && e.resourceClass === rc)?.amount ?? 0;
      const drawn = used.get(k) ?? 0;
      if (drawn + amount > slice)
        throw new DomainError(
          'conflict',
          `Site ${this.site} is cut off from the primary and project '${project}''s limit slice here has ${Math.max(0, slice - drawn)} of ${slice} '${rc}' left, not ${amount}`,
          SLICE_EXHAUSTED,
        );
    }
  }

  /** DELETE /allocations/{c} while partitioned: a consumer of the slice only (others are the primary's). False: connected again. */
  remove(uuid: string): Promise<boolean> {
    return this.turns.run(async () => {
      if (!this.partitioned) return false;
      const snap = await this.options.local.snapshot();
      if (!snap.consumers.some((c) => c.uuid === uuid)) throw this.cutOff(`consumer ${uuid} is not drawn from the site's slice`);
      await this.options.local.record('delete', [{ uuid, allocations: {} }], [], [uuid], `${this.site}:${this.newId()}`, this.now());
      this.depth += 1;
      return true;
    });
  }

  /** A consumer of the slice as the site knows it (partitioned reads), or undefined. */
  async consumer(uuid: string): Promise<SiteConsumer | undefined> {
    return (await this.options.local.snapshot()).consumers.find((c) => c.uuid === uuid);
  }

  /** What a cut-off site answers for what only the primary decides. */
  cutOff(what: string): SiteCutOff {
    return new SiteCutOff(
      `Site ${this.site} is cut off from the primary since ${iso(this.sinceMs)} (partitioned): ${what}; only the primary can decide it. ` +
        "Claims and deletes of consumers within the site's slice are decided locally meanwhile.",
    );
  }

  async status(): Promise<SiteStatus> {
    const snap = await this.options.local.snapshot();
    const used = usedBy(snap.consumers);
    const amounts = snap.slice.map((e): [Key, number] => [keyOf(e.provider, e.resourceClass), e.amount]);
    const remaining = amounts.map(([k, a]): [Key, number] => [k, a - (used.get(k) ?? 0)]);
    const usedOfProjects = usedByProject(snap.consumers);
    const limitSlices: Record<string, Record<string, number>> = {};
    const limitSlicesRemaining: Record<string, Record<string, number>> = {};
    for (const e of snap.limitSlices) {
      (limitSlices[e.project] ??= {})[e.resourceClass] = e.amount;
      (limitSlicesRemaining[e.project] ??= {})[e.resourceClass] =
        e.amount - (usedOfProjects.get(`${e.project}\u0000${e.resourceClass}`) ?? 0);
    }
    return {
      site: this.site,
      link: this.link,
      since: iso(this.sinceMs),
      primaryLastAnswered: this.lastAnswerMs === null ? null : iso(this.lastAnswerMs),
      slice: byProvider(amounts, snap.slice),
      sliceRemaining: byProvider(remaining, snap.slice),
      limitSlices,
      limitSlicesRemaining,
      journalDepth: this.depth,
      lastReplayedSeq: this.lastReplayed,
      replayConflicts: this.conflicts,
      refreshedAt: snap.refreshedAt === null ? null : iso(snap.refreshedAt),
    };
  }

  private async report(linkChanged = false): Promise<void> {
    if (!this.options.gauges && !(linkChanged && this.onLinkChange)) return;
    const status = await this.status().catch(() => undefined);
    if (!status) return;
    this.options.gauges?.changed(status);
    if (linkChanged) this.onLinkChange?.(this.link, status);
  }
}
