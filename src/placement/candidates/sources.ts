// Where a request's provider-tree model comes from, and the one read batch
// that fills it (plus the installed hooks' statements, hooks.ts, in the same
// snapshot):
// - the shared cache (cloud-model.ts) while the cloud fits
//   PLACEMENT_CANDIDATE_TREE_CACHE: the batch reads the name lookups, the
//   trees changed since the model's seq and the usage of the trees the plan
//   guessed from the model as it stands (of everything when the guess covers
//   half the cloud). The plan is made again with the fresh trees and names;
//   if it needs a tree whose usage was not read, another batch reads it (rare:
//   a write created or changed a tree in between).
// - above it (or with the cache set to 0): a partial model of exactly the
//   trees the SQL prefilter keeps (prefilter.ts), read whole with their usage
//   in the same one batch.
// Either way the same rules (rules.ts) then decide over the model.
import type { InStatement } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { CloudModel } from './cloud-model.js';
import { type CandidateReadHook, type HookStates, hookStatements, readHooks } from './hooks.js';
import { treesStatement } from './prefilter.js';
import {
  addUsage,
  type CandidateInventories,
  type Lookups,
  lookupsOf,
  lookupStatements,
  type ProviderNode,
  type TreePrefilter,
  type Usage,
} from './research.js';
import { type Amounts, candidatesOf, planTrees, type TreePlan } from './rules.js';
import { columns, num, type PackedRow } from './sql.js';
import { ALLOC, RP, TREE_CHANGE } from '../../db/columns.js';

export interface RequestNames {
  classes: string[];
  traits: string[];
  aggregates: string[];
  inTree: string[];
  /** Smallest and largest amount per class across groups. */
  amounts: Amounts;
}

/** What one research pass gives the search: the model's trees the request uses, decided by the rules. */
export interface Research {
  lookups: Lookups;
  /** What the installed hooks read in the same batch. */
  hooks: HookStates;
  candidates: CandidateInventories;
  /** Trees given whole from the start: the viable ones and the sharing providers' own. */
  preloaded: { roots: Set<number>; nodes: Map<number, ProviderNode> };
  /** When only the first roots were planned: the highest root planned (trees above it are unknown). */
  truncatedAt: number | null;
  /** Usage of the trees read (loadTrees adds to it). */
  usage: Usage;
  /** Trees outside the first load (anchors of sharing providers the search reaches). */
  loadTrees(roots: number[]): Promise<Map<number, ProviderNode>>;
}

/** The model's providers serve as the request's nodes as they are: usage is looked up apart. */
function nodesOf(model: CloudModel, roots: Iterable<number>): Map<number, ProviderNode> {
  const nodes = new Map<number, ProviderNode>();
  for (const root of roots) for (const p of model.tree(root)) nodes.set(p.id, p);
  return nodes;
}

/** The research of a model and the plan's viable trees. */
function researchOf(
  model: CloudModel,
  lookups: Lookups,
  hooks: HookStates,
  usage: Usage,
  plan: TreePlan,
  truncatedAt: number | null,
  prefilter: TreePrefilter,
  amounts: Amounts,
  loadTrees: (roots: number[]) => Promise<Map<number, ProviderNode>>,
): Research {
  const { candidates, treeRoots } = candidatesOf(model, plan.viable, lookups.classIdByName, usage, prefilter.forbiddenTraits, amounts);
  return {
    lookups,
    hooks,
    candidates,
    preloaded: {
      roots: treeRoots,
      nodes: nodesOf(
        model,
        [...treeRoots].sort((a, b) => a - b),
      ),
    },
    truncatedAt,
    usage,
    loadTrees,
  };
}

/**
 * A request's partial model: the trees the SQL prefilter keeps (the lowest
 * `firstRoots` viable ones when given), read whole with their usage, in one batch.
 */
