// The research context of one allocation-candidates request: everything the
// in-memory search needs, loaded in a fixed number of round trips whatever
// the provider count (each round trip is a network hop at the edge):
//   1. one batch: name lookups, candidate inventories+usage, sharing anchors,
//      and, when tree conditions name the viable trees, those trees whole;
//   2. otherwise one more batch: structure, traits, aggregates and inventory
//      summaries of the trees that can anchor a candidate.
// A stable-order limit that the lowest trees cannot fill costs one more
// attempt (index.ts): 4 round trips at most, 1 or 2 as a rule.
import type { InStatement, ResultSet, Row } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { capacityOf, capacitySql, usedSql, type InventoryLimits } from '../capacity.js';
import { candidateCountersOf, candidateCountersStatement, type LoadedCounters } from '../../ext/counters/sql.js';
import { columns, num, packedArray, SqlParams, type PackedRow } from './sql.js';
import { taintsOf, taintStatement, type ProviderTaints } from './taints.js';
import { AGG, INV, RC, RP, RP_AGG, RP_TRAIT, TRAIT } from '../../db/columns.js';

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

export const usedOf = (usage: Usage, providerId: number, classId: number): number => usage.get(providerId)?.get(classId) ?? 0;

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
  /** The uuid as a JSON string's UTF-8 bytes, when kept with the node (the trees kept in memory encode it once). */
  uuidJson?: Uint8Array;
  /**
   * The node's provider summary as JSON bytes around its usage figures, for
   * one presentation (present/json.ts fills it; the trees kept in memory
   * reuse it across requests, since a change to a tree replaces its nodes).
   */
  summaryTemplate?: SummaryTemplate | null;
}

/** `parts[0] + used[0] + parts[1] + ... + parts[n]` (UTF-8), the used figures being those of `classIds`. */
export interface SummaryTemplate {
  shape: string;
  parts: Uint8Array[];
  classIds: number[];
}

export interface Lookups {
  classIdByName: Map<string, number>;
  traitIdByName: Map<string, number>;
  aggregateIdByUuid: Map<string, number>;
  /** in_tree uuid -> root provider id of that tree. */
  rootIdByProviderUuid: Map<string, number>;
  /** Excluding device taints (extension, taints.ts), read in the same batch. */
  taints: ProviderTaints;
}

export interface CandidateInventories {
  /** provider id -> class id -> inventory, only where some group's amount could fit. */
  byProvider: Map<number, Map<number, Inventory>>;
  rootOf: Map<number, number>;
  /** sharing provider id -> roots of the trees it shares with (its own tree included). */
  anchorsOfSharing: Map<number, Set<number>>;
  /** Shared counters (extension) of the providers where a requested class consumes one, read in the research batch; empty without counters. */
  counters: Map<number, LoadedCounters>;
}

export const SHARES_TRAIT = 'MISC_SHARES_VIA_AGGREGATE';

