// What the preemption search reads, without reading the whole cloud:
// - the provider trees with their inventories: the candidates engine's warm
//   tree model (Deps.candidates' tree cache), moved on by the same refresh
//   statement a request's batch carries (cloud-model.ts); a cloud over the
//   cache's cap, or a cache switched off, is read whole into a model of this
//   request's own;
// - the allocations, with their consumers' projects and generations: an index
//   kept in memory between requests, the app's own (its preemption state, one
//   per database handle it reads, as its tree cache), checked provider by provider against a signature read with the
//   usage (how many allocations, the sum of their ids, the sum of their units):
//   ids only grow and a claim rewrites a consumer's allocations whole, so a
//   provider whose signature is unchanged holds the same rows, and a
//   consumer's project or generation only changes with them.
// One read batch (one snapshot) reads the tree changes, the usage with the
// signatures, the priorities, earlier victims, live holds and the names; a
// second reads the allocations of the providers whose signature moved (none,
// warm and unchanged). The cloud is built only once the index and the tree
// model both match the first batch's snapshot (else it reads again).
import type { InStatement, ResultSet } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { requiredState, type StateKey, stateKey } from '../../extension.js';
import type { SetAsideConstraint } from '../../placement/capacity.js';
import {
  ALLOC,
  CONSUMER,
  CONSUMER_PRIORITY,
  EPOCH,
  HOLD,
  HOLD_AMOUNT,
  PREEMPTION_VICTIM,
  PROJECT,
  PROJECT_PRIORITY,
  RC,
  AGG,
  TRAIT,
} from '../../db/columns.js';
import { CloudModel, type Lookups, type Usage } from '../../placement/candidates/cloud-model.js';
import type { CandidateOptions } from '../../placement/candidates/index.js';
import type { PackedRow } from '../../db/rows.js';
import { type Eligible, type ResourceKey, resourceKey, type UseStats } from './victims.js';

/** A consumer the preemptor may evict, with everything it holds (in allocation id order). */
export interface EvictableConsumer {
  uuid: string;
  project: string;
  priority: number;
  generation: number;
  allocations: readonly { providerId: number; classId: number; used: number }[];
  /** What it holds per (provider, class), as the victim rule takes it. */
  uses: ReadonlyMap<ResourceKey, number>;
}

export interface PreemptionCloud {
  /** The provider trees (the engine's model): structure, traits, aggregates, inventories with their capacity. */
  model: CloudModel;
  lookups: Lookups;
  /** provider id -> class id -> units allocated now (what the summaries show). */
  usage: Usage;
  /** What the search counts as taken: usage less earlier victims' (going), plus holds' amounts (nominations among them). */
  taken: Usage;
  evictable: EvictableConsumer[];
  classNameById: Map<number, string>;
  /** Whether any hold not yet over holds something (the stock search's rule for them is not `taken`'s). */
  held: boolean;
  /**
   * What the search derives from the above alone (search.ts fills it), kept with them: a later
   * request that reads the same allocations, priorities, victims, holds and trees for a priority
   * that leaves the same consumers evictable finds it filled. Never changed once filled.
   */
  derived: Derived;
}

export interface Derived {
  /** `taken` with every evictable consumer's allocations taken out. */
  relaxed?: Usage;
  /** The evictable consumers of each tree, as the victim rule takes them. */
  byRoot?: Map<number, Eligible[]>;
  /** The evictable consumers by uuid. */
  byUuid?: Map<string, EvictableConsumer>;
  /** Per tree (by root id), what its evictable consumers hold per resource (the cost bound's figures), filled as trees are judged. */
  statsByRoot?: UseStats[];
}

/** Most reads before the search answers over what it has (the index then a little newer than the usage). */
const MAX_ATTEMPTS = 8;

interface IndexedAllocation {
  id: number;
  providerId: number;
  classId: number;
  used: number;
}

interface IndexedConsumer {
  uuid: string;
  /** Its project's external id (null for an allocation whose consumer row is missing: never evictable). */
  project: string | null;
  generation: number;
  /** In allocation id order. */
  allocations: IndexedAllocation[];
  /** Units per (provider, class), kept with the allocations. */
  uses: Map<ResourceKey, number>;
}

