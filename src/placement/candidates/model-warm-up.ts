// The engine run over the trees kept in memory, read-only, before they meet
// traffic. The synthetic warm-up (entry/node-warm-up.ts) optimises the code
// on a made-up cloud; when the real trees arrive, V8 still finds shapes and
// branches it has no feedback for (measured on flat-1000: the first four
// answers cost 2-6x a warm one, most of it TurboFan recompiling the search
// and the JSON writer on the real data, and the deoptimisations before it).
// A few answers computed here, on the real trees and usage, and thrown away,
// move that cost off the first requests. Nothing is written.
import type { BatchReader } from '../../db/client.js';
import { Microversion } from '../../microversion.js';
import { MAX_VERSION } from '../versions.js';
import { type CloudModel, cloudModelFor, type ModelProvider } from './cloud-model.js';
import { findAllocationCandidatesJson } from './index.js';
import { parseCandidateQueryString } from './parse.js';
import { AGG } from '../../db/columns.js';

const LATEST = Microversion.parse(MAX_VERSION)!;

/** An amount a provider's inventory accepts: its min_unit, rounded up to its step. */
function acceptedAmount(inv: ModelProvider['inventories'][number]): number {
  const step = Math.max(1, inv.stepSize);
  return Math.ceil(Math.max(1, inv.minUnit) / step) * step;
}

const resourcesOf = (provider: ModelProvider): string =>
  provider.inventories.map((inv) => `${encodeURIComponent(inv.className)}:${acceptedAmount(inv)}`).join(',');

/**
 * Queries shaped like a scheduler's on this cloud: the classes of the most
 * common kind of root (with one of its aggregates and traits, as perfload
 * and Nova filter), and for trees with children, a granular request with the
 * child's classes in a group of its own.
 */
async function queriesFor(reader: BatchReader, model: CloudModel): Promise<string[]> {
  const roots = model.roots();
  if (roots.length === 0) return [];
  // The most common tree shape among a sample of roots (a cloud is mostly alike).
  const sample = roots.slice(0, 200);
  const counts = new Map<string, number>();
  let best = sample[0]!;
  let bestCount = 0;
  for (const root of sample) {
    const tree = model.tree(root);
    const key = tree.map((p) => `${p.parentId === null ? 'r' : 'c'}${resourcesOf(p)}`).join('|');
    const count = (counts.get(key) ?? 0) + 1;
    counts.set(key, count);
    if (count > bestCount) {
      bestCount = count;
      best = root;
    }
  }
  const tree = model.tree(best);
  const root = tree[0];
  if (!root) return [];
  const withInventory = tree.filter((p) => p.inventories.length > 0);
  const queries: string[] = [];
  const filters: string[] = [];
  const aggregate = root.aggregates.values().next();
  if (!aggregate.done) {
    const [rows] = await reader.readBatch([
      { sql: `SELECT ${AGG.uuid} FROM placement_aggregates WHERE ${AGG.id} = ?`, args: [aggregate.value] },
    ]);
    const uuid = rows?.rows[0]?.[0];
    if (typeof uuid === 'string') filters.push(`member_of=${uuid}`);
  }
  const trait = root.traits.values().next();
  if (!trait.done) filters.push(`required=${encodeURIComponent(trait.value)}`);
  if (root.inventories.length > 0) queries.push([`resources=${resourcesOf(root)}`, ...filters].join('&'));
  const child = withInventory.find((p) => p.parentId !== null);
  if (child) {
    const groups = [root.inventories.length > 0 ? `resources=${resourcesOf(root)}` : null, `resources_CHILD=${resourcesOf(child)}`];
    queries.push([...groups.filter((g) => g !== null), 'group_policy=none'].join('&'));
  }
  return queries;
}

export interface ModelWarmUpDone {
  answers: number;
  cpuMs: number;
}

/**
 * Computes full answers over the trees kept in memory until `budgetMs` of
 * this process's CPU time is spent or `maxRounds` rounds ran. A query the
 * engine refuses is skipped (the cloud decides what makes sense to ask).
 */
export async function warmUpOnModel(
  reader: BatchReader,
  treeCacheProviders: number,
  budgetMs: number,
  maxRounds = 8,
): Promise<ModelWarmUpDone> {
  const started = process.cpuUsage();
  const cpuMs = () => {
    const used = process.cpuUsage(started);
    return (used.user + used.system) / 1000;
  };
  const model = cloudModelFor(reader, treeCacheProviders);
  if (treeCacheProviders <= 0 || !model.loaded) return { answers: 0, cpuMs: 0 };
  const queries = await queriesFor(reader, model);
  let answers = 0;
  for (let round = 0; round < maxRounds && cpuMs() < budgetMs; round += 1) {
    for (const query of queries) {
      try {
        await findAllocationCandidatesJson(reader, parseCandidateQueryString(query, LATEST), LATEST, {
          randomize: false,
          maxCandidates: 0,
          treeCacheProviders,
          now: Date.now(),
        });
        answers += 1;
      } catch {
        // A query this cloud cannot answer (no candidate's amounts fit): nothing to warm with it.
      }
    }
  }
  return { answers, cpuMs: Math.round(cpuMs()) };
}
