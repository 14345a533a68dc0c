// Keeps the app's tree cache (cloud-model.ts) current between requests, so
// a process's first candidates request after a load (perfload's timed curl, a
// scheduler's first question after hosts report in) finds the trees read
// already instead of reading the whole cloud itself. Every request still
// reads the changes since the model's seq in its own batch: this only moves
// that work off the request path, it never decides what a request sees.
import type { BatchReader } from '../../db/client.js';
import type { PackedRow } from '../../db/rows.js';
import { type CloudModel, type ModelProvider, usageOf } from './cloud-model.js';
import { type KeptBytes, prepareSummaries, prepareSummaryTemplates } from './present/json.js';

const NONE: ReadonlySet<number> = new Set();

/**
 * Reads the trees changed since the model's last refresh (all of them the
 * first time) and prepares their providers' answer summaries: templates the
 * first time, and once loaded the summaries themselves with the usage read
 * in the same batch (a tree re-read otherwise makes the answer that first
 * names it write each of its summaries: most of a first answer after a load).
 * Returns the roots re-read (none when nothing changed or the cloud is over the cap).
 */
export async function refreshTreeModel(reader: BatchReader, model: CloudModel, now: number, kept: KeptBytes): Promise<ReadonlySet<number>> {
  // A change to every tree (a class renamed) clears the model: read it whole once more.
  for (let attempt = 0; attempt < 2; attempt += 1) {
    if (!model.usable(now)) return NONE;
    const seq = model.appliedSeq;
    // Trees a request's batch re-read since the last refresh (a re-warm's, while a load goes on): prepared here too.
    const pending = model.unpreparedRoots();
    const usageRead = model.changedUsageStatement(pending);
    const [result, usageRows] = await reader.readBatch(usageRead ? [model.refreshStatement(), usageRead] : [model.refreshStatement()]);
    const changed = model.apply(String(result!.rows[0]![0]), now);
    if (changed === 'oversize') return NONE;
    if (changed === 'reload') continue;
    const lookup = { get: (id: number) => model.provider(id) };
    if (usageRows) {
      const roots = new Set([...pending, ...changed]);
      if (roots.size) {
        const usage = usageOf(JSON.parse(String(usageRows.rows[0]![0])) as PackedRow[]);
        for (const root of roots) prepareSummaries(model.tree(root), lookup, usage, kept);
        model.prepared(roots);
      }
    } else for (const root of changed) prepareSummaryTemplates(model.tree(root), lookup, kept);
    return model.appliedSeq === seq ? NONE : changed;
  }
  return NONE;
}

/**
 * The shapes of the trees a process has answered over: a tree's providers
 * (parent's place in the tree, classes, traits, whether in an aggregate),
 * never amounts, and the cloud's size by powers of two. A new shape or size
 * means new code paths and object shapes for V8 (and a heap the load grew):
 * a fresh process's first answer over a cloud loaded after its start costs
 * several times a warm one until something ran the engine over it
 * (docs/performance.md#figures-behind-the-code).
 * Inventory totals, usage and renames change no shape.
 */
export class TreeShapes {
  private readonly seen = new Set<string>();
  private sizeBucket = -1;

  /** Notes the shapes of `roots` (all of them: every root of the model); true when one is new or the size crossed a power of two. */
  observe(model: CloudModel, roots: Iterable<number>): boolean {
    let changed = false;
    const bucket = model.size === 0 ? 0 : Math.floor(Math.log2(model.size)) + 1;
    if (bucket !== this.sizeBucket) {
      // Only growth warrants a re-warm: a shrinking cloud runs paths already warm.
      changed = bucket > this.sizeBucket && this.sizeBucket >= 0;
      this.sizeBucket = bucket;
    }
    // A bound on what a cloud of ever-new shapes could hold: forget and start over.
    if (this.seen.size > 4096) this.seen.clear();
    for (const root of roots) {
      const shape = shapeOf(model.tree(root));
      if (shape === '' || this.seen.has(shape)) continue;
      this.seen.add(shape);
      changed = true;
    }
    return changed;
  }
}

function shapeOf(tree: readonly ModelProvider[]): string {
  let shape = '';
  for (const p of tree) {
    const parent = p.parentId === null ? -1 : tree.findIndex((q) => q.id === p.parentId);
    shape += `${parent}|${p.inventories.map((i) => i.className).join(',')}|${[...p.traits].join(',')}|${p.aggregates.size > 0 ? 1 : 0};`;
  }
  return shape;
}

export interface ModelRefresher {
  stop(): void;
}

/**
 * Refreshes the model every `everyMs` (one read of two index probes when
 * nothing changed), one refresh at a time. Writes made by any process on the
 * database are picked up, not only this one's. For databases whose batches
 * run in call order (Node mode's embedded file): a refresh and a request
 * then apply their snapshots in the order they were read.
 *
 * `rewarm`, when given, runs after a refresh once the trees took a shape
 * (or size) this process has not answered over (TreeShapes): when the
 * writes settle (a refresh that finds nothing new), or while they go on, at
 * most once per REWARM_EVERY_MS, so the first answer after a load finds the
 * engine compiled for the cloud it now holds; and, when only trees already
 * of a known shape changed, a 'refill' at most once per REWARM_EVERY_MS
 * (while writes go on and after), which keeps the engine's code in use over
 * the cloud as it grows (the summaries of the trees re-read are written by
 * refreshTreeModel itself). No refresh starts while it
 * runs; it must hand the event loop back between its answers itself.
 */
export function keepTreeModelFresh(
  reader: BatchReader,
  model: CloudModel,
  everyMs: number,
  onError: (err: unknown) => void,
  kept: KeptBytes,
  rewarm?: (kind: RewarmKind) => Promise<void>,
): ModelRefresher {
  let running = false;
  const shapes = new TreeShapes();
  // The trees already held (read by the warm-up at start) are what the process warmed over.
  shapes.observe(model, model.roots());
  let pending = false;
  // Trees re-read since the last re-warm: their providers' answer caches are empty.
  let unanswered = false;
  let lastRewarm = 0;
  const tick = async () => {
    const changed = await refreshTreeModel(reader, model, Date.now(), kept);
    if (!rewarm) return;
    if (changed.size > 0) {
      unanswered = true;
      if (shapes.observe(model, changed)) pending = true;
    }
    const now = Date.now();
    if (pending && (changed.size === 0 || now - lastRewarm >= REWARM_EVERY_MS)) {
      pending = false;
      unanswered = false;
      await rewarm('shape');
      lastRewarm = Date.now();
    } else if (unanswered && now - lastRewarm >= REWARM_EVERY_MS) {
      // While writes go on too, not only once they settle: a refill then seldom meets the first
      // request after a load (which comes as the writes end), and leaves it at most a second of them.
      unanswered = false;
      await rewarm('refill');
      lastRewarm = Date.now();
    }
  };
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    tick()
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, everyMs);
  timer.unref?.();
  return { stop: () => clearInterval(timer) };
}

/**
 * Why a re-warm runs: 'shape', the trees took a shape (or size) the process
 * has not answered over (V8 compiles for it: several rounds); 'refill',
 * trees were re-read since the last re-warm (the full answers at the newest
 * microversion, once: the engine's code kept in use over the cloud as it grows).
 */
export type RewarmKind = 'shape' | 'refill';

/** While writes go on, the shortest time between two re-warms (and between two refills once they settle). */
export const REWARM_EVERY_MS = 1000;