/** The allocations of every provider, by provider and by consumer, as of each provider's signature. */
class AllocationIndex {
  /** The database's epoch token: another one (a database restored or replaced) empties the index. */
  epoch: string | null = null;
  private readonly signatures = new Map<number, string>();
  private readonly byProvider = new Map<number, { consumer: string; allocation: IndexedAllocation }[]>();
  readonly consumers = new Map<string, IndexedConsumer>();
  /** Moves on with every change to the rows held. */
  version = 0;
  /** The last usage read, as read and as parsed: an unchanged cloud reads the same text (its rows, so the version, unchanged). */
  usageRead: { text: string; usage: Usage; signatures: Map<number, string> } | null = null;
  /** The allocations' stamp when `usageRead` was read (the last id given out, how many there are): the same stamp, the same rows. */
  usageStamp: { lastId: number; count: number } | null = null;
  /** The last names read (classes, traits, aggregates), as read and as parsed: the maps are never changed once made. */
  namesRead: ({ text: string } & Names) | null = null;
  /** The last cloud's evictable consumers, taken usage and derived figures, with what they were made of. */
  lastCloud: {
    key: string;
    evictable: EvictableConsumer[];
    taken: Usage;
    rootIdByProviderUuid: Map<string, number>;
    derived: Derived;
  } | null = null;

  clear(): void {
    this.signatures.clear();
    this.byProvider.clear();
    this.consumers.clear();
    this.version += 1;
  }

  /** Providers whose allocations differ from `signatures` (one read): those to read again. */
  stale(signatures: ReadonlyMap<number, string>): number[] {
    const stale: number[] = [];
    for (const [rp, signature] of signatures) if (this.signatures.get(rp) !== signature) stale.push(rp);
    for (const rp of this.signatures.keys()) if (!signatures.has(rp)) stale.push(rp);
    return stale;
  }

  /** The providers' allocations replaced by `rows` (ROW columns, in id order); a provider without rows is empty. */
  replace(providers: readonly number[], rows: readonly PackedRow[]): void {
    this.version += 1;
    // Each touched consumer gets new lists: a cloud read before keeps the ones it has.
    const touched = new Set<IndexedConsumer>();
    for (const rp of providers) {
      for (const { consumer, allocation } of this.byProvider.get(rp) ?? []) {
        const indexed = this.consumers.get(consumer);
        if (!indexed) continue;
        indexed.allocations = indexed.allocations.filter((a) => a !== allocation);
        touched.add(indexed);
      }
      this.byProvider.delete(rp);
      this.signatures.delete(rp);
    }
    const at = ROW.at;
    for (const row of rows) {
      const uuid = String(row[at.consumer]);
      const allocation: IndexedAllocation = {
        id: Number(row[at.id]),
        providerId: Number(row[at.rp]),
        classId: Number(row[at.cls]),
        used: Number(row[at.used]),
      };
      let indexed = this.consumers.get(uuid);
      if (!indexed) this.consumers.set(uuid, (indexed = { uuid, project: null, generation: 0, allocations: [], uses: new Map() }));
      indexed.project = row[at.project] === null ? null : String(row[at.project]);
      indexed.generation = Number(row[at.generation] ?? 0);
      if (!touched.has(indexed)) indexed.allocations = [...indexed.allocations];
      indexed.allocations.push(allocation);
      touched.add(indexed);
      const list = this.byProvider.get(allocation.providerId);
      if (list) list.push({ consumer: uuid, allocation });
      else this.byProvider.set(allocation.providerId, [{ consumer: uuid, allocation }]);
    }
    for (const consumer of touched) {
      if (consumer.allocations.length === 0) this.consumers.delete(consumer.uuid);
      else {
        consumer.allocations.sort((a, b) => a.id - b.id);
        consumer.uses = new Map();
        for (const a of consumer.allocations) {
          const key = resourceKey(a.providerId, a.classId);
          consumer.uses.set(key, (consumer.uses.get(key) ?? 0) + a.used);
        }
      }
    }
    for (const rp of providers) {
      const list = this.byProvider.get(rp);
      if (list) this.signatures.set(rp, signatureOf(list.map((x) => x.allocation)));
    }
  }
}

/** A provider's signature: per class in id order, its units, how many allocations and the sum of their ids. */
function signatureOf(allocations: readonly IndexedAllocation[]): string {
  const byClass = new Map<number, [number, number, number]>();
  for (const a of allocations) {
    const figures = byClass.get(a.classId) ?? [0, 0, 0];
    byClass.set(a.classId, [figures[0] + a.used, figures[1] + 1, figures[2] + a.id]);
  }
  return [...byClass]
    .sort((a, b) => a[0] - b[0])
    .map(([cls, [used, n, ids]]) => `${cls}:${used}:${n}:${ids}`)
    .join(' ');
}

