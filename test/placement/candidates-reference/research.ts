// The research context of one allocation-candidates request: everything the
// in-memory search needs, loaded in a fixed number of round trips whatever
// the provider count (each round trip is a network hop at the edge):
//   1. one batch: name lookups, candidate inventories+usage, sharing anchors,
//      and, when tree conditions name the viable trees, those trees whole;
//   2. otherwise one more batch: structure, traits, aggregates and inventory
//      summaries of the trees that can anchor a candidate.
// A stable-order limit that the lowest trees cannot fill costs one more
// attempt (index.ts): 4 round trips at most, 1 or 2 as a rule.
import type { Client, InStatement, Row } from '@libsql/client';
import { capacityOf, capacitySql, usedSql, type InventoryLimits } from '../../oracle-rules/capacity.js';

export interface Inventory extends InventoryLimits {
  used: number;
}

export interface SummaryInventory {
  className: string;
  capacity: number;
  used: number;
}

export interface ProviderNode {
  id: number;
  uuid: string;
  parentId: number | null;
  rootId: number;
  traits: Set<string>;
  aggregates: Set<number>;
  /** Every inventory of the provider with its usage, for provider summaries. */
  inventories: SummaryInventory[];
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

const num = (v: unknown): number => Number(v);

/**
 * Wraps a query so the database returns its rows as one JSON array of arrays:
 * building a client Row object per row costs far more than the query itself
 * (3000 rows: ~14 ms as rows, ~2 ms packed).
 */
function packed(columns: string, inner: string): string {
  return `SELECT COALESCE(json_group_array(json_array(${columns})), '[]') FROM (${inner})`;
}

type PackedRow = (string | number | null)[];
const unpack = (rows: Row[]): PackedRow[] => JSON.parse(String(rows[0]?.[0] ?? '[]')) as PackedRow[];

function inventoryOf(row: PackedRow, offset: number): Inventory {
  return {
    total: num(row[offset]),
    reserved: num(row[offset + 1]),
    minUnit: num(row[offset + 2]),
    maxUnit: num(row[offset + 3]),
    stepSize: num(row[offset + 4]),
    allocationRatio: num(row[offset + 5]),
    used: num(row[offset + 6] ?? 0),
  };
}

export interface FirstLoad {
  lookups: Lookups;
  candidates: CandidateInventories;
  /** Trees read whole in the same round trip (viable and sharing providers' trees, when asked to preload). */
  preloaded: { roots: Set<number>; nodes: Map<number, ProviderNode> };
  /** When only the first roots were read: the highest root read (trees above it are unknown). */
  truncatedAt: number | null;
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
}

/** An inventories row `i` as inventoryOf() reads it: limits, then current usage. */
const INVENTORY_ROW = `i.total, i.reserved, i.min_unit, i.max_unit, i.step_size, i.allocation_ratio AS ratio, ${usedSql('i')} AS used`;

const SHARING_IDS = `SELECT rt.resource_provider_id FROM resource_provider_traits rt JOIN traits t ON t.id = rt.trait_id WHERE t.name = '${SHARES_TRAIT}'`;

interface CandidateSql {
  /** Extra CTEs (leading comma included). */
  ctes: string;
  /** Row sources, each binding `p` to the providers whose inventory rows are wanted. */
  sources: string[];
  /** Extra row condition. */
  where: string;
  cteArgs: string[];
  /** Bound once per source, as the condition repeats in each. */
  whereArgs: string[];
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
function candidateSql(prefilter: TreePrefilter, firstRoots: number | null): CandidateSql {
  const everyProvider: CandidateSql = { ctes: '', sources: ['resource_providers p'], where: '', cteArgs: [], whereArgs: [], viableTrees: false };
  let ctes = '';
  let args: string[] = [];
  const cteArgs = args;
  const json = (v: unknown) => { args.push(JSON.stringify(v)); return 'json_each(?)'; };
  const rootSets: string[] = [];
  for (const anyOf of prefilter.requiredAnyOf) {
    rootSets.push(`SELECT q.root_provider_id FROM resource_provider_traits qt
        JOIN traits tt ON tt.id = qt.trait_id JOIN resource_providers q ON q.id = qt.resource_provider_id
        WHERE tt.name IN (SELECT value FROM ${json(anyOf)})
      UNION SELECT r.id FROM resource_providers r WHERE r.id = r.root_provider_id AND EXISTS (
        SELECT 1 FROM resource_provider_traits st JOIN traits tt ON tt.id = st.trait_id
        WHERE st.resource_provider_id IN (${SHARING_IDS}) AND tt.name IN (SELECT value FROM ${json(anyOf)}))`);
  }
  for (const anyOf of prefilter.memberOf) {
    rootSets.push(`SELECT q.root_provider_id FROM resource_provider_aggregates qa
        JOIN placement_aggregates pa ON pa.id = qa.aggregate_id JOIN resource_providers q ON q.id = qa.resource_provider_id
        WHERE pa.uuid IN (SELECT value FROM ${json(anyOf)})`);
  }
  for (const name of prefilter.rootRequired) {
    rootSets.push(`SELECT rt.resource_provider_id FROM resource_provider_traits rt JOIN traits tt ON tt.id = rt.trait_id WHERE tt.name = ?`);
    args.push(name);
  }
  if (prefilter.everyClassInTree) {
    ctes += `, cover(class_id, lo, hi) AS MATERIALIZED (SELECT class_id, lo, hi FROM req WHERE NOT EXISTS (
        SELECT 1 FROM inventories si WHERE si.resource_class_id = req.class_id AND si.resource_provider_id IN (${SHARING_IDS})))`;
    const offers = (inv: string, need: string) =>
      `${inv}.max_unit >= ${need}.lo AND ${inv}.min_unit <= ${need}.hi AND ${capacitySql(inv)} >= ${need}.lo`;
    // Trees found through the class with the fewest inventories, then checked
    // for the others; with nothing to check (all classes shared) every tree.
    rootSets.push(`SELECT dr.root FROM (
        SELECT DISTINCT q.root_provider_id AS root FROM cover d
          CROSS JOIN inventories di ON di.resource_class_id = d.class_id
          CROSS JOIN resource_providers q ON q.id = di.resource_provider_id
        WHERE d.class_id = (SELECT c.class_id FROM cover c
            ORDER BY (SELECT count(*) FROM inventories x WHERE x.resource_class_id = c.class_id) LIMIT 1)
          AND ${offers('di', 'd')}) dr
      WHERE NOT EXISTS (SELECT 1 FROM cover c WHERE NOT EXISTS (
        SELECT 1 FROM resource_providers m CROSS JOIN inventories mi ON mi.resource_provider_id = m.id
        WHERE m.root_provider_id = dr.root AND mi.resource_class_id = c.class_id AND ${offers('mi', 'c')}))
      UNION ALL SELECT id FROM resource_providers WHERE id = root_provider_id AND NOT EXISTS (SELECT 1 FROM cover)`);
  }
  let viable = rootSets.join(' INTERSECT ');
  if (prefilter.rootForbidden.length) {
    if (!viable) viable = 'SELECT id FROM resource_providers WHERE id = root_provider_id';
    viable += ` EXCEPT SELECT rt.resource_provider_id FROM resource_provider_traits rt JOIN traits tt ON tt.id = rt.trait_id
        WHERE tt.name IN (SELECT value FROM ${json(prefilter.rootForbidden)})`;
  }
  let where = '';
  const whereArgs: string[] = [];
  args = whereArgs;
  if (prefilter.forbiddenTraits.length) {
    // A provider with a forbidden trait can never be used, sharing or not.
    where = `AND p.id NOT IN (SELECT rt.resource_provider_id FROM resource_provider_traits rt
        JOIN traits tt ON tt.id = rt.trait_id WHERE tt.name IN (SELECT value FROM ${json(prefilter.forbiddenTraits)}))`;
  }
  if (firstRoots !== null) {
    // Only the lowest viable roots: enough for a small limit, checked by the caller.
    viable = `SELECT * FROM (${viable || 'SELECT id FROM resource_providers WHERE id = root_provider_id'})
      ORDER BY 1 LIMIT ${Math.floor(firstRoots)}`;
  }
  if (!viable) return { ...everyProvider, where, whereArgs };
  return {
    ctes: `${ctes}, viable(root_id) AS MATERIALIZED (${viable})`,
    sources: [
      // CROSS JOIN pins the order: SQLite would otherwise scan every inventory of the class.
      'viable v CROSS JOIN resource_providers p ON p.root_provider_id = v.root_id',
      `(SELECT * FROM resource_providers WHERE id IN (${SHARING_IDS})) p`,
    ],
    where,
    cteArgs,
    whereArgs,
    viableTrees: true,
  };
}

/**
 * Round trip 1. `amounts` holds the smallest/largest amount per class name
 * across groups: rows that cannot fit even the smallest request stay in SQL.
 */
export async function loadCandidates(
  client: Client,
  names: { classes: string[]; traits: string[]; aggregates: string[]; inTree: string[] },
  amounts: Map<string, { smallest: number; largest: number }>,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  preloadTrees: boolean,
): Promise<FirstLoad> {
  const amountJson = JSON.stringify(Object.fromEntries([...amounts].map(([k, v]) => [k, [v.smallest, v.largest]])));
  const query = candidateSql(prefilter, firstRoots);
  // Viable trees read whole here save the trees round trip; their candidate
  // rows then come from the same inventory rows, flagged.
  const preload = preloadTrees && query.viableTrees;
  const rowSources = preload ? query.sources.slice(1) : query.sources;
  const wholeTrees = 'tree_roots t CROSS JOIN resource_providers p ON p.root_provider_id = t.root_id';
  const fitsSomeGroup = `i.max_unit >= req.lo AND i.min_unit <= req.hi AND ${capacitySql('i')} - ${usedSql('i')} >= req.lo`;
  const statements: InStatement[] = [
    { sql: 'SELECT id, name FROM resource_classes WHERE name IN (SELECT value FROM json_each(?))', args: [JSON.stringify(names.classes)] },
    { sql: 'SELECT id, name FROM traits WHERE name IN (SELECT value FROM json_each(?))', args: [JSON.stringify(names.traits)] },
    { sql: 'SELECT id, uuid FROM placement_aggregates WHERE uuid IN (SELECT value FROM json_each(?))', args: [JSON.stringify(names.aggregates)] },
    { sql: 'SELECT uuid, root_provider_id FROM resource_providers WHERE uuid IN (SELECT value FROM json_each(?))', args: [JSON.stringify(names.inTree)] },
    {
      // The materialised CTE keeps SQLite from re-reading the JSON per row.
      // Usage is summed per candidate row through the (provider, class, used)
      // index: cost follows the rows read, not the allocations in the cloud
      // (100k allocations: 14 ms this way, 36 ms summing them all first).
      sql: `WITH req(class_id, lo, hi) AS MATERIALIZED (
          SELECT rc.id, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]')
          FROM json_each(?) j JOIN resource_classes rc ON rc.name = j.key)
        ${query.ctes}${preload ? `,
        -- Trees read whole: the viable ones and those of sharing providers (their traits decide their use).
        tree_roots(root_id) AS MATERIALIZED (SELECT root_id FROM viable
          UNION SELECT root_provider_id FROM resource_providers WHERE id IN (${SHARING_IDS}))` : ''}
        SELECT json_object(
          'rows', (SELECT COALESCE(json_group_array(json_array(rp, cls, root, total, reserved, min_unit, max_unit, step_size, ratio, used)), json('[]'))
            FROM (${rowSources.map((source) => `
              SELECT i.resource_provider_id AS rp, i.resource_class_id AS cls, p.root_provider_id AS root, ${INVENTORY_ROW}
              FROM ${source}
              CROSS JOIN inventories i ON i.resource_provider_id = p.id
              CROSS JOIN req ON req.class_id = i.resource_class_id
              WHERE ${fitsSomeGroup}
                ${query.where}`).join(' UNION ALL ')})), -- a sharing provider in a viable tree comes twice; the map below keeps one
          'trees', ${preload ? `(SELECT COALESCE(json_group_array(json_array(${PROVIDER_FIELDS})), json('[]')) FROM (
              SELECT ${providerColumns('p')} FROM ${wholeTrees} ORDER BY p.id))` : 'NULL'},
          'inventories', ${preload ? `(SELECT COALESCE(json_group_array(json_array(rp, name, cls, root, total, reserved, min_unit, max_unit, step_size, ratio, used, candidate)), json('[]')) FROM (
              SELECT i.resource_provider_id AS rp, rc.name, i.resource_class_id AS cls, p.root_provider_id AS root, ${INVENTORY_ROW},
                COALESCE(${fitsSomeGroup} AND p.root_provider_id IN (SELECT root_id FROM viable) ${query.where}, 0) AS candidate
              FROM ${wholeTrees}
              CROSS JOIN inventories i ON i.resource_provider_id = p.id
              JOIN resource_classes rc ON rc.id = i.resource_class_id
              LEFT JOIN req ON req.class_id = i.resource_class_id))` : 'NULL'},
          'complete', ${preload ? '(SELECT json_group_array(root_id) FROM tree_roots)' : 'NULL'},
          'truncatedAt', ${firstRoots !== null ? '(SELECT CASE WHEN count(*) >= ' + String(Math.floor(firstRoots)) + ' THEN max(root_id) END FROM viable)' : 'NULL'})`,
      args: [amountJson, ...query.cteArgs, ...rowSources.flatMap(() => query.whereArgs), ...(preload ? query.whereArgs : [])],
    },
    {
      sql: packed('sharing_id, anchor_root', `SELECT DISTINCT mine.resource_provider_id AS sharing_id, anchor.root_provider_id AS anchor_root
        FROM resource_provider_aggregates mine
        JOIN resource_provider_aggregates other ON other.aggregate_id = mine.aggregate_id
        JOIN resource_providers anchor ON anchor.id = other.resource_provider_id
        WHERE mine.resource_provider_id IN (${SHARING_IDS})
          -- Correlated on purpose: an IN list would read every inventory of the classes.
          AND EXISTS (
            SELECT 1 FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
            WHERE i.resource_provider_id = mine.resource_provider_id AND rc.name IN (SELECT key FROM json_each(?)))`),
      args: [amountJson],
    },
  ];
  const [classes, traitRows, aggRows, treeRows, invRows, anchorRows] = await client.batch(statements, 'read');
  const lookups: Lookups = {
    classIdByName: new Map(classes!.rows.map((r) => [String(r[1]), num(r[0])])),
    traitIdByName: new Map(traitRows!.rows.map((r) => [String(r[1]), num(r[0])])),
    aggregateIdByUuid: new Map(aggRows!.rows.map((r) => [String(r[1]), num(r[0])])),
    rootIdByProviderUuid: new Map(treeRows!.rows.map((r) => [String(r[0]), num(r[1])])),
  };
  const byProvider = new Map<number, Map<number, Inventory>>();
  const rootOf = new Map<number, number>();
  const scan = JSON.parse(String(invRows!.rows[0]?.[0] ?? '{}')) as {
    rows: PackedRow[]; trees: PackedRow[] | null; inventories: PackedRow[] | null; complete: number[] | null; truncatedAt: number | null;
  };
  const addCandidate = (rpId: number, classId: number, root: number, inv: Inventory) => {
    let perClass = byProvider.get(rpId);
    if (!perClass) byProvider.set(rpId, (perClass = new Map()));
    perClass.set(classId, inv);
    rootOf.set(rpId, root);
  };
  for (const row of scan.rows) addCandidate(num(row[0]), num(row[1]), num(row[2]), inventoryOf(row, 3));
  const nodes = new Map<number, ProviderNode>();
  for (const row of scan.trees ?? []) nodes.set(num(row[0]), nodeOf(row));
  for (const row of scan.inventories ?? []) {
    const inv = inventoryOf(row, 4);
    nodes.get(num(row[0]))?.inventories.push({ className: String(row[1]), capacity: capacityOf(inv), used: inv.used });
    if (row[11]) addCandidate(num(row[0]), num(row[2]), num(row[3]), inv);
  }
  const anchorsOfSharing = new Map<number, Set<number>>();
  for (const row of unpack(anchorRows!.rows)) {
    const sharing = num(row[0]);
    let anchors = anchorsOfSharing.get(sharing);
    if (!anchors) anchorsOfSharing.set(sharing, (anchors = new Set()));
    anchors.add(num(row[1]));
  }
  return {
    lookups,
    candidates: { byProvider, rootOf, anchorsOfSharing },
    preloaded: { roots: new Set(scan.complete ?? []), nodes },
    truncatedAt: scan.truncatedAt ?? null,
  };
}

/** A provider's structure, traits (trait id order, as upstream lists them) and aggregate ids. */
const PROVIDER_FIELDS = 'id, uuid, parent_provider_id, root_provider_id, traits, aggs';
const providerColumns = (p: string) => `${p}.id, ${p}.uuid, ${p}.parent_provider_id, ${p}.root_provider_id,
  (SELECT group_concat(name) FROM (SELECT t.name FROM resource_provider_traits rt JOIN traits t ON t.id = rt.trait_id
    WHERE rt.resource_provider_id = ${p}.id ORDER BY rt.trait_id)) AS traits,
  (SELECT group_concat(ra.aggregate_id) FROM resource_provider_aggregates ra WHERE ra.resource_provider_id = ${p}.id) AS aggs`;

function nodeOf(row: PackedRow): ProviderNode {
  return {
    id: num(row[0]),
    uuid: String(row[1]),
    parentId: row[2] === null ? null : num(row[2]),
    rootId: num(row[3]),
    traits: new Set(row[4] === null ? [] : String(row[4]).split(',')),
    aggregates: new Set(row[5] === null ? [] : String(row[5]).split(',').map(Number)),
    inventories: [],
  };
}

/** Round trip 2: every provider of the given trees, with its traits, aggregate ids and inventories. */
export async function loadTrees(client: Client, rootIds: Iterable<number>): Promise<Map<number, ProviderNode>> {
  const roots = JSON.stringify([...rootIds]);
  // Two statements (one batch): correlated JSON per provider cost twice as
  // much as flat rows.
  const [providerRows, inventoryRows] = await client.batch([
    {
      sql: packed(PROVIDER_FIELDS, `SELECT ${providerColumns('p')}
        FROM resource_providers p
        WHERE p.root_provider_id IN (SELECT value FROM json_each(?))
        ORDER BY p.id`),
      args: [roots],
    },
    {
      // Summaries need only capacity and usage; the search reads limits from round trip 1.
      sql: packed('rp, name, capacity, used', `SELECT i.resource_provider_id AS rp, rc.name,
          ${capacitySql('i')} AS capacity,
          ${usedSql('i')} AS used
        FROM resource_providers p
        JOIN inventories i ON i.resource_provider_id = p.id
        JOIN resource_classes rc ON rc.id = i.resource_class_id
        WHERE p.root_provider_id IN (SELECT value FROM json_each(?))`),
      args: [roots],
    },
  ], 'read');
  const nodes = new Map<number, ProviderNode>();
  for (const row of unpack(providerRows!.rows)) nodes.set(num(row[0]), nodeOf(row));
  for (const row of unpack(inventoryRows!.rows)) {
    nodes.get(num(row[0]))?.inventories.push({ className: String(row[1]), capacity: num(row[2]), used: num(row[3]) });
  }
  return nodes;
}
