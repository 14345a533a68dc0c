// The research context of a request from the trees held in memory
// (cloud-model.ts) plus one read batch: the name lookups, the trees changed
// since the model's last refresh, and the current usage of the trees the
// request can use. It computes what research.ts computes in SQL (viable trees,
// candidate inventory rows, sharing anchors) with the same necessary-only
// rules, so the search and presentation downstream are the same code. One
// round trip as a rule; another when a change made the request's trees differ
// from the model's guess (or a class was renamed: the model is read whole).
import type { InStatement } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { candidateCountersOf, candidateCountersStatement, type LoadedCounters } from '../../ext/counters/sql.js';
import type { CloudModel, ModelProvider } from './cloud-model.js';
import {
  lookupsOf,
  lookupStatements,
  type CandidateInventories,
  type Inventory,
  type Lookups,
  type ProviderNode,
  type Research,
  type TreePrefilter,
  type Usage,
  usedOf,
  addUsage,
} from './research.js';
import { columns, num, type PackedRow } from './sql.js';
import { taintsOf, taintStatement } from './taints.js';
import { ALLOC, RP, TREE_CHANGE } from '../../db/columns.js';

const USAGE_ROW = columns(['rp', 'cls', 'used']);

export interface ModelRequestNames {
  classes: string[];
  traits: string[];
  aggregates: string[];
  inTree: string[];
}

/** The trees one request reads: its viable trees and what sharing providers bring. */
interface TreePlan {
  viable: number[];
  truncatedAt: number | null;
  /** Every root whose trees may be summarised: viable, sharing providers' own, and their anchors. */
  reads: Set<number>;
}

/** Usage of which trees one batch read: 'all', or the listed roots plus those the refresh re-read. */
type UsageScope = 'all' | Set<number>;

/**
 * The research from the trees in memory; its loader serves trees outside the
 * first load (anchors of sharing providers the search reaches) with the usage
 * already read. Null when the cloud is over the model's cap: the SQL engine answers.
 */
export async function loadFromModel(
  reader: BatchReader,
  model: CloudModel,
  names: ModelRequestNames,
  amounts: ReadonlyMap<string, { smallest: number; largest: number }>,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  now: number,
): Promise<Research | null> {
  let scope: UsageScope | null = null;
  let usage: Usage = new Map();
  let lookups: Lookups | null = null;
  for (let attempt = 0; attempt < 4; attempt += 1) {
    if (!model.usable(now)) return null;
    // Before the batch: guess the trees from the model as it stands.
    const guess = model.loaded ? planTrees(model, names.classes, amounts, prefilter, model.knownAggregates, true, firstRoots) : null;
    const wanted: UsageScope = guess === null || attempt >= 2 || guess.reads.size * 2 >= model.roots().length ? 'all' : guess.reads;
    const statements: InStatement[] = [
      ...(lookups ? [] : lookupStatements(names)),
      model.refreshStatement(),
      usageStatement(wanted, model),
      candidateCountersStatement(names.classes),
      taintStatement(),
    ];
    const results = await reader.readBatch(statements);
    if (!lookups) {
      lookups = lookupsOf(results.slice(0, 4));
      model.learnAggregates(lookups.aggregateIdByUuid);
    }
    const [refreshRows, usageRows, counterRows, taintRows] = results.slice(-4);
    lookups.taints = taintsOf(taintRows);
    const changed = model.apply(String(refreshRows!.rows[0]![0]), now);
    if (changed === 'oversize') return null;
    if (changed === 'reload') continue;
    usage = usageOf(JSON.parse(String(usageRows!.rows[0]?.[0] ?? '[]')) as PackedRow[]);
    scope = wanted === 'all' ? 'all' : new Set([...wanted, ...changed]);
    // After it: the trees the request really needs, with the names it named.
    const plan = planTrees(model, names.classes, amounts, prefilter, lookups.aggregateIdByUuid, false, firstRoots);
    if (covers(scope, plan.reads))
      return build(reader, model, lookups, usage, scope, plan, prefilter, amounts, candidateCountersOf(counterRows));
  }
  // Four batches lost to concurrent tree changes: answer from the SQL engine.
  return null;
}

const covers = (scope: UsageScope, roots: Iterable<number>): boolean => {
  if (scope === 'all') return true;
  for (const root of roots) if (!scope.has(root)) return false;
  return true;
};