/** Inventory limits then current usage: the columns inventoryOf() decodes. */
const LIMITS = ['total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'ratio', 'used'] as const;
type LimitColumn = (typeof LIMITS)[number];

function inventoryOf(row: PackedRow, at: Readonly<Record<LimitColumn, number>>): Inventory {
  return {
    total: num(row[at.total]),
    reserved: num(row[at.reserved]),
    minUnit: num(row[at.min_unit]),
    maxUnit: num(row[at.max_unit]),
    stepSize: num(row[at.step_size]),
    allocationRatio: num(row[at.ratio]),
    used: num(row[at.used] ?? 0),
  };
}

/** A candidate inventory row: where it is, then its limits and usage. */
const CANDIDATE_ROW = columns(['rp', 'cls', 'root', ...LIMITS]);
/** An inventory row of a tree read whole: also its class name and whether it may serve a group. */
const TREE_INVENTORY_ROW = columns(['rp', 'name', 'cls', 'root', ...LIMITS, 'candidate']);
/** A provider of a tree read whole. */
const PROVIDER_ROW = columns(['id', 'uuid', 'parent_provider_id', 'root_provider_id', 'traits', 'aggs']);
/** A provider's inventory as summaries show it. */
const SUMMARY_ROW = columns(['rp', 'cls', 'name', 'capacity', 'used']);
/** A sharing provider and the root of a tree it shares with. */
const ANCHOR_ROW = columns(['sharing_id', 'anchor_root']);

/** The request's names looked up: four statements of the first read batch, read back by lookupsOf(). */
export function lookupStatements(names: { classes: string[]; traits: string[]; aggregates: string[]; inTree: string[] }): InStatement[] {
  const nameLookup = (sql: string, values: string[]): InStatement => ({ sql, args: { names: JSON.stringify(values) } });
  return [
    nameLookup(
      `SELECT ${RC.id}, ${RC.name} FROM resource_classes WHERE ${RC.name} IN (SELECT value FROM json_each(:names))`,
      names.classes,
    ),
    nameLookup(`SELECT ${TRAIT.id}, ${TRAIT.name} FROM traits WHERE ${TRAIT.name} IN (SELECT value FROM json_each(:names))`, names.traits),
    nameLookup(
      `SELECT ${AGG.id}, ${AGG.uuid} FROM placement_aggregates WHERE ${AGG.uuid} IN (SELECT value FROM json_each(:names))`,
      names.aggregates,
    ),
    nameLookup(
      `SELECT ${RP.uuid}, ${RP.rootProviderId} FROM resource_providers WHERE ${RP.uuid} IN (SELECT value FROM json_each(:names))`,
      names.inTree,
    ),
  ];
}

export function lookupsOf([classes, traits, aggregates, trees]: ResultSet[]): Lookups {
  return {
    classIdByName: new Map(classes!.rows.map((r) => [String(r.name), Number(r.id)])),
    traitIdByName: new Map(traits!.rows.map((r) => [String(r.name), Number(r.id)])),
    aggregateIdByUuid: new Map(aggregates!.rows.map((r) => [String(r.uuid), Number(r.id)])),
    rootIdByProviderUuid: new Map(trees!.rows.map((r) => [String(r.uuid), Number(r.root_provider_id)])),
    taints: new Map(),
  };
}

/** A packed result: one row, one column holding a JSON array of row arrays. */
const unpack = (rows: Row[]): PackedRow[] => JSON.parse(String(rows[0]?.[0] ?? '[]')) as PackedRow[];

export interface FirstLoad {
  lookups: Lookups;
  candidates: CandidateInventories;
  /** Trees read whole in the same round trip (viable and sharing providers' trees, when asked to preload). */
  preloaded: { roots: Set<number>; nodes: Map<number, ProviderNode> };
  /** When only the first roots were read: the highest root read (trees above it are unknown). */
  truncatedAt: number | null;
  /** Usage of the trees read whole (loadTrees adds to it). */
  usage: Usage;
}

/** A research pass: its first load, and a loader for trees outside it (the search asks as it reaches them). */
export interface Research {
  first: FirstLoad;
  loadTrees(roots: number[]): Promise<Map<number, ProviderNode>>;
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
   * ext_first_of (first-of.ts): the classes of each variant; a tree must
   * offer every class of one of them (that no sharing provider offers).
   * Applied by the trees-in-memory engine; SQL alone leaves it to the search.
   */
  someClassSetInTree?: string[][];
}

/** An inventories row `i` as inventoryOf() reads it: limits, then current usage. */
const INVENTORY_ROW = `i.${INV.total}, i.${INV.reserved}, i.${INV.minUnit}, i.${INV.maxUnit}, i.${INV.stepSize}, i.${INV.allocationRatio} AS ratio, ${usedSql('i')} AS used`;

const SHARING_IDS = `SELECT rt.${RP_TRAIT.resourceProviderId} FROM resource_provider_traits rt JOIN traits t ON t.${TRAIT.id} = rt.${RP_TRAIT.traitId} WHERE t.${TRAIT.name} = '${SHARES_TRAIT}'`;

interface CandidateSql {
  /** Extra CTEs (leading comma included). */
  ctes: string;
  /** Row sources, each binding `p` to the providers whose inventory rows are wanted. */
  sources: string[];
  /** Extra row condition (its parameters are bound once, however often it repeats). */
  where: string;
  /** sources[0] is every provider of the viable trees (and sources[1] the sharing providers). */
  viableTrees: boolean;
}

/**
 * With tree conditions, the viable roots are computed first (set
 * intersections over small indexed tables) and drive the inventory scan, so
 * hopeless trees are never read; sharing providers are always read. Several
 * groups prune by class: at N=10,000 flat nodes plus 200 nested trees, a
 * VCPU + VF request reads 200 trees instead of every node's inventory.
 */
function candidateSql(prefilter: TreePrefilter, firstRoots: number | null, params: SqlParams): CandidateSql {
  const everyProvider: CandidateSql = { ctes: '', sources: ['resource_providers p'], where: '', viableTrees: false };
  let ctes = '';
  const json = (v: unknown) => `json_each(${params.json(v)})`;
  // Each condition twice: as the set of roots that meet it (computed once,
  // for a full answer), and as a test of one root `r` (for the lowest roots
  // only: SQLite walks roots in id order and stops at the limit, so the cost
  // follows the roots read, not the cloud: 100k roots, ~0.3 ms instead of ~230 ms).
  const rootSets: string[] = [];
  const rootTests: string[] = [];
  for (const anyOf of prefilter.requiredAnyOf) {
    const names = json(anyOf);
    rootSets.push(`SELECT q.${RP.rootProviderId} FROM resource_provider_traits qt
        JOIN traits tt ON tt.${TRAIT.id} = qt.${RP_TRAIT.traitId} JOIN resource_providers q ON q.${RP.id} = qt.${RP_TRAIT.resourceProviderId}
        WHERE tt.${TRAIT.name} IN (SELECT value FROM ${names})
      UNION SELECT r.${RP.id} FROM resource_providers r WHERE r.${RP.id} = r.${RP.rootProviderId} AND EXISTS (
        SELECT 1 FROM resource_provider_traits st JOIN traits tt ON tt.${TRAIT.id} = st.${RP_TRAIT.traitId}
        WHERE st.${RP_TRAIT.resourceProviderId} IN (${SHARING_IDS}) AND tt.${TRAIT.name} IN (SELECT value FROM ${names}))`);
    rootTests.push(`(EXISTS (SELECT 1 FROM resource_providers q CROSS JOIN resource_provider_traits qt ON qt.${RP_TRAIT.resourceProviderId} = q.${RP.id}
        WHERE q.${RP.rootProviderId} = r.id AND qt.${RP_TRAIT.traitId} IN (SELECT ${TRAIT.id} FROM traits WHERE ${TRAIT.name} IN (SELECT value FROM ${names})))
      OR EXISTS (SELECT 1 FROM resource_provider_traits st JOIN traits tt ON tt.${TRAIT.id} = st.${RP_TRAIT.traitId}
        WHERE st.${RP_TRAIT.resourceProviderId} IN (${SHARING_IDS}) AND tt.${TRAIT.name} IN (SELECT value FROM ${names})))`);
  }
  for (const anyOf of prefilter.memberOf) {
    const uuids = json(anyOf);
    rootSets.push(`SELECT q.${RP.rootProviderId} FROM resource_provider_aggregates qa
        JOIN placement_aggregates pa ON pa.${AGG.id} = qa.${RP_AGG.aggregateId} JOIN resource_providers q ON q.${RP.id} = qa.${RP_AGG.resourceProviderId}
        WHERE pa.${AGG.uuid} IN (SELECT value FROM ${uuids})`);
    rootTests.push(`EXISTS (SELECT 1 FROM resource_providers q CROSS JOIN resource_provider_aggregates qa ON qa.${RP_AGG.resourceProviderId} = q.${RP.id}
        WHERE q.${RP.rootProviderId} = r.id AND qa.${RP_AGG.aggregateId} IN (SELECT ${AGG.id} FROM placement_aggregates WHERE ${AGG.uuid} IN (SELECT value FROM ${uuids})))`);
  }
  for (const name of prefilter.rootRequired) {
    const trait = params.bind(name);
    rootSets.push(
      `SELECT rt.${RP_TRAIT.resourceProviderId} FROM resource_provider_traits rt JOIN traits tt ON tt.${TRAIT.id} = rt.${RP_TRAIT.traitId} WHERE tt.${TRAIT.name} = ${trait}`,
    );
    rootTests.push(`EXISTS (SELECT 1 FROM resource_provider_traits rt JOIN traits tt ON tt.${TRAIT.id} = rt.${RP_TRAIT.traitId}
        WHERE rt.${RP_TRAIT.resourceProviderId} = r.id AND tt.${TRAIT.name} = ${trait})`);
  }
  if (prefilter.everyClassInTree) {
    ctes += `, cover(class_id, lo, hi) AS MATERIALIZED (SELECT class_id, lo, hi FROM req WHERE NOT EXISTS (
        SELECT 1 FROM inventories si WHERE si.${INV.resourceClassId} = req.class_id AND si.${INV.resourceProviderId} IN (${SHARING_IDS})))`;
    const offers = (inv: string, need: string) =>
      `${inv}.${INV.maxUnit} >= ${need}.lo AND ${inv}.${INV.minUnit} <= ${need}.hi AND ${capacitySql(inv)} >= ${need}.lo`;
    // Trees found through the class with the fewest inventories, then checked
    // for the others; with nothing to check (all classes shared) every tree.
    rootSets.push(`SELECT dr.root FROM (
        SELECT DISTINCT q.${RP.rootProviderId} AS root FROM cover d
          CROSS JOIN inventories di ON di.${INV.resourceClassId} = d.class_id
          CROSS JOIN resource_providers q ON q.${RP.id} = di.${INV.resourceProviderId}
        WHERE d.class_id = (SELECT c.class_id FROM cover c
            ORDER BY (SELECT count(*) FROM inventories x WHERE x.${INV.resourceClassId} = c.class_id) LIMIT 1)
          AND ${offers('di', 'd')}) dr
      WHERE NOT EXISTS (SELECT 1 FROM cover c WHERE NOT EXISTS (
        SELECT 1 FROM resource_providers m CROSS JOIN inventories mi ON mi.${INV.resourceProviderId} = m.${RP.id}
        WHERE m.${RP.rootProviderId} = dr.root AND mi.${INV.resourceClassId} = c.class_id AND ${offers('mi', 'c')}))
      UNION ALL SELECT ${RP.id} FROM resource_providers WHERE ${RP.id} = ${RP.rootProviderId} AND NOT EXISTS (SELECT 1 FROM cover)`);
    rootTests.push(`r.id IN (${rootSets[rootSets.length - 1]!})`);
  }
  let viable = rootSets.join(' INTERSECT ');
  if (prefilter.rootForbidden.length) {
    const forbidden = json(prefilter.rootForbidden);
    if (!viable) viable = `SELECT ${RP.id} FROM resource_providers WHERE ${RP.id} = ${RP.rootProviderId}`;
    viable += ` EXCEPT SELECT rt.${RP_TRAIT.resourceProviderId} FROM resource_provider_traits rt JOIN traits tt ON tt.${TRAIT.id} = rt.${RP_TRAIT.traitId}
        WHERE tt.${TRAIT.name} IN (SELECT value FROM ${forbidden})`;
    rootTests.push(`NOT EXISTS (SELECT 1 FROM resource_provider_traits rt JOIN traits tt ON tt.${TRAIT.id} = rt.${RP_TRAIT.traitId}
        WHERE rt.${RP_TRAIT.resourceProviderId} = r.id AND tt.${TRAIT.name} IN (SELECT value FROM ${forbidden}))`);
  }
  let where = '';
  if (prefilter.forbiddenTraits.length) {
    // A provider with a forbidden trait can never be used, sharing or not.
    where = `AND p.${RP.id} NOT IN (SELECT rt.${RP_TRAIT.resourceProviderId} FROM resource_provider_traits rt
        JOIN traits tt ON tt.${TRAIT.id} = rt.${RP_TRAIT.traitId} WHERE tt.${TRAIT.name} IN (SELECT value FROM ${json(prefilter.forbiddenTraits)}))`;
  }
  if (firstRoots !== null) {
    // Only the lowest viable roots: enough for a small limit, checked by the caller.
    viable = `SELECT r.${RP.id} FROM resource_providers r WHERE r.${RP.id} = r.${RP.rootProviderId}${rootTests
      .map(
        (test) => `
        AND ${test}`,
      )
      .join('')}
      ORDER BY r.${RP.id} LIMIT ${Math.floor(firstRoots)}`;
  }
  if (!viable) return { ...everyProvider, where };
  return {
    ctes: `${ctes}, viable(root_id) AS MATERIALIZED (${viable})`,
    sources: [
      // CROSS JOIN pins the order: SQLite would otherwise scan every inventory of the class.
      `viable v CROSS JOIN resource_providers p ON p.${RP.rootProviderId} = v.root_id`,
      `(SELECT * FROM resource_providers WHERE ${RP.id} IN (${SHARING_IDS})) p`,
    ],
    where,
    viableTrees: true,
  };
}

/**
 * Round trip 1. `amounts` holds the smallest/largest amount per class name
 * across groups: rows that cannot fit even the smallest request stay in SQL.
 */
export async function loadCandidates(
  reader: BatchReader,
  names: { classes: string[]; traits: string[]; aggregates: string[]; inTree: string[] },
  amounts: Map<string, { smallest: number; largest: number }>,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  preloadTrees: boolean,
): Promise<FirstLoad> {
  const params = new SqlParams();
  // The first statement binds the amounts; the sharing-anchors statement names them again.
  const amountJson = JSON.stringify(Object.fromEntries([...amounts].map(([k, v]) => [k, [v.smallest, v.largest]])));
  const amountsParam = params.bind(amountJson);
  const query = candidateSql(prefilter, firstRoots, params);
  // Viable trees read whole here save the trees round trip; their candidate
  // rows then come from the same inventory rows, flagged.
  const preload = preloadTrees && query.viableTrees;
  const rowSources = preload ? query.sources.slice(1) : query.sources;
  const wholeTrees = `tree_roots t CROSS JOIN resource_providers p ON p.${RP.rootProviderId} = t.root_id`;
  const fitsSomeGroup = `i.${INV.maxUnit} >= req.lo AND i.${INV.minUnit} <= req.hi AND ${capacitySql('i')} - ${usedSql('i')} >= req.lo`;
  const statements: InStatement[] = [
    ...lookupStatements(names),
    {
      // The materialised CTE keeps SQLite from re-reading the JSON per row.
      // Usage is summed per candidate row through the (provider, class, used)
      // index: cost follows the rows read, not the allocations in the cloud
      // (100k allocations: 14 ms this way, 36 ms summing them all first).
      sql: `WITH req(class_id, lo, hi) AS MATERIALIZED (
          SELECT rc.${RC.id}, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]')
          FROM json_each(${amountsParam}) j JOIN resource_classes rc ON rc.${RC.name} = j.key)
        ${query.ctes}${
          preload
            ? `,
        -- Trees read whole: the viable ones and those of sharing providers (their traits decide their use).
        tree_roots(root_id) AS MATERIALIZED (SELECT root_id FROM viable
          UNION SELECT ${RP.rootProviderId} FROM resource_providers WHERE ${RP.id} IN (${SHARING_IDS}))`
            : ''
        }
        SELECT json_object(
          'rows', (SELECT ${packedArray(CANDIDATE_ROW)}
            FROM (${rowSources
              .map(
                (source) => `
              SELECT i.${INV.resourceProviderId} AS rp, i.${INV.resourceClassId} AS cls, p.${RP.rootProviderId} AS root, ${INVENTORY_ROW}
              FROM ${source}
              CROSS JOIN inventories i ON i.${INV.resourceProviderId} = p.${RP.id}
              CROSS JOIN req ON req.class_id = i.${INV.resourceClassId}
              WHERE ${fitsSomeGroup}
                ${query.where}`,
              )
              .join(' UNION ALL ')})), -- a sharing provider in a viable tree comes twice; the map below keeps one
          'trees', ${
            preload
              ? `(SELECT ${packedArray(PROVIDER_ROW)} FROM (
              SELECT ${providerColumns('p')} FROM ${wholeTrees} ORDER BY p.${RP.id}))`
              : 'NULL'
          },
          'inventories', ${
            preload
              ? `(SELECT ${packedArray(TREE_INVENTORY_ROW)} FROM (
              SELECT i.${INV.resourceProviderId} AS rp, rc.${RC.name}, i.${INV.resourceClassId} AS cls, p.${RP.rootProviderId} AS root, ${INVENTORY_ROW},
                COALESCE(${fitsSomeGroup} AND p.${RP.rootProviderId} IN (SELECT root_id FROM viable) ${query.where}, 0) AS candidate
              FROM ${wholeTrees}
              CROSS JOIN inventories i ON i.${INV.resourceProviderId} = p.${RP.id}
              JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
              LEFT JOIN req ON req.class_id = i.${INV.resourceClassId}))`
              : 'NULL'
          },
          'complete', ${preload ? '(SELECT json_group_array(root_id) FROM tree_roots)' : 'NULL'},
          'truncatedAt', ${firstRoots !== null ? `(SELECT CASE WHEN count(*) >= ${String(Math.floor(firstRoots))} THEN max(root_id) END FROM viable)` : 'NULL'})`,
      args: params.args,
    },
    {
      sql: `SELECT ${packedArray(ANCHOR_ROW)} FROM (SELECT DISTINCT mine.${RP_AGG.resourceProviderId} AS sharing_id, anchor.${RP.rootProviderId} AS anchor_root
        FROM resource_provider_aggregates mine
        JOIN resource_provider_aggregates other ON other.${RP_AGG.aggregateId} = mine.${RP_AGG.aggregateId}
        JOIN resource_providers anchor ON anchor.${RP.id} = other.${RP_AGG.resourceProviderId}
        WHERE mine.${RP_AGG.resourceProviderId} IN (${SHARING_IDS})
          -- Correlated on purpose: an IN list would read every inventory of the classes.
          AND EXISTS (
            SELECT 1 FROM inventories i JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
            WHERE i.${INV.resourceProviderId} = mine.${RP_AGG.resourceProviderId} AND rc.${RC.name} IN (SELECT key FROM json_each(:amounts))))`,
      args: { amounts: amountJson },
    },
  ];
  statements.push(candidateCountersStatement(names.classes), taintStatement());
  const [classes, traitRows, aggRows, treeRows, invRows, anchorRows, counterRows, taintRows] = await reader.readBatch(statements);
  const lookups = lookupsOf([classes!, traitRows!, aggRows!, treeRows!]);
  lookups.taints = taintsOf(taintRows);
  const byProvider = new Map<number, Map<number, Inventory>>();
  const rootOf = new Map<number, number>();
  const scan = JSON.parse(String(invRows!.rows[0]?.[0] ?? '{}')) as {
    rows: PackedRow[];
    trees: PackedRow[] | null;
    inventories: PackedRow[] | null;
    complete: number[] | null;
    truncatedAt: number | null;
  };
  const addCandidate = (rpId: number, classId: number, root: number, inv: Inventory) => {
    let perClass = byProvider.get(rpId);
    if (!perClass) byProvider.set(rpId, (perClass = new Map()));
    perClass.set(classId, inv);
    rootOf.set(rpId, root);
  };
  const row = CANDIDATE_ROW.at;
  for (const r of scan.rows) addCandidate(num(r[row.rp]), num(r[row.cls]), num(r[row.root]), inventoryOf(r, row));
  const nodes = new Map<number, ProviderNode>();
  const usage: Usage = new Map();
  for (const r of scan.trees ?? []) {
    const node = nodeOf(r);
    nodes.set(node.id, node);
  }
  const inv = TREE_INVENTORY_ROW.at;
  for (const r of scan.inventories ?? []) {
    const inventory = inventoryOf(r, inv);
    const node = nodes.get(num(r[inv.rp]));
    if (node) {
      node.inventories.push({ classId: num(r[inv.cls]), className: String(r[inv.name]), capacity: capacityOf(inventory) });
      addUsage(usage, node.id, num(r[inv.cls]), inventory.used);
    }
    if (r[inv.candidate]) addCandidate(num(r[inv.rp]), num(r[inv.cls]), num(r[inv.root]), inventory);
  }
  const anchorsOfSharing = new Map<number, Set<number>>();
  const anchor = ANCHOR_ROW.at;
  for (const r of unpack(anchorRows!.rows)) {
    const sharing = num(r[anchor.sharing_id]);
    let anchors = anchorsOfSharing.get(sharing);
    if (!anchors) anchorsOfSharing.set(sharing, (anchors = new Set()));
    anchors.add(num(r[anchor.anchor_root]));
  }
  return {
    lookups,
    candidates: { byProvider, rootOf, anchorsOfSharing, counters: candidateCountersOf(counterRows) },
    preloaded: { roots: new Set(scan.complete ?? []), nodes },
    truncatedAt: scan.truncatedAt ?? null,
    usage,
  };
}

/** A provider's structure, traits (trait id order, as upstream lists them) and aggregate ids, as PROVIDER_ROW. */
const providerColumns = (p: string) => `${p}.${RP.id}, ${p}.${RP.uuid}, ${p}.${RP.parentProviderId}, ${p}.${RP.rootProviderId},
  (SELECT group_concat(name) FROM (SELECT t.${TRAIT.name} FROM resource_provider_traits rt JOIN traits t ON t.${TRAIT.id} = rt.${RP_TRAIT.traitId}
    WHERE rt.${RP_TRAIT.resourceProviderId} = ${p}.${RP.id} ORDER BY rt.${RP_TRAIT.traitId})) AS traits,
  (SELECT group_concat(ra.${RP_AGG.aggregateId}) FROM resource_provider_aggregates ra WHERE ra.${RP_AGG.resourceProviderId} = ${p}.${RP.id}) AS aggs`;

function nodeOf(row: PackedRow): ProviderNode {
  const at = PROVIDER_ROW.at;
  const traits = row[at.traits];
  const aggregates = row[at.aggs];
  return {
    id: num(row[at.id]),
    uuid: String(row[at.uuid]),
    parentId: row[at.parent_provider_id] === null ? null : num(row[at.parent_provider_id]),
    rootId: num(row[at.root_provider_id]),
    traits: new Set(traits === null ? [] : String(traits).split(',')),
    aggregates: new Set(aggregates === null ? [] : String(aggregates).split(',').map(Number)),
    inventories: [],
  };
}

/** Round trip 2: every provider of the given trees, with its traits, aggregate ids and inventories; their usage goes into `usage`. */
export async function loadTrees(reader: BatchReader, rootIds: Iterable<number>, usage: Usage): Promise<Map<number, ProviderNode>> {
  const args = { roots: JSON.stringify([...rootIds]) };
  // Two statements (one batch): correlated JSON per provider cost twice as
  // much as flat rows.
  const [providerRows, inventoryRows] = await reader.readBatch([
    {
      sql: `SELECT ${packedArray(PROVIDER_ROW)} FROM (SELECT ${providerColumns('p')}
        FROM resource_providers p
        WHERE p.${RP.rootProviderId} IN (SELECT value FROM json_each(:roots))
        ORDER BY p.${RP.id})`,
      args,
    },
    {
      // Summaries need only capacity and usage; the search reads limits from round trip 1.
      sql: `SELECT ${packedArray(SUMMARY_ROW)} FROM (SELECT i.${INV.resourceProviderId} AS rp, i.${INV.resourceClassId} AS cls, rc.${RC.name},
          ${capacitySql('i')} AS capacity,
          ${usedSql('i')} AS used
        FROM resource_providers p
        JOIN inventories i ON i.${INV.resourceProviderId} = p.${RP.id}
        JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
        WHERE p.${RP.rootProviderId} IN (SELECT value FROM json_each(:roots)))`,
      args,
    },
  ]);
  const nodes = new Map<number, ProviderNode>();
  for (const row of unpack(providerRows!.rows)) {
    const node = nodeOf(row);
    nodes.set(node.id, node);
  }
  const at = SUMMARY_ROW.at;
  for (const row of unpack(inventoryRows!.rows)) {
    const node = nodes.get(num(row[at.rp]));
    if (!node) continue;
    node.inventories.push({ classId: num(row[at.cls]), className: String(row[at.name]), capacity: num(row[at.capacity]) });
    addUsage(usage, node.id, num(row[at.cls]), num(row[at.used]));
  }
  return nodes;
}
