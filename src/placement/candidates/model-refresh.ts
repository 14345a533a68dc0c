// Keeps the app's tree cache (cloud-model.ts) current between requests, so
// a process's first candidates request after a load (perfload's timed curl, a
// scheduler's first question after hosts report in) finds the trees read
// already instead of reading the whole cloud itself. Every request still
// reads the changes since the model's seq in its own batch: this only moves
// that work off the request path, it never decides what a request sees.
import type { BatchReader } from '../../db/client.js';
import type { CloudModel } from './cloud-model.js';
import { prepareSummaryTemplates } from './present/json.js';

/**
 * Reads the trees changed since the model's last refresh (all of them the
 * first time) and prepares their providers' answer summaries.
 */
export async function refreshTreeModel(reader: BatchReader, model: CloudModel, now: number): Promise<void> {
  // A change to every tree (a class renamed) clears the model: read it whole once more.
  for (let attempt = 0; attempt < 2; attempt += 1) {
    if (!model.usable(now)) return;
    const [result] = await reader.readBatch([model.refreshStatement()]);
    const changed = model.apply(String(result!.rows[0]![0]), now);
    if (changed === 'oversize') return;
    if (changed === 'reload') continue;
    const lookup = { get: (id: number) => model.provider(id) };
    for (const root of changed) prepareSummaryTemplates(model.tree(root), lookup);
    return;
  }
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
 */
export function keepTreeModelFresh(
  reader: BatchReader,
  model: CloudModel,
  everyMs: number,
  onError: (err: unknown) => void,
  /** Runs after each refresh, before the next one may start. */
  afterRefresh?: () => Promise<void>,
): ModelRefresher {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    refreshTreeModel(reader, model, Date.now())
      .then(afterRefresh)
      .catch(onError)
      .finally(() => {
        running = false;
      });
  }, everyMs);
  timer.unref?.();
  return { stop: () => clearInterval(timer) };
}