/** Current usage per provider and class: of every provider, or of the given trees and those the refresh re-reads. */
function usageStatement(scope: UsageScope, model: CloudModel): InStatement {
  const grouped = (from: string) => `SELECT COALESCE(json_group_array(json_array(rp, cls, used)), json('[]')) FROM (
    SELECT a.resource_provider_id AS rp, a.resource_class_id AS cls, SUM(a.used) AS used FROM ${from}
    GROUP BY a.resource_provider_id, a.resource_class_id)`;
  if (scope === 'all') return { sql: grouped('allocations a'), args: {} };
  return {
    sql: `WITH roots(id) AS (SELECT value FROM json_each(:roots) UNION SELECT ${TREE_CHANGE.rootId} FROM placement_tree_changes WHERE ${TREE_CHANGE.seq} > :seq)
      ${grouped(`roots r CROSS JOIN resource_providers p ON p.${RP.rootProviderId} = r.id CROSS JOIN allocations a ON a.${ALLOC.resourceProviderId} = p.${RP.id}`)}`,
    args: { roots: JSON.stringify([...scope]), seq: model.appliedSeq },
  };
}

function usageOf(rows: PackedRow[]): Usage {
  const usage: Usage = new Map();
  const at = USAGE_ROW.at;
  for (const row of rows) addUsage(usage, num(row[at.rp]), num(row[at.cls]), num(row[at.used]));
  return usage;
}

/**
 * The viable roots by research.ts's TreePrefilter rules (each necessary,
 * never sufficient), in id order, the first `firstRoots` only when given.
 * `aggregateIds` resolves member_of uuids; `guessing` (before the batch, from
 * the model's memory of aggregates) leaves out a condition naming a uuid it
 * cannot resolve, which only widens the plan.
 */
function planTrees(
  model: CloudModel,
  classes: string[],
  amounts: ReadonlyMap<string, { smallest: number; largest: number }>,
  prefilter: TreePrefilter,
  aggregateIds: ReadonlyMap<string, number>,
  guessing: boolean,
  firstRoots: number | null,
): TreePlan {
  const sharing = [...model.sharing()].flatMap((id) => model.provider(id) ?? []);
  const tests: ((root: number, members: readonly ModelProvider[]) => boolean)[] = [];
  for (const anyOf of prefilter.requiredAnyOf) {
    // A sharing provider with one of the traits could satisfy any tree.
    if (sharing.some((s) => anyOf.some((t) => s.traits.has(t)))) continue;
    tests.push((_, members) => {
      for (const m of members) for (const t of anyOf) if (m.traits.has(t)) return true;
      return false;
    });
  }
  for (const anyOf of prefilter.memberOf) {
    // Guessing, an unknown uuid may be a new aggregate: leave the condition out.
    if (guessing && anyOf.some((uuid) => !aggregateIds.has(uuid))) continue;
    const ids = anyOf.flatMap((uuid) => aggregateIds.get(uuid) ?? []);
    tests.push((_, members) => {
      for (const m of members) for (const id of ids) if (m.aggregates.has(id)) return true;
      return false;
    });
  }
  if (prefilter.rootRequired.length) {
    tests.push((root) => {
      const traits = model.provider(root)?.traits;
      return traits !== undefined && prefilter.rootRequired.every((t) => traits.has(t));
    });
  }
  // The classes no sharing provider offers: a tree must offer each with room for the smallest amount.
  const unshared = (names: string[]) => names.filter((name) => !sharing.some((s) => s.inventories.some((inv) => inv.className === name)));
  const offers = (members: readonly ModelProvider[], name: string) => {
    const { smallest, largest } = amounts.get(name)!;
    return members.some((m) =>
      m.inventories.some((inv) => inv.className === name && inv.maxUnit >= smallest && inv.minUnit <= largest && inv.capacity >= smallest),
    );
  };
  if (prefilter.everyClassInTree) {
    const cover = unshared(classes);
    if (cover.length) tests.push((_, members) => cover.every((name) => offers(members, name)));
  }
  if (prefilter.someClassSetInTree?.length) {
    // ext_first_of: every class of one variant.
    const sets = prefilter.someClassSetInTree.map(unshared);
    if (sets.every((set) => set.length)) tests.push((_, members) => sets.some((set) => set.every((name) => offers(members, name))));
  }
  if (prefilter.rootForbidden.length) {
    tests.push((root) => {
      const traits = model.provider(root)?.traits;
      return traits !== undefined && !prefilter.rootForbidden.some((t) => traits.has(t));
    });
  }
  const viable: number[] = [];
  const limit = firstRoots === null ? Number.POSITIVE_INFINITY : Math.floor(firstRoots);
  for (const root of model.roots()) {
    if (viable.length >= limit) break;
    const members = model.tree(root);
    let passes = true;
    for (const test of tests) {
      if (!test(root, members)) {
        passes = false;
        break;
      }
    }
    if (passes) viable.push(root);
  }
  const truncatedAt = firstRoots !== null && viable.length >= limit ? viable[viable.length - 1]! : null;
  const reads = new Set(viable);
  for (const s of sharing) {
    reads.add(s.rootId);
    if (!s.inventories.some((inv) => amounts.has(inv.className))) continue;
    for (const root of anchorsOf(model, s)) reads.add(root);
  }
  return { viable, truncatedAt, reads };
}

