// Edge sites (docs/sites.md): escrow of capacity and project limits, so a
// site cut off from the primary keeps placing within an exclusive slice
// given to it in advance, and the sum over every site never exceeds what
// the primary has. Pure: no SQL, no HTTP, no clock; test/ext/sites-*.test.ts
// run it over random partitions, crashes and duplicate replays.
//
// The primary's rule, per key (a provider and class):
//   ordinary allocations + for each site: max(its slice, what is drawn from it) <= capacity
// and per project:
//   its ordinary allocations + for each site: max(its limit slice, what the site drew for it) <= limit
// A slice is a hold owned by the site with no end: nothing but the site's
// own claims (drawn from it) may use it. A site spends locally only within
// its slice, so what it grants while cut off is already counted on the
// primary, as held, before the primary hears of it.

/** A (provider, class) pair as one key, as in holds. */
export type Key = string;
export type Amounts = ReadonlyMap<Key, number>;

export interface Slice {
  /** Capacity held for the site, by key. */
  capacity: Amounts;
  /** Per project: the part of its limit (in the same units, summed over keys) taken out for the site. */
  limits: ReadonlyMap<string, number>;
}

export interface Allocation {
  consumer: string;
  project: string;
  amounts: Amounts;
  /** The site whose slice it is drawn from, or null: an ordinary claim. */
  site: string | null;
}

/** One entry of a site's journal: written (durably) before the claim or delete is acknowledged. */
export type JournalEntry =
  | { seq: number; key: string; op: 'claim'; allocation: Allocation }
  | { seq: number; key: string; op: 'delete'; consumer: string };

export interface PrimaryState {
  capacity: Map<Key, number>;
  /** Project limits; a project absent has none. */
  limits: Map<string, number>;
  slices: Map<string, Slice>;
  allocations: Map<string, Allocation>;
  /** Per site, the last journal sequence applied: with it, a replay applies each entry once. */
  replayed: Map<string, number>;
}

export interface SiteState {
  site: string;
  slice: Slice;
  /** What the site knows is drawn from its slice: its own consumers (replayed or not). */
  drawn: Map<string, Allocation>;
  journal: JournalEntry[];
  nextSeq: number;
  /** The last sequence the primary has confirmed applied; entries up to it may be dropped. */
  confirmed: number;
}

export type Refusal =
  | { kind: 'capacity'; key: Key }
  | { kind: 'limit'; project: string }
  | { kind: 'slice_exhausted'; key: Key }
  | { kind: 'slice_limit_exhausted'; project: string }
  | { kind: 'exists'; consumer: string }
  | { kind: 'outside_slice'; key: Key };

const sumOf = (amounts: Amounts): number => [...amounts.values()].reduce((a, b) => a + b, 0);

function add(into: Map<Key, number>, amounts: Amounts, sign: 1 | -1): void {
  for (const [k, v] of amounts) into.set(k, (into.get(k) ?? 0) + sign * v);
}

/** Per key: what the primary counts as taken (ordinary allocations, and each site's slice or what is drawn from it if more). */
export function primaryLoad(p: PrimaryState): Map<Key, number> {
  const load = new Map<Key, number>();
  const drawnBySite = new Map<string, Map<Key, number>>();
  for (const a of p.allocations.values()) {
    if (a.site === null) add(load, a.amounts, 1);
    else {
      const drawn = drawnBySite.get(a.site) ?? new Map<Key, number>();
      add(drawn, a.amounts, 1);
      drawnBySite.set(a.site, drawn);
    }
  }
  for (const [site, slice] of p.slices) {
    const drawn = drawnBySite.get(site) ?? new Map<Key, number>();
    for (const k of new Set([...slice.capacity.keys(), ...drawn.keys()])) {
      load.set(k, (load.get(k) ?? 0) + Math.max(slice.capacity.get(k) ?? 0, drawn.get(k) ?? 0));
    }
  }
  return load;
}

/** Per project: what the primary counts against its limit (ordinary use, and each site's limit slice or what it drew, if more). */
export function primaryProjectLoad(p: PrimaryState, project: string): number {
  let ordinary = 0;
  const drawnBySite = new Map<string, number>();
  for (const a of p.allocations.values()) {
    if (a.project !== project) continue;
    if (a.site === null) ordinary += sumOf(a.amounts);
    else drawnBySite.set(a.site, (drawnBySite.get(a.site) ?? 0) + sumOf(a.amounts));
  }
  let held = 0;
  for (const [site, slice] of p.slices) {
    held += Math.max(slice.limits.get(project) ?? 0, drawnBySite.get(site) ?? 0);
  }
  for (const [site, drawn] of drawnBySite) if (!p.slices.has(site)) held += drawn;
  return ordinary + held;
}

