// A site's local libSQL file (PLACEMENT_SITE_DB_PATH, docs/sites.md): what a
// site needs to decide claims while the primary is cut off, and its journal.
//   site_slice      its slice per (provider, class), with the inventory's unit
//                   constraints, as last read from the primary
//   site_state      the slice's hold (uuid, generation), when it was last read,
//                   the last journal entry the primary has applied
//   site_consumers  the consumers drawn from its slice: as last read from the
//                   primary, then as the site's own claims and deletes leave them
//   site_journal    each claim and delete decided while cut off, in order, with
//                   its idempotency key and the request, until the primary applies it
//   site_limit_slices  with project limits on: its part of each project's limit
//                   of a class (ext_site_limit_slices), as last read
//   site_limited    which (project, class) pairs have a limit (project '': the
//                   registered default, every project's), as ext_limits names them
// This file is not a placement database (no providers, no other consumers), so its
// tables are made here, not by drizzle/'s migrations, which are the primary's.
import { type Client, createClient, type InStatement } from '@libsql/client';
import type { ConsumerClaim } from '../../placement/repo/allocations.js';
import { type Key, keyOf } from '../holds/model.js';

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS site_slice (
    provider TEXT NOT NULL, resource_class TEXT NOT NULL, amount INTEGER NOT NULL,
    min_unit INTEGER NOT NULL, max_unit INTEGER NOT NULL, step_size INTEGER NOT NULL,
    PRIMARY KEY (provider, resource_class))`,
  `CREATE TABLE IF NOT EXISTS site_state (
    id INTEGER PRIMARY KEY CHECK (id = 1), hold_uuid TEXT, hold_generation INTEGER,
    refreshed_at INTEGER, last_replayed INTEGER NOT NULL DEFAULT 0)`,
  'INSERT OR IGNORE INTO site_state (id) VALUES (1)',
  `CREATE TABLE IF NOT EXISTS site_consumers (
    consumer TEXT PRIMARY KEY, project TEXT NOT NULL, user_id TEXT NOT NULL, consumer_type TEXT,
    generation INTEGER NOT NULL, allocations TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS site_journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, idem_key TEXT NOT NULL UNIQUE, kind TEXT NOT NULL CHECK (kind IN ('claim', 'delete')),
    request TEXT NOT NULL, created_at INTEGER NOT NULL, replayed_at INTEGER, outcome TEXT)`,
  `CREATE TABLE IF NOT EXISTS site_limit_slices (
    project TEXT NOT NULL, resource_class TEXT NOT NULL, amount INTEGER NOT NULL, PRIMARY KEY (project, resource_class))`,
  'CREATE TABLE IF NOT EXISTS site_limited (project TEXT NOT NULL, resource_class TEXT NOT NULL, PRIMARY KEY (project, resource_class))',
];

/** One provider and class of the slice, with the inventory's unit constraints. */
export interface SliceEntry {
  provider: string;
  resourceClass: string;
  amount: number;
  minUnit: number;
  maxUnit: number;
  stepSize: number;
}

/** A consumer drawn from the slice (or claimed locally), its allocations by provider and class. */
export interface SiteConsumer {
  uuid: string;
  project: string;
  user: string;
  consumerType: string | null;
  generation: number;
  allocations: Record<string, Record<string, number>>;
}

/** A project's limit slice of a class at the site. */
export interface LimitSliceEntry {
  project: string;
  resourceClass: string;
  amount: number;
}

/** A (project, class) with a limit: project '' is every project's default. */
export interface LimitedEntry {
  project: string;
  resourceClass: string;
}

/** What the site last read from the primary. */
export interface SiteView {
  holdUuid: string | null;
  holdGeneration: number | null;
  slice: SliceEntry[];
  consumers: SiteConsumer[];
  limitSlices: LimitSliceEntry[];
  limited: LimitedEntry[];
}

export interface JournalEntry {
  seq: number;
  idemKey: string;
  kind: 'claim' | 'delete';
  /** The claims as decided (a delete: one consumer with no allocations). */
  claims: ConsumerClaim[];
  createdAt: number;
}

/** The local state a decision reads: the slice, the consumers drawn from it, the hold. */
export interface LocalSnapshot extends SiteView {
  lastReplayed: number;
  refreshedAt: number | null;
}

const num = (v: unknown): number => Number(v);

export class LocalSiteFile {
  private readonly client: Client;
  /**
   * What the file holds of the slice, its consumers and the hold, as last read or written: a cut-off
   * claim decides from it without reading the file (the file stays the durable copy: the cache
   * changes only after a write has committed). `version` counts writes, so a read that raced one is not kept.
   */
  private cached: LocalSnapshot | undefined;
  private version = 0;
  /** The tables made (every call waits for it; a file that cannot be made fails them all, and the start). */
  readonly ready: Promise<void>;

  /**
   * `synchronous`: FULL (the default) syncs every commit, so an acknowledged claim outlives a power
   * cut; NORMAL (WAL) outlives a crash of the process only (the random-history checker uses it).
   */
  constructor(path: string, synchronous: 'FULL' | 'NORMAL' = 'FULL') {
    const client = createClient({ url: `file:${path}` });
    this.client = client;
    this.ready = (async () => {
      await client.execute('PRAGMA journal_mode = WAL');
      await client.execute(`PRAGMA synchronous = ${synchronous}`);
      await client.batch(SCHEMA, 'write');
    })();
    this.ready.catch(() => undefined);
  }

  async snapshot(): Promise<LocalSnapshot> {
    await this.ready;
    if (this.cached) return this.cached;
    const version = this.version;
    const read = await this.fromFile();
    if (version === this.version) this.cached = read;
    return read;
  }

  /** A write changed the file: the next snapshot reads it. */
  private changed(): void {
    this.version += 1;
    this.cached = undefined;
  }

  /** The snapshot as the file holds it, never the cache (the cache's differential test compares them). */
  async fromFile(): Promise<LocalSnapshot> {
    await this.ready;
    const [slice, state, consumers, limitSlices, limited] = await this.client.batch(
      [
        'SELECT provider, resource_class, amount, min_unit, max_unit, step_size FROM site_slice ORDER BY provider, resource_class',
        'SELECT hold_uuid, hold_generation, refreshed_at, last_replayed FROM site_state WHERE id = 1',
        'SELECT consumer, project, user_id, consumer_type, generation, allocations FROM site_consumers ORDER BY consumer',
        'SELECT project, resource_class, amount FROM site_limit_slices ORDER BY project, resource_class',
        'SELECT project, resource_class FROM site_limited',
      ],
      'read',
    );
    const s = state!.rows[0]!;
    return {
      holdUuid: s.hold_uuid === null ? null : String(s.hold_uuid),
      holdGeneration: s.hold_generation === null ? null : num(s.hold_generation),
      refreshedAt: s.refreshed_at === null ? null : num(s.refreshed_at),
      lastReplayed: num(s.last_replayed),
      slice: slice!.rows.map((r) => ({
        provider: String(r.provider),
        resourceClass: String(r.resource_class),
        amount: num(r.amount),
        minUnit: num(r.min_unit),
        maxUnit: num(r.max_unit),
        stepSize: num(r.step_size),
      })),
      consumers: consumers!.rows.map((r) => ({
        uuid: String(r.consumer),
        project: String(r.project),
        user: String(r.user_id),
        consumerType: r.consumer_type === null ? null : String(r.consumer_type),
        generation: num(r.generation),
        allocations: JSON.parse(String(r.allocations)) as SiteConsumer['allocations'],
      })),
      limitSlices: limitSlices!.rows.map((r) => ({
        project: String(r.project),
        resourceClass: String(r.resource_class),
        amount: num(r.amount),
      })),
      limited: limited!.rows.map((r) => ({ project: String(r.project), resourceClass: String(r.resource_class) })),
    };
  }

  /** Replaces what the site knows with what the primary says (the caller does so only while nothing is left to replay). */
  async refresh(view: SiteView, nowMs: number): Promise<void> {
    await this.ready;
    await this.client.batch(
      [
        'DELETE FROM site_slice',
        ...view.slice.map(
          (e): InStatement => ({
            sql: 'INSERT INTO site_slice (provider, resource_class, amount, min_unit, max_unit, step_size) VALUES (?, ?, ?, ?, ?, ?)',
            args: [e.provider, e.resourceClass, e.amount, e.minUnit, e.maxUnit, e.stepSize],
          }),
        ),
        {
          sql: 'UPDATE site_state SET hold_uuid = ?, hold_generation = ?, refreshed_at = ? WHERE id = 1',
          args: [view.holdUuid, view.holdGeneration, nowMs],
        },
        'DELETE FROM site_consumers',
        ...view.consumers.map(consumerRow),
        'DELETE FROM site_limit_slices',
        ...view.limitSlices.map(
          (e): InStatement => ({
            sql: 'INSERT INTO site_limit_slices (project, resource_class, amount) VALUES (?, ?, ?)',
            args: [e.project, e.resourceClass, e.amount],
          }),
        ),
        'DELETE FROM site_limited',
        ...view.limited.map(
          (e): InStatement => ({
            sql: 'INSERT INTO site_limited (project, resource_class) VALUES (?, ?)',
            args: [e.project, e.resourceClass],
          }),
        ),
      ],
      'write',
    );
    this.changed();
  }

  /**
   * One local write batch: the consumers' new state and the journal entry, so a
   * claim is acknowledged only once both are on disk together. Returns the entry's sequence number.
   */
  async record(
    kind: 'claim' | 'delete',
    claims: ConsumerClaim[],
    after: SiteConsumer[],
    removed: string[],
    idemKey: string,
    nowMs: number,
  ): Promise<number> {
    await this.ready;
    const results = await this.client.batch(
      [
        ...removed.map((uuid): InStatement => ({ sql: 'DELETE FROM site_consumers WHERE consumer = ?', args: [uuid] })),
        ...after.map(consumerRow),
        {
          sql: 'INSERT INTO site_journal (idem_key, kind, request, created_at) VALUES (?, ?, ?, ?) RETURNING seq',
          args: [idemKey, kind, JSON.stringify(claims), nowMs],
        },
      ],
      'write',
    );
    // Committed: the cache takes the same change (no read on a cut-off site's claim path).
    const before = this.cached;
    this.changed();
    if (before) {
      const gone = new Set([...removed, ...after.map((c) => c.uuid)]);
      const consumers = [...before.consumers.filter((c) => !gone.has(c.uuid)), ...after].sort((a, b) =>
        a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0,
      );
      this.cached = { ...before, consumers };
    }
    return num(results[results.length - 1]!.rows[0]!.seq);
  }

  /** The slice's amounts as given (a rebalancing's shrink, taken before the primary is asked). */
  async setSlice(entries: readonly SliceEntry[]): Promise<void> {
    await this.ready;
    await this.client.batch(
      entries.map(
        (e): InStatement => ({
          sql: 'UPDATE site_slice SET amount = ? WHERE provider = ? AND resource_class = ?',
          args: [e.amount, e.provider, e.resourceClass],
        }),
      ),
      'write',
    );
    this.changed();
  }

  /** Consumers drawn from the slice on the primary while connected (or perhaps: a claim whose outcome is unknown). */
  async remember(consumers: SiteConsumer[]): Promise<void> {
    await this.ready;
    if (consumers.length === 0) return;
    await this.client.batch(consumers.map(consumerRow), 'write');
    this.changed();
  }

  /** The entries the primary has not applied yet, in order. */
  async pending(): Promise<JournalEntry[]> {
    await this.ready;
    const rs = await this.client.execute(
      'SELECT seq, idem_key, kind, request, created_at FROM site_journal WHERE replayed_at IS NULL ORDER BY seq',
    );
    return rs.rows.map((r) => ({
      seq: num(r.seq),
      idemKey: String(r.idem_key),
      kind: String(r.kind) as JournalEntry['kind'],
      claims: JSON.parse(String(r.request)) as ConsumerClaim[],
      createdAt: num(r.created_at),
    }));
  }

  /** Every entry with what its replay did (tests and operators read it). */
  async journal(): Promise<{ seq: number; idemKey: string; kind: string; outcome: string | null }[]> {
    await this.ready;
    const rs = await this.client.execute('SELECT seq, idem_key, kind, outcome FROM site_journal ORDER BY seq');
    return rs.rows.map((r) => ({
      seq: num(r.seq),
      idemKey: String(r.idem_key),
      kind: String(r.kind),
      outcome: r.outcome === null ? null : String(r.outcome),
    }));
  }

  async depth(): Promise<number> {
    await this.ready;
    const rs = await this.client.execute('SELECT COUNT(*) AS n FROM site_journal WHERE replayed_at IS NULL');
    return num(rs.rows[0]!.n);
  }

  /** Marks entries done on the primary (after the primary has committed them, or refused them): each `outcome` says which. */
  async replayed(entries: readonly { seq: number; outcome: string }[], nowMs: number): Promise<void> {
    await this.ready;
    if (entries.length === 0) return;
    await this.client.batch(
      [
        ...entries.map(
          (e): InStatement => ({
            sql: 'UPDATE site_journal SET replayed_at = ?, outcome = ? WHERE seq = ? AND replayed_at IS NULL',
            args: [nowMs, e.outcome, e.seq],
          }),
        ),
        { sql: 'UPDATE site_state SET last_replayed = MAX(last_replayed, ?) WHERE id = 1', args: [Math.max(...entries.map((e) => e.seq))] },
      ],
      'write',
    );
    this.changed();
  }

  close(): void {
    this.client.close();
  }
}

function consumerRow(c: SiteConsumer): InStatement {
  return {
    sql: `INSERT INTO site_consumers (consumer, project, user_id, consumer_type, generation, allocations) VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (consumer) DO UPDATE SET project = excluded.project, user_id = excluded.user_id, consumer_type = excluded.consumer_type,
        generation = excluded.generation, allocations = excluded.allocations`,
    args: [c.uuid, c.project, c.user, c.consumerType, c.generation, JSON.stringify(c.allocations)],
  };
}

/** What the consumers use, per (provider, class). */
export function usedBy(consumers: readonly SiteConsumer[]): Map<Key, number> {
  const used = new Map<Key, number>();
  for (const c of consumers) {
    for (const [provider, resources] of Object.entries(c.allocations)) {
      for (const [rc, n] of Object.entries(resources)) used.set(keyOf(provider, rc), (used.get(keyOf(provider, rc)) ?? 0) + n);
    }
  }
  return used;
}

/** What the consumers use, per (project, class), keyed `project\u0000class`. */
export function usedByProject(consumers: readonly SiteConsumer[]): Map<string, number> {
  const used = new Map<string, number>();
  for (const c of consumers) {
    for (const resources of Object.values(c.allocations)) {
      for (const [rc, n] of Object.entries(resources)) used.set(`${c.project}\u0000${rc}`, (used.get(`${c.project}\u0000${rc}`) ?? 0) + n);
    }
  }
  return used;
}
