// The warm-up hook: what a process (Node) or an isolate (Worker) runs once it
// serves, to make its later answers cheaper. Never before a Node process
// listens (it would delay its first answer; /readyz says `warming` until it is
// done), never at a Worker's module evaluation (workerd forbids random
// values, timers and I/O in global scope, and threw there). A hook that
// throws is logged as an error and costs only the warm-up.
//
// Both run the candidates engine's warm-up over a made-up model
// (src/placement/candidates/warm-up.ts: pure, no database) so V8 has compiled
// the engine before the requests that matter; Node's also reads the real
// provider trees into the app's tree cache first.
import type { Deps } from '../deps.js';
import { warmUpCandidates } from '../placement/candidates/warm-up.js';

export type WarmUp = (deps: Deps) => Promise<void> | void;

/**
 * Rounds of the engine's warm-up (9 answers each). Measured on flat-1000 in
 * fresh Node processes (loaded 2-core machine): the first full answer costs
 * 48-51 ms of CPU with none against 4-5 ms warm; after 10 rounds (~350 ms of
 * CPU, before readiness, not before the first answer) about 15 ms.
 */
const NODE_ROUNDS = 10;
/** A Worker isolate's warm-up runs in its first request's waitUntil: fewer rounds, the CPU is that request's. */
const WORKER_ROUNDS = 3;

/**
 * Node mode: the provider trees of the database read into the app's tree
 * cache (the replica's, where one is configured: candidates read through it),
 * so the first candidates request after a restart reads no tree; then the
 * engine warmed up over a made-up model, with the app's read hooks.
 */
export const nodeWarmUp: WarmUp = async ({ store, candidates }) => {
  await candidates.refresh(store.nearby);
  await warmUpCandidates(NODE_ROUNDS, candidates.hooks);
};

/** A Worker isolate: the engine warmed up over a made-up model (its trees are read by its requests). */
export const workerWarmUp: WarmUp = async ({ candidates }) => {
  await warmUpCandidates(WORKER_ROUNDS, candidates.hooks);
};

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