/** Whether the primary's rule holds now, for every key and every limited project. */
export function primaryWithinBounds(p: PrimaryState): boolean {
  for (const [k, load] of primaryLoad(p)) if (load > (p.capacity.get(k) ?? 0)) return false;
  for (const [project, limit] of p.limits) if (primaryProjectLoad(p, project) > limit) return false;
  return true;
}

/**
 * Refused only where the write raises a load over its bound (as placement's own rule: a load
 * already over, after a slice was set, does not block writes that do not raise it).
 */
function refusalOfChange(before: PrimaryState, after: PrimaryState, touched: Allocation): Refusal | null {
  const loadBefore = primaryLoad(before);
  const loadAfter = primaryLoad(after);
  for (const k of touched.amounts.keys()) {
    const now = loadAfter.get(k) ?? 0;
    if (now > (after.capacity.get(k) ?? 0) && now > (loadBefore.get(k) ?? 0)) return { kind: 'capacity', key: k };
  }
  const limit = after.limits.get(touched.project);
  if (limit !== undefined) {
    const now = primaryProjectLoad(after, touched.project);
    if (now > limit && now > primaryProjectLoad(before, touched.project)) return { kind: 'limit', project: touched.project };
  }
  return null;
}

const cloneSlices = (slices: ReadonlyMap<string, Slice>) => new Map(slices);

export function clonePrimary(p: PrimaryState): PrimaryState {
  return {
    capacity: new Map(p.capacity),
    limits: new Map(p.limits),
    slices: cloneSlices(p.slices),
    allocations: new Map(p.allocations),
    replayed: new Map(p.replayed),
  };
}

/** A claim on the primary (an ordinary one, or a connected site's claim drawn from its slice). Mutates `p` when granted. */
export function claimOnPrimary(p: PrimaryState, allocation: Allocation): Refusal | null {
  if (p.allocations.has(allocation.consumer)) return { kind: 'exists', consumer: allocation.consumer };
  const after = clonePrimary(p);
  after.allocations.set(allocation.consumer, allocation);
  const refusal = refusalOfChange(p, after, allocation);
  if (refusal) return refusal;
  p.allocations.set(allocation.consumer, allocation);
  return null;
}

export function deleteOnPrimary(p: PrimaryState, consumer: string): void {
  p.allocations.delete(consumer);
}

/** Sets (or replaces) a site's slice on the primary: refused where it would raise a load over its bound. */
export function setSlice(p: PrimaryState, site: string, slice: Slice): Refusal | null {
  const after = clonePrimary(p);
  after.slices.set(site, slice);
  const loadBefore = primaryLoad(p);
  const loadAfter = primaryLoad(after);
  for (const [k, load] of loadAfter) {
    if (load > (after.capacity.get(k) ?? 0) && load > (loadBefore.get(k) ?? 0)) return { kind: 'capacity', key: k };
  }
  for (const [project, limit] of after.limits) {
    const load = primaryProjectLoad(after, project);
    if (load > limit && load > primaryProjectLoad(p, project)) return { kind: 'limit', project };
  }
  p.slices.set(site, slice);
  return null;
}

// ---- the site, cut off ----

export function newSite(site: string, slice: Slice, drawn: Iterable<Allocation> = []): SiteState {
  return { site, slice, drawn: new Map([...drawn].map((a) => [a.consumer, a])), journal: [], nextSeq: 1, confirmed: 0 };
}

/** What is left of the site's slice, by key and by project, as the site knows it. */
export function sliceRemaining(s: SiteState): { capacity: Map<Key, number>; limits: Map<string, number> } {
  const capacity = new Map(s.slice.capacity);
  const limits = new Map(s.slice.limits);
  for (const a of s.drawn.values()) {
    add(capacity, a.amounts, -1);
    if (limits.has(a.project)) limits.set(a.project, limits.get(a.project)! - sumOf(a.amounts));
  }
  return { capacity, limits };
}

/**
 * A claim decided by a cut-off site alone: within what is left of its slice on every key, and,
 * where the project has a limit slice at this site, within it. A project the primary limits but
 * that has no limit slice here cannot be decided alone (`projectLimited` says which are limited).
 * Granted: journaled (the caller writes the journal durably before answering) and drawn.
 */