export async function researchPartial(
  reader: BatchReader,
  names: RequestNames,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  hooks: readonly CandidateReadHook[],
): Promise<Research> {
  const results = await reader.readBatch([
    ...lookupStatements(names),
    treesStatement(prefilter, names.amounts, firstRoots),
    ...hookStatements(hooks, names.classes),
  ]);
  const lookups = lookupsOf(results.slice(0, 4));
  const loaded = JSON.parse(String(results[4]!.rows[0]![0])) as {
    providers: PackedRow[];
    inventories: PackedRow[];
    truncatedAt: number | null;
  };
  const usage: Usage = new Map();
  const model = CloudModel.partial(loaded.providers, loaded.inventories, usage);
  // Every loaded tree is judged by the rules; trees above a truncated set were not loaded.
  const plan = planTrees(model, names.classes, names.amounts, prefilter, lookups.aggregateIdByUuid, false, null);
  return researchOf(
    model,
    lookups,
    readHooks(hooks, results.slice(5)),
    usage,
    plan,
    loaded.truncatedAt ?? null,
    prefilter,
    names.amounts,
    async (roots) => nodesOf(model, roots),
  );
}

/**
 * The research over a model given whole, with no database (the warm-up): the
 * hooks read as from a database where their tables are empty.
 */
export function researchOfModel(
  model: CloudModel,
  lookups: Lookups,
  usage: Usage,
  names: RequestNames,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  hooks: readonly CandidateReadHook[],
): Research {
  const plan = planTrees(model, names.classes, names.amounts, prefilter, lookups.aggregateIdByUuid, false, firstRoots);
  return researchOf(model, lookups, readHooks(hooks, []), usage, plan, plan.truncatedAt, prefilter, names.amounts, async (roots) =>
    nodesOf(model, roots),
  );
}

const USAGE_ROW = columns(['rp', 'cls', 'used']);

/** Usage of which trees one batch read: 'all', or the listed roots plus those the refresh re-read. */
type UsageScope = 'all' | Set<number>;

/**
 * The research from the shared cache; its loader serves trees outside the
 * first load with the usage already read. Null when the cloud is over the
 * cache's cap: a partial model answers.
 */
export async function researchCached(
  reader: BatchReader,
  model: CloudModel,
  names: RequestNames,
  prefilter: TreePrefilter,
  firstRoots: number | null,
  now: number,
  hooks: readonly CandidateReadHook[],
): Promise<Research | null> {
  let lookups: Lookups | null = null;
  for (let attempt = 0; attempt < 4; attempt += 1) {
    if (!model.usable(now)) return null;
    // Before the batch: guess the trees from the model as it stands.
    const guess = model.loaded ? planTrees(model, names.classes, names.amounts, prefilter, model.knownAggregates, true, firstRoots) : null;
    const wanted: UsageScope = guess === null || attempt >= 2 || guess.reads.size * 2 >= model.roots().length ? 'all' : guess.reads;
    const own: InStatement[] = [model.refreshStatement(), usageStatement(wanted, model)];
    const results = await reader.readBatch([...(lookups ? [] : lookupStatements(names)), ...own, ...hookStatements(hooks, names.classes)]);
    if (!lookups) {
      lookups = lookupsOf(results.slice(0, 4));
      model.learnAggregates(lookups.aggregateIdByUuid);
    }
    const at = results.length - hooks.length - own.length;
    const [refreshRows, usageRows] = results.slice(at, at + own.length);
    const changed = model.apply(String(refreshRows!.rows[0]![0]), now);
    if (changed === 'oversize') return null;
    if (changed === 'reload') continue;
    const usage = usageOf(JSON.parse(String(usageRows!.rows[0]?.[0] ?? '[]')) as PackedRow[]);
    const scope: UsageScope = wanted === 'all' ? 'all' : new Set([...wanted, ...changed]);
    // After it: the trees the request really needs, with the names it named.
    const plan = planTrees(model, names.classes, names.amounts, prefilter, lookups.aggregateIdByUuid, false, firstRoots);
    if (!covers(scope, plan.reads)) continue;
    const states = readHooks(hooks, results.slice(at + own.length));
    // Anchor trees are in the usage read (plan.reads); should the search reach another tree, its usage is read then.
    return researchOf(model, lookups, states, usage, plan, plan.truncatedAt, prefilter, names.amounts, async (roots) => {
      if (!covers(scope, roots)) {
        const [rows] = await reader.readBatch([usageStatement(new Set(roots), model)]);
        for (const [rp, perClass] of usageOf(JSON.parse(String(rows!.rows[0]?.[0] ?? '[]')) as PackedRow[])) usage.set(rp, perClass);
      }
      return nodesOf(model, roots);
    });
  }
  // Four batches lost to concurrent tree changes: a partial model answers.
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
