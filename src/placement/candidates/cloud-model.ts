// The provider-tree model, the candidates engine's only input: structure,
// traits, aggregates and inventory limits of provider trees, never usage.
// Two kinds of the same model:
// - the shared cache (one per app and database handle, TreeCache), held
//   between requests while the cloud fits PLACEMENT_CANDIDATE_TREE_CACHE.
//   Usage changes with every claim and is read fresh by each request; the
//   trees change rarely and are re-read tree by tree: triggers
//   (drizzle/0003_tree_changes.sql) raise a root's `seq` in
//   placement_tree_changes on every write to one of its providers,
//   inventories, traits or aggregates, and each request's read batch carries
//   the trees whose seq passed the model's. The batch is one snapshot, so the
//   trees and the usage a request sees always belong together.
// - a partial model of one request (CloudModel.partial): exactly the trees
//   the SQL prefilter keeps (prefilter.ts), for clouds over the cache's size.
import type { InStatement } from '@libsql/client';
import type { Deps } from '../../deps.js';
import { capacityOf, type InventoryLimits } from '../capacity.js';
import { columns, packedArray, type PackedRow } from '../../db/rows.js';
import { AGG, ALLOC, EPOCH, INV, RC, RP, RP_AGG, RP_TRAIT, TRAIT, TREE_CHANGE, USAGE_CHANGE } from '../../db/columns.js';

/** Root id the triggers use for a change that touches every tree (a class renamed or removed). */
const EVERY_TREE = 0;
/** At most this many roots wait for the refresher to prepare them (a model no refresher serves, a Worker's, notes none past it). */
const MAX_UNPREPARED = 4096;

const UTF8 = new TextEncoder();

export interface ModelInventory extends InventoryLimits {
  classId: number;
  className: string;
  capacity: number;
}

export interface ModelProvider {
  id: number;
  uuid: string;
  /** The uuid as a JSON string's UTF-8 bytes, encoded once for every answer that names the provider. */
  uuidJson: Uint8Array;
  parentId: number | null;
  rootId: number;
  /** Trait names in trait id order, as upstream lists them in summaries. */
  traits: Set<string>;
  aggregates: Set<number>;
  /** Inventories in class id order. */
  inventories: ModelInventory[];
}

/** A provider as CloudModel.of() takes it (traits in trait id order, inventories in class id order). */
export interface ProviderSpec {
  id: number;
  uuid: string;
  parentId: number | null;
  rootId: number;
  traits: readonly string[];
  aggregates: readonly number[];
  inventories: readonly Omit<ModelInventory, 'capacity'>[];
}

/** What the tree model counts into (Deps['metrics']). */
export type TreeMetrics = Pick<Deps['metrics'], 'treeCacheProviders' | 'treeCacheRefreshes'>;