/**
 * The allocation indexes of one app (what preemption keeps per app): one per
 * database handle it reads, as the app's tree cache keeps one model per
 * handle, so two apps in one process never read each other's.
 */
export class AllocationIndexes {
  private readonly indexes = new WeakMap<object, AllocationIndex>();

  /** The index kept for `reader`, made (empty) on first use. */
  for(reader: object): AllocationIndex {
    let index = this.indexes.get(reader);
    if (!index) this.indexes.set(reader, (index = new AllocationIndex()));
    return index;
  }
}

/** What preemption keeps per app (Deps.extensions.state). */
export const ALLOCATION_INDEXES = stateKey<AllocationIndexes>('preemption');

/** The app's allocation indexes (its preemption routes exist only where preemption is installed, and so set up). */
export const appAllocationIndexes = (extensions: { state<T>(key: StateKey<T>): T | undefined }): AllocationIndexes =>
  requiredState(extensions, ALLOCATION_INDEXES);

const USAGE_SQL = `SELECT COALESCE(json_group_array(json_array(rp, cls, used, n, ids)), json('[]')) FROM (
  SELECT a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.resourceClassId} AS cls, SUM(a.${ALLOC.used}) AS used, COUNT(*) AS n, SUM(a.${ALLOC.id}) AS ids
  FROM allocations a GROUP BY a.${ALLOC.resourceProviderId}, a.${ALLOC.resourceClassId} ORDER BY 1, 2)`;

const ROW = { at: { id: 0, rp: 1, consumer: 2, cls: 3, used: 4, generation: 5, project: 6 } } as const;
const ROWS_SQL = `SELECT COALESCE(json_group_array(json_array(id, rp, consumer, cls, used, generation, project)), json('[]')) FROM (
  SELECT a.${ALLOC.id} AS id, a.${ALLOC.resourceProviderId} AS rp, a.${ALLOC.consumerId} AS consumer, a.${ALLOC.resourceClassId} AS cls,
      a.${ALLOC.used} AS used, c.${CONSUMER.generation} AS generation, pr.${PROJECT.externalId} AS project
    FROM json_each(:providers) j CROSS JOIN allocations a ON a.${ALLOC.resourceProviderId} = j.value
    LEFT JOIN consumers c ON c.${CONSUMER.uuid} = a.${ALLOC.consumerId} LEFT JOIN projects pr ON pr.${PROJECT.id} = c.${CONSUMER.projectId}
    ORDER BY a.${ALLOC.id})`;

/**
 * The allocations' stamp, and the usage only when the stamp differs from the one given: ids only grow
 * (AUTOINCREMENT: the last one given out moves on with every insert) and allocations are only inserted
 * and deleted, never updated (a claim rewrites a consumer's allocations whole), so an unchanged last id
 * and count mean unchanged rows, and the grouped read of every allocation is skipped.
 */
const STAMPED_USAGE_SQL = `SELECT last_id, count, CASE WHEN last_id = :lastId AND count = :count THEN NULL ELSE (${USAGE_SQL}) END AS usage
  FROM (SELECT COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'allocations'), 0) AS last_id, (SELECT COUNT(*) FROM allocations) AS count)`;

function statements(held: SetAsideConstraint, model: CloudModel, nowMs: number, stamp: AllocationIndex['usageStamp']): InStatement[] {
  return [
    model.refreshStatement(),
    { sql: STAMPED_USAGE_SQL, args: { lastId: stamp?.lastId ?? -1, count: stamp?.count ?? -1 } },
    { sql: `SELECT ${EPOCH.token} AS token FROM placement_epoch WHERE ${EPOCH.id} = 1`, args: [] },
    {
      sql: `SELECT ${CONSUMER_PRIORITY.consumerUuid} AS uuid, ${CONSUMER_PRIORITY.priority} AS priority FROM ext_consumer_priorities`,
      args: [],
    },
    {
      sql: `SELECT ${PROJECT_PRIORITY.projectExternalId} AS project, ${PROJECT_PRIORITY.priority} AS priority FROM ext_project_priorities`,
      args: [],
    },
    { sql: `SELECT ${PREEMPTION_VICTIM.consumerUuid} AS uuid FROM ext_preemption_victims`, args: [] },
    // Holds not yet over (nominations among them): what they set aside, as the app's holds declaration counts it, counts as taken.
    {
      sql: `SELECT x.${HOLD_AMOUNT.resourceProviderId} AS rp, x.${HOLD_AMOUNT.resourceClassId} AS cls, SUM(${held.setAside.amount('x')}) AS used
        FROM ext_hold_amounts x JOIN ext_holds h ON h.${HOLD.uuid} = x.${HOLD_AMOUNT.holdUuid} WHERE h.${HOLD.endMs} > ?
        GROUP BY x.${HOLD_AMOUNT.resourceProviderId}, x.${HOLD_AMOUNT.resourceClassId}`,
      args: [nowMs],
    },
    // The names as one row of text: a cloud's hundreds of traits cost one row, and unchanged text is not parsed again.
    {
      sql: `SELECT json_array(
        (SELECT COALESCE(json_group_array(json_array(${RC.id}, ${RC.name})), json('[]')) FROM resource_classes),
        (SELECT COALESCE(json_group_array(json_array(${TRAIT.id}, ${TRAIT.name})), json('[]')) FROM traits),
        (SELECT COALESCE(json_group_array(json_array(${AGG.id}, ${AGG.uuid})), json('[]')) FROM placement_aggregates))`,
      args: [],
    },
  ];
}

