// The warm-up hook: what a process (Node) or an isolate (Worker) runs once it
// serves, to make its later answers cheaper. Never before a Node process
// listens (it would delay its first answer; /readyz says `warming` until it is
// done), never at a Worker's module evaluation (workerd forbids random
// values, timers and I/O in global scope, and threw there). A hook that
// throws is logged as an error and costs only the warm-up.
//
// Node's reads the real provider trees through the real engine's model;
// the Worker's does nothing. A warm-up of the engine's code over a made-up
// model (src/placement/candidates/warm-up.ts, where it exists) plugs in here,
// into both.
import type { Deps } from '../deps.js';
import { refreshCloudModel } from '../placement/candidates/model-refresh.js';

export type WarmUp = (deps: Deps) => Promise<void> | void;

/**
 * Node mode: the provider trees of the database read into memory (the
 * replica's, where one is configured: candidates read through it), so the
 * first candidates request after a restart reads no tree.
 */
export const nodeWarmUp: WarmUp = async ({ config, store }) => {
  await refreshCloudModel(store.nearby, config.PLACEMENT_CANDIDATE_TREE_CACHE, Date.now());
};

/** A Worker isolate: nothing yet. */
export const workerWarmUp: WarmUp = () => {};

/** Runs `warmUp` once; true when it finished, false when it threw (logged as an error). */
export async function runWarmUp(warmUp: WarmUp, deps: Deps): Promise<boolean> {
  const started = performance.now();
  try {
    await warmUp(deps);
    deps.log.debug('warmed up', { ms: Math.round(performance.now() - started) });
    return true;
  } catch (err) {
    deps.log.error('warm-up failed; serving without it', { err: err instanceof Error ? (err.stack ?? err.message) : String(err) });
    return false;
  }
}