export const PROVIDER_ROW = columns(['id', 'uuid', 'parent_provider_id', 'root_provider_id', 'traits', 'aggs']);
const LIMIT_COLUMNS = ['rp', 'cls', 'name', 'total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'ratio'] as const;
/** An inventory as the cache reads it (never usage). */
const CACHED_INVENTORY_ROW = columns(LIMIT_COLUMNS);
/** An inventory as a partial model reads it: the same columns, then its current usage. */
export const INVENTORY_ROW = columns([...LIMIT_COLUMNS, 'used']);

/** The packed columns of PROVIDER_ROW for the providers aliased `p`. */
export const providerColumns = `p.${RP.id}, p.${RP.uuid}, p.${RP.parentProviderId}, p.${RP.rootProviderId},
  (SELECT group_concat(name, char(31)) FROM (SELECT t.${TRAIT.name} FROM resource_provider_traits rt JOIN traits t ON t.${TRAIT.id} = rt.${RP_TRAIT.traitId}
    WHERE rt.${RP_TRAIT.resourceProviderId} = p.${RP.id} ORDER BY rt.${RP_TRAIT.traitId})) AS traits,
  (SELECT group_concat(ra.${RP_AGG.aggregateId}) FROM resource_provider_aggregates ra WHERE ra.${RP_AGG.resourceProviderId} = p.${RP.id}) AS aggs`;

/** The packed columns of INVENTORY_ROW but `used` for the inventories aliased `i` (`rc`: their class). */
export const inventoryColumns = `i.${INV.resourceProviderId} AS rp, i.${INV.resourceClassId} AS cls, rc.${RC.name}, i.${INV.total}, i.${INV.reserved}, i.${INV.minUnit},
  i.${INV.maxUnit}, i.${INV.stepSize}, i.${INV.allocationRatio} AS ratio`;

/** What one refresh statement returns, packed in one JSON value. */
interface Refresh {
  /** The database's epoch token (placement_epoch): another one means another database. */
  epoch: string | null;
  seq: number | null;
  /** Roots re-read (every root when the model was empty): null when over the size cap. */
  changed: number[] | null;
  providers: PackedRow[];
  inventories: PackedRow[];
}

/**
 * refreshStatement()'s two texts, built once: the trees changed since `:seq`
 * (driven from the change rows, seq index, so an unchanged cloud costs two
 * index probes), or, on a cold load, every tree unless the cloud is over
 * `:cap` (then nothing).
 */
function refreshSql(everything: boolean): string {
  const changedRoots = `SELECT ${TREE_CHANGE.rootId} FROM placement_tree_changes WHERE ${TREE_CHANGE.seq} > :seq`;
  const source = everything
    ? { from: 'resource_providers p', where: 'WHERE (SELECT count(*) FROM resource_providers) <= :cap' }
    : { from: `(${changedRoots}) c CROSS JOIN resource_providers p ON p.${RP.rootProviderId} = c.root_id`, where: '' };
  return `SELECT json_object(
        'epoch', (SELECT ${EPOCH.token} FROM placement_epoch WHERE ${EPOCH.id} = 1),
        'seq', (SELECT MAX(${TREE_CHANGE.seq}) FROM placement_tree_changes),
        'changed', ${
          everything
            ? `CASE WHEN (SELECT count(*) FROM resource_providers) <= :cap
                THEN (SELECT json_group_array(${RP.id}) FROM resource_providers WHERE ${RP.id} = ${RP.rootProviderId}) END`
            : `(SELECT json_group_array(root_id) FROM (${changedRoots}))`
        },
        'providers', (SELECT ${packedArray(PROVIDER_ROW)} FROM (
          SELECT ${providerColumns} FROM ${source.from} ${source.where} ORDER BY p.${RP.id})),
        'inventories', (SELECT ${packedArray(CACHED_INVENTORY_ROW)} FROM (
          SELECT ${inventoryColumns} FROM ${source.from}
            CROSS JOIN inventories i ON i.${INV.resourceProviderId} = p.${RP.id}
            JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
          ${source.where} ORDER BY i.${INV.resourceProviderId}, i.${INV.resourceClassId})))`;
}
const REFRESH_ALL_SQL = refreshSql(true);
const REFRESH_CHANGED_SQL = refreshSql(false);

/** A usage row: provider id, class id, units allocated. */
export const USAGE_ROW = columns(['rp', 'cls', 'used']);

/**
 * Per provider and class: the usage SUMmed from allocations `a`, packed as USAGE_ROW rows (one JSON text),
 * and beside it the highest usage change seq, which numbers that snapshot of the usage.
 */
export const groupedUsage = (from: string, rp = `a.${ALLOC.resourceProviderId}`) =>
  `SELECT COALESCE(json_group_array(json_array(rp, cls, used)), json('[]')) AS usage_rows,
    (SELECT COALESCE(MAX(${USAGE_CHANGE.seq}), 0) FROM placement_usage_changes) FROM (
    SELECT ${rp} AS rp, a.${ALLOC.resourceClassId} AS cls, SUM(a.${ALLOC.used}) AS used FROM ${from}
    GROUP BY ${rp}, a.${ALLOC.resourceClassId})`;

const TREES_USAGE_SQL = `WITH roots(id) AS (SELECT value FROM json_each(:roots) UNION SELECT ${TREE_CHANGE.rootId} FROM placement_tree_changes WHERE ${TREE_CHANGE.seq} > :seq)
      ${groupedUsage(`roots r CROSS JOIN resource_providers p ON p.${RP.rootProviderId} = r.id CROSS JOIN allocations a ON a.${ALLOC.resourceProviderId} = p.${RP.id}`)}`;

export class CloudModel {
  /** The highest change seq applied; -1 before the first load. */
  private seq = -1;
  /**
   * Roots re-read since the refresher last prepared their answers' bytes: a
   * request's batch applies the trees written since the last refresh too
   * (e.g. the re-warm's, while a load goes on), and the refresher prepares
   * those on its next turn (model-refresh.ts). Bounded: past it, the answers write them.
   */
  private readonly unprepared = new Set<number>();
  /** The epoch token of the database the model was read from. */
  private epoch: string | null = null;
  private readonly providers = new Map<number, ModelProvider>();
  private readonly trees = new Map<number, ModelProvider[]>();
  private rootsInOrder: number[] | null = null;
  private readonly sharingIds = new Set<number>();
  private sharingInOrder: number[] | null = null;
  private readonly membersOfAggregate = new Map<number, Set<number>>();
  private readonly traitSets = new Map<string, Set<string>>();
  private readonly aggregateSets = new Map<string, Set<number>>();
  /** Counts every change of what the model holds: equal versions of one model hold the same trees (a kept answer's validity). */
  private changes = 0;
  /** Set when the cloud outgrew the cap: requests use the SQL engine until then. */
  private oversizeUntil = 0;
  /**
   * Every provider's usage as of a usage change seq, as the last batch that
   * read all of it found it (held()): a later batch reads only the providers
   * whose usage changed since. Never changed once held (a newer one replaces it).
   */
  private heldUsage: HeldUsage | null = null;
  /** Counts clear(): a batch whose model was cleared while it was in flight (another database) is read again. */
  private clears = 0;
  /**
   * Aggregate ids of uuids requests named before: a request's plan is guessed
   * before its batch brings the lookups (a wrong guess only costs a round trip).
   */
  readonly knownAggregates = new Map<string, number>();

  constructor(
    readonly maxProviders: number,
    private readonly metrics: TreeMetrics | null = null,
  ) {}

  /**
   * A request's own model of the trees it loaded (packed rows, inventories
   * with their usage, which goes into `usage`): the same model, never refreshed.
   */
  static partial(providers: PackedRow[], inventories: PackedRow[], usage: Usage): CloudModel {
    const model = new CloudModel(Number.POSITIVE_INFINITY);
    model.addRows(providers, inventories, usage);
    model.seq = 0;
    return model;
  }

  get loaded(): boolean {
    return this.seq >= 0;
  }

  /** Providers held now. */
  get size(): number {
    return this.providers.size;
  }

  /** Which contents the model holds: it changes with every tree re-read, dropped or cleared. */
  get version(): number {
    return this.changes;
  }

  /** The change seq the model reflects (what refreshStatement() reads past). */
  get appliedSeq(): number {
    return this.seq;
  }

  /** The usage held of every provider, or null (none read whole yet, or the model was cleared since). */
  get held(): HeldUsage | null {
    return this.heldUsage;
  }

  /** Holds `usage`, every provider's as of usage change seq `seq` (one snapshot), unless the model was cleared since `clears`. */
  hold(seq: number, usage: Usage, clears: number): void {
    if (clears === this.clears) this.heldUsage = { seq, usage };
  }

  /** How many times the model was cleared (to hold usage, and to tell a batch whose model was cleared in between). */
  get clearCount(): number {
    return this.clears;
  }

  learnAggregates(idByUuid: ReadonlyMap<string, number>): void {
    if (this.knownAggregates.size > 10_000) this.knownAggregates.clear();
    for (const [uuid, id] of idByUuid) this.knownAggregates.set(uuid, id);
  }

  /** False while the cloud is known to be larger than the cap (rechecked once a minute). */
  usable(now: number): boolean {
    return this.maxProviders > 0 && now >= this.oversizeUntil;
  }

  /** The epoch token of the database the model was read from (null before it is). */
  get appliedEpoch(): string | null {
    return this.epoch;
  }

  /**
   * One statement of the request's read batch: the trees changed since the
   * model's seq (every tree when not loaded yet and within the cap).
   */
  refreshStatement(): InStatement {
    return this.loaded ? { sql: REFRESH_CHANGED_SQL, args: { seq: this.seq } } : { sql: REFRESH_ALL_SQL, args: { cap: this.maxProviders } };
  }

  /**
   * The current usage of the providers of `roots` and of every tree changed
   * since the model's seq (it comes into the trees a batch reads), in
   * groupedUsage()'s two columns: beside refreshStatement() in one batch, one snapshot.
   */
  treesUsageStatement(roots: Iterable<number>): InStatement {
    return { sql: TREES_USAGE_SQL, args: { roots: JSON.stringify([...roots]), seq: this.seq } };
  }

  /** The refresher's treesUsageStatement(): null before the model is loaded (a whole cloud's usage is left to the answers). */
  changedUsageStatement(alsoRoots: Iterable<number> = []): InStatement | null {
    return this.loaded ? this.treesUsageStatement(alsoRoots) : null;
  }

  /** The roots re-read since the refresher last prepared them (a copy). */
  unpreparedRoots(): number[] {
    return [...this.unprepared];
  }

  /** Notes `roots` prepared. */
  prepared(roots: Iterable<number>): void {
    for (const root of roots) this.unprepared.delete(root);
  }

  /**
   * Applies a refresh statement's result. Returns the roots re-read, or
   * 'reload' when the model must be read whole again (a change touching
   * every tree), or 'oversize' when the cloud is over the cap.
   */
  apply(packed: string, now: number): Set<number> | 'reload' | 'oversize' {
    const refresh = JSON.parse(packed) as Refresh;
    const wasLoaded = this.loaded;
    if (refresh.changed === null) {
      this.metrics?.treeCacheProviders.set([], 0);
      this.clear();
      this.oversizeUntil = now + 60_000;
      return 'oversize';
    }
    if (this.loaded && refresh.changed.includes(EVERY_TREE)) {
      this.clear();
      return 'reload';
    }
    // Another database (replaced under the running service): read it whole.
    if (this.loaded && refresh.epoch !== this.epoch) {
      this.clear();
      return 'reload';
    }
    const changed = new Set(refresh.changed);
    const seq = refresh.seq ?? 0;
    // Nothing written since the model's snapshot.
    if (this.loaded && seq === this.seq) return changed;
    // Changes numbered below the model's: a database restored or replaced
    // under the running service (or, rarely, a concurrent request's older
    // snapshot arriving late): nothing the model holds can be trusted.
    if (this.loaded && seq < this.seq) {
      this.clear();
      return 'reload';
    }
    this.changes += 1;
    for (const root of changed) this.dropTree(root);
    // Re-read once loaded (the first whole read prepares templates only, model-refresh.ts).
    if (wasLoaded && this.unprepared.size + changed.size <= MAX_UNPREPARED) for (const root of changed) this.unprepared.add(root);
    this.addRows(refresh.providers, refresh.inventories, null);
    // Shared sets of trees since dropped are let go once they outnumber the providers.
    if (this.traitSets.size + this.aggregateSets.size > 2 * this.providers.size + 64) {
      this.traitSets.clear();
      this.aggregateSets.clear();
    }
    this.seq = seq;
    this.epoch = refresh.epoch;
    if (this.providers.size > this.maxProviders) {
      this.clear();
      this.oversizeUntil = now + 60_000;
      this.metrics?.treeCacheProviders.set([], 0);
      return 'oversize';
    }
    this.metrics?.treeCacheRefreshes.inc([wasLoaded ? 'partial' : 'full']);
    this.metrics?.treeCacheProviders.set([], this.providers.size);
    return changed;
  }

  /** A model of the given trees (providers in id order, each tree's root first): a made-up cloud, no database (the warm-up). */
  static of(providers: readonly ProviderSpec[]): CloudModel {
    const model = new CloudModel(Number.POSITIVE_INFINITY);
    for (const spec of providers) {
      // Through inventoryOf(), as addRows(): the same object shapes as a real model's.
      const inventories = spec.inventories.map((inv) =>
        inventoryOf(inv.total, inv.reserved, inv.minUnit, inv.maxUnit, inv.stepSize, inv.allocationRatio, inv.classId, inv.className),
      );
      model.addProvider({
        id: spec.id,
        uuid: spec.uuid,
        uuidJson: UTF8.encode(JSON.stringify(spec.uuid)),
        parentId: spec.parentId,
        rootId: spec.rootId,
        traits: model.traitSet(spec.traits.join('\u001f')),
        aggregates: model.aggregateSet(spec.aggregates.join(',')),
        inventories,
      });
    }
    model.seq = 0;
    return model;
  }

  /** Providers and their inventories as packed rows (PROVIDER_ROW, INVENTORY_ROW); with `usage`, the rows' usage goes there. */
  private addRows(providers: PackedRow[], inventories: PackedRow[], usage: Usage | null): void {
    const fresh = new Map<number, ModelProvider>();
    const p = PROVIDER_ROW.at;
    for (const row of providers) {
      const traits = row[p.traits];
      const aggs = row[p.aggs];
      const provider: ModelProvider = {
        id: Number(row[p.id]),
        uuid: String(row[p.uuid]),
        uuidJson: UTF8.encode(JSON.stringify(String(row[p.uuid]))),
        parentId: row[p.parent_provider_id] === null ? null : Number(row[p.parent_provider_id]),
        rootId: Number(row[p.root_provider_id]),
        traits: this.traitSet(traits === null ? '' : String(traits)),
        aggregates: this.aggregateSet(aggs === null ? '' : String(aggs)),
        inventories: [],
      };
      fresh.set(provider.id, provider);
    }
    const i = INVENTORY_ROW.at;
    for (const row of inventories) {
      const inventory = inventoryOf(
        Number(row[i.total]),
        Number(row[i.reserved]),
        Number(row[i.min_unit]),
        Number(row[i.max_unit]),
        Number(row[i.step_size]),
        Number(row[i.ratio]),
        Number(row[i.cls]),
        String(row[i.name]),
      );
      const rp = Number(row[i.rp]);
      fresh.get(rp)?.inventories.push(inventory);
      if (usage) {
        const used = Number(row[i.used] ?? 0);
        if (used !== 0) addUsage(usage, rp, inventory.classId, used);
      }
    }
    for (const provider of fresh.values()) this.addProvider(provider);
  }

  provider(id: number): ModelProvider | undefined {
    return this.providers.get(id);
  }

  /** A tree's providers in id order (empty for an unknown root). */
  tree(root: number): readonly ModelProvider[] {
    return this.trees.get(root) ?? [];
  }

  /** Every root, in id order (the stable order of candidates). */
  roots(): readonly number[] {
    this.rootsInOrder ??= [...this.trees.keys()].sort((a, b) => a - b);
    return this.rootsInOrder;
  }

  /** Providers with MISC_SHARES_VIA_AGGREGATE, in id order (the order the search offers them in). */
  sharing(): readonly number[] {
    this.sharingInOrder ??= [...this.sharingIds].sort((a, b) => a - b);
    return this.sharingInOrder;
  }

  membersOf(aggregateId: number): ReadonlySet<number> {
    return this.membersOfAggregate.get(aggregateId) ?? EMPTY;
  }

  /**
   * Providers share one frozen-in-practice Set per distinct trait list (and
   * aggregate list): most of a cloud's hosts look alike, and a Set costs
   * ~200 bytes. Nothing downstream modifies them.
   */
  private traitSet(packed: string): Set<string> {
    let set = this.traitSets.get(packed);
    if (!set) this.traitSets.set(packed, (set = new Set(packed === '' ? [] : packed.split('\u001f'))));
    return set;
  }

  private aggregateSet(packed: string): Set<number> {
    let set = this.aggregateSets.get(packed);
    if (!set) this.aggregateSets.set(packed, (set = new Set(packed === '' ? [] : packed.split(',').map(Number))));
    return set;
  }

  private clear(): void {
    this.changes += 1;
    this.clears += 1;
    this.heldUsage = null;
    this.unprepared.clear();
    this.traitSets.clear();
    this.aggregateSets.clear();
    this.seq = -1;
    this.providers.clear();
    this.trees.clear();
    this.sharingIds.clear();
    this.sharingInOrder = null;
    this.membersOfAggregate.clear();
    this.rootsInOrder = null;
  }

  private dropTree(root: number): void {
    const members = this.trees.get(root);
    if (!members) return;
    for (const provider of members) {
      this.providers.delete(provider.id);
      if (this.sharingIds.delete(provider.id)) this.sharingInOrder = null;
      for (const agg of provider.aggregates) this.membersOfAggregate.get(agg)?.delete(provider.id);
    }
    this.trees.delete(root);
    this.rootsInOrder = null;
  }

  private addProvider(provider: ModelProvider): void {
    this.providers.set(provider.id, provider);
    let members = this.trees.get(provider.rootId);
    if (!members) {
      this.trees.set(provider.rootId, (members = []));
      this.rootsInOrder = null;
    }
    members.push(provider); // rows come in id order
    if (provider.traits.has(SHARES_TRAIT)) {
      this.sharingIds.add(provider.id);
      this.sharingInOrder = null;
    }
    for (const agg of provider.aggregates) {
      let set = this.membersOfAggregate.get(agg);
      if (!set) this.membersOfAggregate.set(agg, (set = new Set()));
      set.add(provider.id);
    }
  }
}

const EMPTY: ReadonlySet<number> = new Set();

/**
 * An inventory of the model, written out field by field in one order: V8
 * reads objects built by spreading another one many times slower, and the
 * search reads these per request.
 */
function inventoryOf(
  total: number,
  reserved: number,
  minUnit: number,
  maxUnit: number,
  stepSize: number,
  allocationRatio: number,
  classId: number,
  className: string,
): ModelInventory {
  const inventory: ModelInventory = { total, reserved, minUnit, maxUnit, stepSize, allocationRatio, classId, className, capacity: 0 };
  inventory.capacity = capacityOf(inventory);
  return inventory;
}

/**
 * The shared tree models of one app (Deps.candidates): one per database
 * handle it reads (a DataStore lives as long as its process or isolate), so
 * two apps in one process share nothing.
 */
export class TreeCache {
  private readonly models = new WeakMap<object, CloudModel>();

  constructor(private readonly metrics: TreeMetrics | null = null) {}

  /** The model kept for `reader`, made (empty) on first use or when the cap changed. */
  modelFor(reader: object, maxProviders: number): CloudModel {
    let model = this.models.get(reader);
    if (!model || model.maxProviders !== maxProviders) this.models.set(reader, (model = new CloudModel(maxProviders, this.metrics)));
    return model;
  }
}

// --- What the engine's parts share ------------------------------------------
// The shapes the rules (rules.ts) give the search (search.ts) and
// presentation (present/), the request's name lookups (the first statements
// of every read batch, beside the model's refresh) and the tree-level
// conditions of a request (TreePrefilter), which the SQL prefilter
// (prefilter.ts) and the rules over the model both apply.

export interface Inventory extends InventoryLimits {
  used: number;
}

/** An inventory as provider summaries show it; its usage is looked up in the request's Usage. */
export interface SummaryInventory {
  classId: number;
  className: string;
  capacity: number;
}

/** provider id -> class id -> units allocated (absent: none), as one request read it. */
export type Usage = Map<number, Map<number, number>>;

/** Every provider's usage as of usage change seq `seq` (placement_usage_changes), read in one snapshot. */
export interface HeldUsage {
  seq: number;
  usage: Usage;
}

export const usedOf = (usage: Usage, providerId: number, classId: number): number => usage.get(providerId)?.get(classId) ?? 0;

/** The usage of groupedUsage()'s first column (USAGE_ROW rows). */
export function usageOf(rows: PackedRow[]): Usage {
  const usage: Usage = new Map();
  const at = USAGE_ROW.at;
  for (const row of rows) addUsage(usage, Number(row[at.rp]), Number(row[at.cls]), Number(row[at.used]));
  return usage;
}

export function addUsage(usage: Usage, providerId: number, classId: number, used: number): void {
  let perClass = usage.get(providerId);
  if (!perClass) usage.set(providerId, (perClass = new Map()));
  perClass.set(classId, used);
}

export interface ProviderNode {
  id: number;
  uuid: string;
  parentId: number | null;
  rootId: number;
  traits: Set<string>;
  aggregates: Set<number>;
  /** Every inventory of the provider, for provider summaries (usage: the request's Usage). */
  inventories: SummaryInventory[];
  /**
   * The uuid as a JSON string's UTF-8 bytes, encoded once by the trees kept in
   * memory (absent on the SQL engine's nodes, which live one request): the
   * presenter keeps its bytes between answers only for nodes that carry it.
   */
  uuidJson?: Uint8Array;
}

export interface Lookups {
  classIdByName: Map<string, number>;
  traitIdByName: Map<string, number>;
  aggregateIdByUuid: Map<string, number>;
  /** in_tree uuid -> root provider id of that tree. */
  rootIdByProviderUuid: Map<string, number>;
}

export interface CandidateInventories {
  /** provider id -> class id -> inventory, only where some group's amount could fit. */
  byProvider: Map<number, Map<number, Inventory>>;
  rootOf: Map<number, number>;
  /** sharing provider id -> roots of the trees it shares with (its own tree included). */
  anchorsOfSharing: Map<number, Set<number>>;
}

export const SHARES_TRAIT = 'MISC_SHARES_VIA_AGGREGATE';

/**
 * The request's names looked up in one row of four columns, each a JSON list
 * (classes [id, name], traits [id, name], aggregates [id, uuid], in_tree
 * providers [uuid, root id]), read back by lookupsOf(): a part of a read
 * batch's one statement (index.ts). Driven from the names given, so each name
 * costs an index probe.
 */
export function lookupsStatement(names: { classes: string[]; traits: string[]; aggregates: string[]; inTree: string[] }): InStatement {
  return { sql: `SELECT ${LOOKUPS_EXPRESSIONS.map((sql, i) => `${sql} AS names${i}`).join(', ')}`, args: lookupsArgs(names) };
}

/** lookupsStatement()'s arguments. */
export const lookupsArgs = (names: { classes: string[]; traits: string[]; aggregates: string[]; inTree: string[] }) => ({
  classNames: JSON.stringify(names.classes),
  traitNames: JSON.stringify(names.traits),
  aggregateUuids: JSON.stringify(names.aggregates),
  treeUuids: JSON.stringify(names.inTree),
});

const namesJoined = (pair: string, param: string, table: string, column: string) =>
  `(SELECT json_group_array(json_array(${pair})) FROM json_each(:${param}) n JOIN ${table} t ON t.${column} = n.value)`;

/** lookupsStatement()'s four columns, each an expression of its own (a statement may read them only when it must). */
export const LOOKUPS_EXPRESSIONS: readonly string[] = [
  namesJoined(`t.${RC.id}, t.${RC.name}`, 'classNames', 'resource_classes', RC.name),
  namesJoined(`t.${TRAIT.id}, t.${TRAIT.name}`, 'traitNames', 'traits', TRAIT.name),
  namesJoined(`t.${AGG.id}, t.${AGG.uuid}`, 'aggregateUuids', 'placement_aggregates', AGG.uuid),
  namesJoined(`t.${RP.uuid}, t.${RP.rootProviderId}`, 'treeUuids', 'resource_providers', RP.uuid),
];

/** The columns lookupsStatement() reads. */
export const LOOKUPS_COLUMNS = LOOKUPS_EXPRESSIONS.length;

/** lookupsStatement()'s four values, as maps. */
export function lookupsOf([classes, traits, aggregates, trees]: readonly unknown[]): Lookups {
  const pairs = (value: unknown) => JSON.parse(String(value ?? '[]')) as [string | number, string | number][];
  return {
    classIdByName: new Map(pairs(classes).map(([id, name]) => [String(name), Number(id)])),
    traitIdByName: new Map(pairs(traits).map(([id, name]) => [String(name), Number(id)])),
    aggregateIdByUuid: new Map(pairs(aggregates).map(([id, uuid]) => [String(uuid), Number(id)])),
    rootIdByProviderUuid: new Map(pairs(trees).map(([uuid, root]) => [String(uuid), Number(root)])),
  };
}

/**
 * Tree-level conditions every usable tree must meet, pushed into SQL so that
 * hopeless trees never leave the database. Each is necessary, never
 * sufficient: the search applies the exact rules. Rows of sharing providers
 * are exempt (their anchor decides), and a trait or aggregate condition that
 * a sharing provider could meet is not applied.
 */
export interface TreePrefilter {
  requiredAnyOf: string[][];
  forbiddenTraits: string[];
  memberOf: string[][];
  rootRequired: string[];
  rootForbidden: string[];
  /**
   * Several groups: their conditions cannot prune trees, but a tree must
   * still offer every requested class that no sharing provider offers.
   */
  everyClassInTree: boolean;
  /**
   * Alternatives (alternatives.ts): the classes of each variant; a tree must
   * offer every class of one of them (that no sharing provider offers).
   * Applied by the rules over the model; the SQL prefilter leaves it to them.
   */
  someClassSetInTree?: string[][];
}