/** The cloud as a preemptor of priority `priority` sees it, now, holds counted by `held` (the app's holds declaration), allocations indexed in `indexes` (the app's). */
export async function readPreemptionCloud(
  reader: BatchReader,
  indexes: AllocationIndexes,
  held: SetAsideConstraint,
  priority: number,
  nowMs: number,
  options: CandidateOptions,
): Promise<PreemptionCloud> {
  const index = indexes.for(reader);
  const cached = options.treeCacheProviders > 0 ? (options.trees?.modelFor(reader, options.treeCacheProviders) ?? null) : null;
  let model = cached?.usable(options.now) ? cached : wholeCloudModel();
  for (let attempt = 1; ; attempt += 1) {
    const results = (await reader.readBatch(statements(held, model, nowMs, index.usageRead ? index.usageStamp : null))) as ResultSet[];
    const [refresh, usageRows, epoch] = results;
    const changed = model.apply(String(refresh!.rows[0]![0]), options.now);
    if (changed === 'oversize') {
      model = wholeCloudModel();
      continue;
    }
    if (changed === 'reload') continue;
    const seq = model.appliedSeq;
    const token = epoch!.rows[0] ? String(epoch!.rows[0].token) : null;
    const stamped = usageRows!.rows[0]!;
    if (token !== index.epoch) {
      index.clear();
      index.epoch = token;
      // Another database: its usage is read whole, whatever its stamp.
      index.usageRead = null;
      index.usageStamp = null;
      if (stamped.usage === null) continue;
    }
    if (stamped.usage !== null) {
      const text = String(stamped.usage);
      if (index.usageRead?.text !== text) index.usageRead = { text, ...usageOf(JSON.parse(text) as PackedRow[]) };
      index.usageStamp = { lastId: Number(stamped.last_id), count: Number(stamped.count) };
    }
    if (!index.usageRead) continue;
    const { usage, signatures } = index.usageRead;
    let stale = index.stale(signatures);
    if (stale.length > 0) {
      const [rows] = await reader.readBatch([{ sql: ROWS_SQL, args: { providers: JSON.stringify(stale) } }]);
      index.replace(stale, JSON.parse(String(rows!.rows[0]![0])) as PackedRow[]);
      // Written between the two reads (here or by another request): read again, unless that has gone on too long.
      stale = index.stale(signatures);
    }
    if ((stale.length === 0 && model.appliedSeq === seq) || attempt >= MAX_ATTEMPTS) return cloudOf(model, index, usage, results, priority);
  }
}

/** A model of this request's own, read whole (the cache is off, or the cloud is over its cap). */
const wholeCloudModel = () => new CloudModel(Number.MAX_SAFE_INTEGER);

function usageOf(rows: readonly PackedRow[]): { usage: Usage; signatures: Map<number, string> } {
  const usage: Usage = new Map();
  const parts = new Map<number, string[]>();
  for (const [rp, cls, used, n, ids] of rows) {
    addTo(usage, Number(rp), Number(cls), Number(used));
    const list = parts.get(Number(rp));
    const part = `${Number(cls)}:${Number(used)}:${Number(n)}:${Number(ids)}`;
    if (list) list.push(part);
    else parts.set(Number(rp), [part]);
  }
  return { usage, signatures: new Map([...parts].map(([rp, list]) => [rp, list.join(' ')])) };
}

interface Names {
  classIdByName: Map<string, number>;
  classNameById: Map<number, string>;
  traitIdByName: Map<string, number>;
  aggregateIdByUuid: Map<string, number>;
}