export function claimAtSite(
  s: SiteState,
  allocation: Omit<Allocation, 'site'>,
  idempotencyKey: string,
  projectLimited: (project: string) => boolean,
): Refusal | null {
  if (s.drawn.has(allocation.consumer)) return { kind: 'exists', consumer: allocation.consumer };
  const left = sliceRemaining(s);
  for (const [k, v] of allocation.amounts) {
    if (!s.slice.capacity.has(k)) return { kind: 'outside_slice', key: k };
    if ((left.capacity.get(k) ?? 0) < v) return { kind: 'slice_exhausted', key: k };
  }
  if (projectLimited(allocation.project)) {
    const leftForProject = left.limits.get(allocation.project) ?? 0;
    if (leftForProject < sumOf(allocation.amounts)) return { kind: 'slice_limit_exhausted', project: allocation.project };
  }
  const drawn: Allocation = { ...allocation, site: s.site };
  s.drawn.set(drawn.consumer, drawn);
  s.journal.push({ seq: s.nextSeq++, key: idempotencyKey, op: 'claim', allocation: drawn });
  return null;
}

/** A delete by a cut-off site of one of its own consumers: what it drew is its slice's again. */
export function deleteAtSite(s: SiteState, consumer: string, idempotencyKey: string): boolean {
  if (!s.drawn.has(consumer)) return false;
  s.drawn.delete(consumer);
  s.journal.push({ seq: s.nextSeq++, key: idempotencyKey, op: 'delete', consumer });
  return true;
}

export interface ReplayResult {
  applied: number;
  skipped: number;
  /** Entries the primary refused: with slices, never (the checker asserts 0). */
  conflicts: JournalEntry[];
}

/**
 * Replays `entries` (in sequence order) of `site` on the primary. Each entry is applied with the
 * site's replayed sequence in one step, so an entry at or below it is skipped: a replay twice has
 * the effect of once, and a replay cut short resumes where it stopped. A replayed claim is drawn
 * from the site's slice, so it passes the primary's rule whenever the site's own did.
 */
export function replay(p: PrimaryState, site: string, entries: readonly JournalEntry[]): ReplayResult {
  const result: ReplayResult = { applied: 0, skipped: 0, conflicts: [] };
  for (const entry of entries) {
    if (entry.seq <= (p.replayed.get(site) ?? 0)) {
      result.skipped++;
      continue;
    }
    if (entry.op === 'claim') {
      const existing = p.allocations.get(entry.allocation.consumer);
      if (existing === undefined) {
        const refusal = claimOnPrimary(p, entry.allocation);
        if (refusal) result.conflicts.push(entry);
      } else if (existing.site !== site) result.conflicts.push(entry);
    } else {
      const existing = p.allocations.get(entry.consumer);
      if (existing?.site === site) deleteOnPrimary(p, entry.consumer);
    }
    p.replayed.set(site, entry.seq);
    result.applied++;
  }
  return result;
}

/** After the primary confirms up to `seq`: those entries leave the journal. */
export function confirm(s: SiteState, seq: number): void {
  s.confirmed = Math.max(s.confirmed, seq);
  s.journal = s.journal.filter((e) => e.seq > s.confirmed);
}

/** On healing, after replay: the site's view of what is drawn becomes the primary's. */
export function refreshFromPrimary(s: SiteState, p: PrimaryState): void {
  const slice = p.slices.get(s.site);
  if (slice) s.slice = slice;
  s.drawn = new Map([...p.allocations.values()].filter((a) => a.site === s.site).map((a) => [a.consumer, a]));
}

// ---- rebalancing while connected (demarcation) ----

export interface Watermarks {
  /** Below this share of its slice left (per key), a site asks for `step` more. */
  low: number;
  /** Above this share left, it gives `step` back. */
  high: number;
  step: number;
}

/**
 * The slice a connected site asks for: per key, `step` more where what is left is below the low
 * watermark, `step` less where it is above the high one, never below what the site has drawn.
 * Null: nothing to change. Only a connected site asks: the primary never shrinks the slice of a
 * site it cannot reach, since it does not know what the site granted meanwhile.
 */
export function rebalanceTarget(s: SiteState, marks: Watermarks): Slice | null {
  const left = sliceRemaining(s).capacity;
  const capacity = new Map(s.slice.capacity);
  let changed = false;
  for (const [k, size] of s.slice.capacity) {
    const remaining = left.get(k) ?? 0;
    const drawn = size - remaining;
    if (remaining < marks.low * size || size === 0) {
      capacity.set(k, size + marks.step);
      changed = true;
    } else if (remaining > marks.high * size) {
      const next = Math.max(drawn, size - marks.step);
      if (next !== size) {
        capacity.set(k, next);
        changed = true;
      }
    }
  }
  return changed ? { capacity, limits: s.slice.limits } : null;
}

/** A connected site's rebalance: the primary admits the new slice (a hold edit, refused where it does not fit) and the site takes it. */
export function rebalance(p: PrimaryState, s: SiteState, marks: Watermarks): Refusal | null {
  const target = rebalanceTarget(s, marks);
  if (target === null) return null;
  const refusal = setSlice(p, s.site, target);
  if (refusal === null) s.slice = target;
  return refusal;
}