/** The roots of the trees a sharing provider shares with: any provider in one of its aggregates (itself included). */
function anchorsOf(model: CloudModel, sharing: ModelProvider): Set<number> {
  const roots = new Set<number>();
  for (const agg of sharing.aggregates) {
    for (const id of model.membersOf(agg)) {
      const member = model.provider(id);
      if (member) roots.add(member.rootId);
    }
  }
  return roots;
}

function build(
  reader: BatchReader,
  model: CloudModel,
  lookups: Lookups,
  usage: Usage,
  scope: UsageScope,
  plan: TreePlan,
  prefilter: TreePrefilter,
  amounts: ReadonlyMap<string, { smallest: number; largest: number }>,
  counters: Map<number, LoadedCounters>,
): Research {
  // Requested classes by id, with the smallest and largest amount asked.
  const wanted = new Map<number, { smallest: number; largest: number }>();
  for (const [name, range] of amounts) {
    const id = lookups.classIdByName.get(name);
    if (id !== undefined) wanted.set(id, range);
  }
  const forbidden = prefilter.forbiddenTraits;
  const byProvider = new Map<number, Map<number, Inventory>>();
  const rootOf = new Map<number, number>();
  const addRows = (provider: ModelProvider) => {
    if (forbidden.length && forbidden.some((t) => provider.traits.has(t))) return;
    for (const inv of provider.inventories) {
      const range = wanted.get(inv.classId);
      if (!range) continue;
      const used = usedOf(usage, provider.id, inv.classId);
      if (inv.maxUnit < range.smallest || inv.minUnit > range.largest || inv.capacity - used < range.smallest) continue;
      let perClass = byProvider.get(provider.id);
      if (!perClass) byProvider.set(provider.id, (perClass = new Map()));
      const row: Inventory = {
        total: inv.total,
        reserved: inv.reserved,
        minUnit: inv.minUnit,
        maxUnit: inv.maxUnit,
        stepSize: inv.stepSize,
        allocationRatio: inv.allocationRatio,
        used,
      };
      perClass.set(inv.classId, row);
      rootOf.set(provider.id, provider.rootId);
    }
  };
  for (const root of plan.viable) for (const provider of model.tree(root)) addRows(provider);
  const anchorsOfSharing = new Map<number, Set<number>>();
  const treeRoots = new Set(plan.viable);
  for (const id of model.sharing()) {
    const sharing = model.provider(id);
    if (!sharing) continue;
    treeRoots.add(sharing.rootId);
    if (!byProvider.has(id)) addRows(sharing);
    if (!sharing.inventories.some((inv) => wanted.has(inv.classId))) continue;
    const anchors = anchorsOf(model, sharing);
    if (anchors.size) anchorsOfSharing.set(id, anchors);
  }
  const candidates: CandidateInventories = { byProvider, rootOf, anchorsOfSharing, counters };
  // The model's providers serve as the request's nodes as they are: usage is looked up apart.
  const nodesOf = (roots: Iterable<number>) => {
    const nodes = new Map<number, ProviderNode>();
    for (const root of roots) for (const p of model.tree(root)) nodes.set(p.id, p);
    return nodes;
  };
  return {
    first: {
      lookups,
      candidates,
      preloaded: { roots: treeRoots, nodes: nodesOf([...treeRoots].sort((a, b) => a - b)) },
      truncatedAt: plan.truncatedAt,
      usage,
    },
    // Anchor trees are in the usage read (plan.reads); should the search
    // reach another tree, its usage is read then.
    loadTrees: async (roots) => {
      if (!covers(scope, roots)) {
        const [rows] = await reader.readBatch([usageStatement(new Set(roots), model)]);
        for (const [rp, perClass] of usageOf(JSON.parse(String(rows!.rows[0]?.[0] ?? '[]')) as PackedRow[])) usage.set(rp, perClass);
      }
      return nodesOf(roots);
    },
  };
}