function namesOf([classes, traits, aggregates]: [PackedRow[], PackedRow[], PackedRow[]]): Names {
  return {
    classIdByName: new Map(classes.map(([id, name]) => [String(name), Number(id)])),
    classNameById: new Map(classes.map(([id, name]) => [Number(id), String(name)])),
    traitIdByName: new Map(traits.map(([id, name]) => [String(name), Number(id)])),
    aggregateIdByUuid: new Map(aggregates.map(([id, uuid]) => [String(uuid), Number(id)])),
  };
}

function cloudOf(model: CloudModel, index: AllocationIndex, usage: Usage, results: ResultSet[], priority: number): PreemptionCloud {
  const [, , , own, defaults, victims, holds, names] = results;
  const text = String(names!.rows[0]![0]);
  if (index.namesRead?.text !== text) index.namesRead = { text, ...namesOf(JSON.parse(text) as [PackedRow[], PackedRow[], PackedRow[]]) };
  const { classIdByName, classNameById, traitIdByName, aggregateIdByUuid } = index.namesRead;
  const ownPriority = new Map(own!.rows.map((r) => [String(r.uuid), Number(r.priority)]));
  const projectPriority = new Map(defaults!.rows.map((r) => [String(r.project), Number(r.priority)]));
  // What the evictable consumers and the taken usage are made of; the priority only by the priorities below it.
  const below = [...new Set([...ownPriority.values(), ...projectPriority.values()])].filter((p) => p < priority).sort((a, b) => a - b);
  const key = JSON.stringify([
    index.version,
    model.appliedSeq,
    below,
    own!.rows.map((r) => [r.uuid, r.priority]),
    defaults!.rows.map((r) => [r.project, r.priority]),
    victims!.rows.map((r) => r.uuid),
    holds!.rows.map((r) => [r.rp, r.cls, r.used]),
  ]);
  if (index.lastCloud?.key !== key) {
    const rootIdByProviderUuid = new Map<string, number>();
    for (const root of model.roots()) for (const p of model.tree(root)) rootIdByProviderUuid.set(p.uuid, root);
    const made = evictableAndTaken(index, usage, ownPriority, projectPriority, victims!, holds!, priority);
    index.lastCloud = { key, ...made, rootIdByProviderUuid, derived: {} };
  }
  const { evictable, taken, rootIdByProviderUuid, derived } = index.lastCloud;
  return {
    model,
    lookups: { classIdByName, traitIdByName, aggregateIdByUuid, rootIdByProviderUuid },
    usage,
    taken,
    evictable,
    classNameById,
    held: holds!.rows.length > 0,
    derived,
  };
}

function evictableAndTaken(
  index: AllocationIndex,
  usage: Usage,
  ownPriority: ReadonlyMap<string, number>,
  projectPriority: ReadonlyMap<string, number>,
  victims: ResultSet,
  holds: ResultSet,
  priority: number,
): { evictable: EvictableConsumer[]; taken: Usage } {
  const going = new Set(victims.rows.map((r) => String(r.uuid)));
  // What the search counts as taken: usage, less the victims already going, plus what holds hold.
  const taken: Usage =
    going.size === 0 && holds.rows.length === 0 ? usage : new Map([...usage].map(([rp, perClass]) => [rp, new Map(perClass)]));
  for (const uuid of going) for (const a of index.consumers.get(uuid)?.allocations ?? []) addTo(taken, a.providerId, a.classId, -a.used);
  for (const r of holds.rows) addTo(taken, Number(r.rp), Number(r.cls), Number(r.used));
  const evictable: EvictableConsumer[] = [];
  for (const consumer of index.consumers.values()) {
    if (consumer.project === null) continue;
    const effective = ownPriority.get(consumer.uuid) ?? projectPriority.get(consumer.project);
    if (effective === undefined || effective >= priority || going.has(consumer.uuid)) continue;
    evictable.push({
      uuid: consumer.uuid,
      project: consumer.project,
      priority: effective,
      generation: consumer.generation,
      allocations: consumer.allocations,
      uses: consumer.uses,
    });
  }
  return { evictable, taken };
}

/** Adds `units` (negative: takes them out) to what `usage` holds for the provider and class. */
export function addTo(usage: Usage, providerId: number, classId: number, units: number): void {
  let perClass = usage.get(providerId);
  if (!perClass) usage.set(providerId, (perClass = new Map()));
  perClass.set(classId, (perClass.get(classId) ?? 0) + units);
}
