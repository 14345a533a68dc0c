// Which trees a request loads when the cloud is over the tree cache's size
// (or the cache is off): one statement that a cheap, necessary-only SQL
// prefilter drives, returning those trees whole with their usage, to fill the
// request's own partial model (cloud-model.ts). The prefilter never decides:
// it only leaves out trees that cannot matter, and the rules over the model
// (rules.ts) decide, as they do over the cache.
//
// The trees loaded: the viable ones (every condition below is necessary,
// never sufficient), the trees of sharing providers (their traits decide
// their use) and the trees that share an aggregate with a sharing provider
// offering a requested class (its anchors).
// Each tree condition is written twice: as the set of roots that meet it
// (computed once, for a full answer: intersections over small indexed
// tables), and as a test of one root `r` (a stable-order limit reads only the
// lowest viable roots: SQLite walks roots in id order and stops there, so the
// cost follows the roots read, not the cloud's size).
import type { InStatement } from '@libsql/client';
import { capacitySql, usedSql } from '../capacity.js';
import { INVENTORY_ROW, inventoryColumns, PROVIDER_ROW, providerColumns, SHARES_TRAIT, type TreePrefilter } from './cloud-model.js';
import { packedArray, SqlParams } from '../../db/rows.js';
import { AGG, INV, RC, RP, RP_AGG, RP_TRAIT, TRAIT } from '../../db/columns.js';

const SHARING_IDS = `SELECT rt.${RP_TRAIT.resourceProviderId} FROM resource_provider_traits rt JOIN traits t ON t.${TRAIT.id} = rt.${RP_TRAIT.traitId} WHERE t.${TRAIT.name} = '${SHARES_TRAIT}'`;

/** The viable roots as SQL (empty: every tree), and the CTEs it needs. */
function viableSql(prefilter: TreePrefilter, firstRoots: number | null, params: SqlParams): { ctes: string; viable: string } {
  let ctes = '';
  const json = (v: unknown) => `json_each(${params.json(v)})`;
  const rootSets: string[] = [];
  const rootTests: string[] = [];
  for (const anyOf of prefilter.requiredAnyOf) {
    const names = json(anyOf);
    // A sharing provider with one of the traits could satisfy any tree.
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
    // The classes no sharing provider offers: a tree must offer each with room for the smallest amount.
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
  return { ctes, viable };
}

/**
 * The trees a request loads, whole, with their inventories' current usage:
 * one statement, one JSON value (`providers`, `inventories` as packed rows of
 * cloud-model.ts; `truncatedAt`: with `firstRoots`, the highest viable root
 * read when there may be more above it). `amounts`: smallest and largest
 * amount per requested class name.
 */
export function treesStatement(
  prefilter: TreePrefilter,
  amounts: ReadonlyMap<string, { smallest: number; largest: number }>,
  firstRoots: number | null,
): InStatement {
  const params = new SqlParams();
  const amountsParam = params.json(Object.fromEntries([...amounts].map(([k, v]) => [k, [v.smallest, v.largest]])));
  const { ctes, viable } = viableSql(prefilter, firstRoots, params);
  const truncated =
    firstRoots === null ? 'NULL' : `(SELECT CASE WHEN count(*) >= ${String(Math.floor(firstRoots))} THEN max(root_id) END FROM viable)`;
  // Anchors above a truncated viable set cannot be searched yet: they are not read.
  const belowCut = firstRoots === null ? '' : `AND anchor.${RP.rootProviderId} <= COALESCE(${truncated}, anchor.${RP.rootProviderId})`;
  // With no tree condition and no limit, every tree: read straight, without a root list.
  const everyTree = !viable;
  const trees = everyTree
    ? ''
    : `,
    viable(root_id) AS MATERIALIZED (${viable}),
    tree_roots(root_id) AS MATERIALIZED (SELECT root_id FROM viable
      UNION SELECT ${RP.rootProviderId} FROM resource_providers WHERE ${RP.id} IN (${SHARING_IDS})
      UNION SELECT anchor.${RP.rootProviderId} FROM resource_provider_aggregates mine
        JOIN resource_provider_aggregates other ON other.${RP_AGG.aggregateId} = mine.${RP_AGG.aggregateId}
        JOIN resource_providers anchor ON anchor.${RP.id} = other.${RP_AGG.resourceProviderId}
        WHERE mine.${RP_AGG.resourceProviderId} IN (${SHARING_IDS}) ${belowCut}
          -- Correlated on purpose: an IN list would read every inventory of the classes.
          AND EXISTS (SELECT 1 FROM inventories si WHERE si.${INV.resourceProviderId} = mine.${RP_AGG.resourceProviderId}
            AND si.${INV.resourceClassId} IN (SELECT class_id FROM req)))`;
  // CROSS JOIN pins the order: SQLite would otherwise scan every provider.
  const from = everyTree ? 'resource_providers p' : `tree_roots t CROSS JOIN resource_providers p ON p.${RP.rootProviderId} = t.root_id`;
  return {
    sql: `WITH req(class_id, lo, hi) AS MATERIALIZED (
        SELECT rc.${RC.id}, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]')
        FROM json_each(${amountsParam}) j JOIN resource_classes rc ON rc.${RC.name} = j.key)${ctes}${trees}
      SELECT json_object(
        'providers', (SELECT ${packedArray(PROVIDER_ROW)} FROM (SELECT ${providerColumns} FROM ${from} ORDER BY p.${RP.id})),
        'inventories', (SELECT ${packedArray(INVENTORY_ROW)} FROM (
          SELECT ${inventoryColumns}, ${usedSql('i')} AS used FROM ${from}
            CROSS JOIN inventories i ON i.${INV.resourceProviderId} = p.${RP.id}
            JOIN resource_classes rc ON rc.${RC.id} = i.${INV.resourceClassId}
          ORDER BY i.${INV.resourceProviderId}, i.${INV.resourceClassId})),
        'truncatedAt', ${everyTree ? 'NULL' : truncated})`,
    args: params.args,
  };
}
