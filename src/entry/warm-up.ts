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
import { Microversion } from '../microversion.js';
import { findAllocationCandidatesJson } from '../placement/candidates/index.js';
import type { RewarmKind } from '../placement/candidates/model-refresh.js';
import { parseCandidateQueryString } from '../placement/candidates/parse.js';
import { KeptBytes } from '../placement/candidates/present/json.js';
import { realCloudRequests, warmUpCandidates } from '../placement/candidates/warm-up.js';
import { DomainError } from '../errors.js';
import { MAX_VERSION } from '../placement/versions.js';

export type WarmUp = (deps: Deps) => Promise<void> | void;

/**
 * Rounds of the engine's warm-up (9 answers each), run before readiness but
 * not before the first answer: enough that a first full answer no longer pays
 * for V8's compiling, few enough to keep the start short (the figures behind
 * both counts: docs/performance.md#figures-behind-the-code).
 */
const NODE_ROUNDS = 10;
/**
 * Then a few small requests through the real path (the app's tree cache, the
 * read batch's statements, the hooks) on the real database: one candidate
 * each, whatever the cloud's size. The made-up rounds alone leave the real
 * path's own code cold; after these the first full answer costs what a warm one does.
 */
const NODE_REAL_REQUESTS = 5;
const REAL_QUERY = 'resources=VCPU:1&limit=1';
/** A Worker isolate's warm-up runs in its first request's waitUntil: fewer rounds, the CPU is that request's. */
const WORKER_ROUNDS = 3;

/**
 * Node mode: the provider trees of the database read into the app's tree
 * cache (the replica's, where one is configured: candidates read through it),
 * so the first candidates request after a restart reads no tree; then the
 * engine warmed up over a made-up model, with the app's read hooks, and a few
 * small requests through the real path (not counted in the answer metrics).
 */
export const nodeWarmUp: WarmUp = async ({ store, candidates }) => {
  await candidates.refresh(store.nearby);
  await roundsYielding(NODE_ROUNDS, candidates.hooks, nextTurn);
  const mv = Microversion.parse(MAX_VERSION)!;
  for (let i = 0; i < NODE_REAL_REQUESTS; i += 1) {
    await nextTurn();
    await findAllocationCandidatesJson(
      store.nearby,
      parseCandidateQueryString(REAL_QUERY, mv),
      mv,
      // Not a client's question: its answer is not kept (KeptAnswers holds the queries clients repeat).
      candidates.options({ metrics: undefined, answers: undefined }),
    );
  }
};

/**
 * Rounds of the re-warm (warm-up.ts's queries over the real trees, full
 * answers up to REWARM_CAP candidates) once the trees took a new shape after
 * the start: a cloud loaded after the start otherwise makes its first answer
 * pay for V8's compiling (docs/performance.md#figures-behind-the-code).
 */
const REWARM_ROUNDS = 3;
/** At most this many candidates per re-warm answer: enough to compile every path, bounded on a large cloud. */
const REWARM_CAP = 1000;

/**
 * Node mode, after the trees took a shape this process has not answered
 * over (a cloud loaded after its start: CandidateEngine.keepFresh runs it),
 * or, in one round, after trees of known shapes were re-read ('refill'):
 * the warm-up's queries answered through the real path on the real trees,
 * one per `turn` (of the event loop, or the server's pause between reads:
 * reads-quiet.ts), not counted in the answer metrics. A query
 * naming what the cloud lacks is refused (a 400's error, dropped). The
 * summaries of the trees re-read are written by the refresh itself
 * (model-refresh.ts): a refill keeps the engine's code in use over the
 * cloud as it grows.
 */
export async function nodeRewarm({ store, candidates }: Deps, kind: RewarmKind = 'shape', turn = nextTurn): Promise<void> {
  const cap = candidates.settings.maxCandidates;
  // Not clients' questions: their answers are not kept (they would push out those clients repeat). A
  // re-warm's bytes are kept apart from the app's too: its answers at older microversions would put their
  // shape's summary in the place of the current one the refresh wrote (a provider keeps one), and the next
  // client's answer would write each again. A refill answers at the newest only: it copies what the refresh wrote.
  const options = candidates.options({
    metrics: undefined,
    answers: undefined,
    ...(kind === 'shape' ? { keptBytes: KeptBytes.forOneAnswer() } : {}),
    maxCandidates: cap > 0 && cap < REWARM_CAP ? cap : REWARM_CAP,
  });
  // A refill answers the full answers at the newest microversion once: the fewer answers, the less a request arriving meanwhile waits.
  const requests = kind === 'refill' ? realCloudRequests().filter(fullAtNewest) : realCloudRequests();
  for (let round = 0, rounds = kind === 'refill' ? 1 : REWARM_ROUNDS; round < rounds; round += 1)
    for (const { mv, request } of requests) {
      await turn();
      await findAllocationCandidatesJson(store.nearby, request, mv, { ...options, now: Date.now() }).catch(refusedOnly);
    }
}

const NEWEST = Microversion.parse(MAX_VERSION)!;
const fullAtNewest = ({ mv, request }: { mv: Microversion; request: { limit: number | null } }): boolean =>
  request.limit === null && mv.compare(NEWEST) === 0;

/** A query refused for what the cloud lacks (DomainError 'invalid') is expected; anything else is thrown on. */
function refusedOnly(err: unknown): void {
  if (!(err instanceof DomainError)) throw err;
}

/** A Worker isolate: the engine warmed up over a made-up model (its trees are read by its requests). */
export const workerWarmUp: WarmUp = async ({ candidates }) => {
  await roundsYielding(WORKER_ROUNDS, candidates.hooks, () => new Promise((resolve) => setTimeout(resolve, 0)));
};

/**
 * The engine's warm-up one round at a time, handing the event loop back
 * between rounds: its answers resolve as microtasks, so without a real turn
 * `GET /`, `/healthz` and requests arriving meanwhile would wait for every
 * round, seconds under load. The turn comes from the entry: the engine's module stays free
 * of timers (it may be evaluated in a Worker's global scope).
 */
async function roundsYielding(rounds: number, hooks: Deps['candidates']['hooks'], turn: () => Promise<void>): Promise<void> {
  for (let round = 0; round < rounds; round += 1) {
    await turn();
    await warmUpCandidates(1, hooks);
  }
}

/** Node: the next turn of the event loop, after pending I/O callbacks. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

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
