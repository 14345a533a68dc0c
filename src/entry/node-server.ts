// A Node-mode HTTP server process: the only process with PLACEMENT_WORKERS=1,
// or one of the cluster's server processes. It listens at once; the database
// is prepared (here, or by the cluster primary) and the warm-up hook runs
// after, while requests are served (database-gate.ts, warm-up.ts).
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { ExecutionContext } from 'hono';
import { createApp } from '../app.js';
import type { AppConfig } from '../config.js';
import type { Deps, Logger } from '../deps.js';
import { startNodeJobs } from '../jobs/node-runner.js';
import { clusterMetricsSource } from '../observability/cluster.js';
import { WARMING } from '../observability/readiness.js';
import { watchNodeRuntime } from '../observability/runtime.js';
import { DatabaseGate, needsNoDatabase, preparedByPrimary, startRefusedAnswer, tellPrimaryReady } from './database-gate.js';
import { balanceConnections } from './connection-balance.js';
import { drainable } from './drain.js';
import { handleClientError, MAX_HEADER_BYTES, refuseWithoutHost, unreadableRequest } from './node-client-errors.js';
import { buildNodeDeps } from './node-service.js';
import { checkDatabasePath, checkPolicyFile, databaseOpenProblem, EXIT_CANNOT_START, listenProblem, refuseStart } from './node-start.js';
import { prepareDatabase, prepareWhenAnswered } from './prepare-database.js';
import { nodeRewarm, nodeWarmUp, runWarmUp } from './warm-up.js';
import { shareWriteMarks } from './write-marks-sharing.js';

export async function serveHttp(config: AppConfig): Promise<void> {
  const started = performance.now();
  const forked = cluster.isWorker;
  // Opened, not prepared: the migrations and the standard names (or, in a
  // cluster, the primary's word that it applied them) come after listening.
  const deps = await openDeps(config);
  deps.readiness.hold('warming', WARMING);
  // A scrape shows the whole cluster: the primary sums every process's counters.
  if (forked) deps.metricsSource = clusterMetricsSource(deps.metrics);
  // What answers wait on besides their own work (collections, the loop behind other answers), and memory.
  watchNodeRuntime(deps.metrics.registry);
  shareWriteMarks(deps.store);
  const app = createApp(deps);
  const executionCtx = nodeExecutionContext(deps.log);
  // @hono/node-server's serve(), plus its errorHandler: a request it cannot
  // turn into a fetch Request (no Host header, a target like "*") gets a 400
  // in the envelope instead of an empty one.
  const listener = getRequestListener((request, env) => app.fetch(request, env, executionCtx), {
    hostname: config.HOST,
    errorHandler: unreadableRequest,
  });
  // Requests that need the database wait here until it is prepared (database-gate.ts): a
  // database reached over the network, for as long as a write may wait for it, then 503 naming it.
  const gate = new DatabaseGate();
  const silence = deps.store.deadline;
  const waitAtGateMs = silence ? silence.writeMs : Number.POSITIVE_INFINITY;
  const notPreparedYet = () =>
    `The database does not answer: ${silence?.database ?? 'PLACEMENT_DB_URL'} ${
      silence?.answeredAt === undefined ? 'has not answered since this process started' : 'is not prepared yet'
    }, and this request waited ${waitAtGateMs} ms for it. Nothing was written; try again later.`;
  // Node's own refusal of an HTTP/1.1 request without Host is an empty 400:
  // refuseWithoutHost answers it in the envelope instead.
  const timeout = config.PLACEMENT_REQUEST_TIMEOUT_MS;
  const serverOptions = {
    maxHeaderSize: MAX_HEADER_BYTES,
    requireHostHeader: false,
    // A slow client gets the whole request's time for its head too; Node
    // checks both every connectionsCheckingInterval.
    requestTimeout: timeout,
    headersTimeout: timeout,
    connectionsCheckingInterval: Math.min(30_000, Math.max(50, Math.floor(timeout / 4))),
  };
  const server = createServer(serverOptions, (incoming, outgoing) => {
    drain.track(outgoing);
    keepShare?.(outgoing);
    if (refuseWithoutHost(incoming, outgoing)) return;
    if (gate.isOpen || needsNoDatabase(incoming.method, incoming.url)) void listener(incoming, outgoing);
    else
      void gate.passedWithin(waitAtGateMs).then(
        (passed) => (passed ? listener(incoming, outgoing) : gate.answering(() => startRefusedAnswer(outgoing, notPreparedYet()))),
        (refused: Error) => gate.answering(() => startRefusedAnswer(outgoing, refused.message)),
      );
  });
  const drain = drainable(server);
  // In a cluster: no process keeps many more of the kept-alive connections than the others.
  const keepShare = forked ? balanceConnections(server) : undefined;
  server.once('error', (err) => {
    const problem = listenProblem(err, config.HOST, config.PORT);
    if (!problem) throw err;
    if (!forked) refuseStart(problem);
    // The primary probed the port before forking; losing it since is told once, by the primary.
    process.exit(EXIT_CANNOT_START);
  });

  // What Node's HTTP parser refuses (unknown methods, oversized heads, bad
  // content-length) is answered in the API's envelope, not with a bare 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => handleClientError(app.fetch, err, socket as Socket));

  // Stop accepting, let requests in flight finish (each answered with
  // Connection: close) for at most the grace period, then close the database.
  let stopping = false;
  let jobs: { stop(): void } | undefined;
  let refresher: { stop(): void } | undefined;
  async function shutdown(signal: NodeJS.Signals) {
    if (stopping) return;
    stopping = true;
    if (forked) deps.log.debug('server process stopping', { pid: process.pid, signal });
    else deps.log.info('placement-edge stopping', { pid: process.pid, signal });
    const grace = config.PLACEMENT_SHUTDOWN_GRACE_MS;
    const { inFlight, cut } = await drain.drain(grace);
    jobs?.stop();
    refresher?.stop();
    deps.store.close();
    const fields = { signal, pid: process.pid, in_flight: inFlight, cut };
    if (cut > 0) deps.log.warn(`stopped after the ${grace} ms grace period, cutting requests in flight`, fields);
    else if (forked) deps.log.debug('server process stopped', fields);
    else deps.log.info('placement-edge stopped', fields);
    process.exit(0);
  }
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);

  await new Promise<void>((resolve) =>
    server.listen(config.PORT, config.HOST, () => {
      const url = `http://${config.HOST}:${(server.address() as AddressInfo).port}`;
      if (forked) deps.log.debug('server process listening', { url, pid: process.pid });
      else deps.log.info('placement-edge listening', { url, db: config.PLACEMENT_DB_URL, processes: 1 });
      resolve();
    }),
  );

  // Warming, while requests are served: the database prepared (here, or by the primary) ...
  if (forked) await preparedByPrimary();
  else {
    // A database that does not answer is waited for (/readyz names it, requests get 503); one that refuses stops the start.
    await prepareWhenAnswered(() => prepareDatabase(deps.store.client), deps.log).catch(async (err: unknown) => {
      // The requests waiting for it first get their 503.
      const problem = databaseOpenProblem(config.PLACEMENT_DB_URL, err);
      await gate.refuse(new Error(`The service could not start: ${problem.message}`));
      return refuseStart(problem);
    });
    // The extensions' own start, before any claim (project limits: read, or the start refused as configured).
    await deps.extensions.start(deps).catch(refuseStart);
  }
  gate.open();
  // ... accelerator bind jobs and Nova events: an in-process queue for the work
  // this process commits; the sweeps run here only when no primary runs them ...
  jobs = startNodeJobs(deps, { timers: !forked });
  // ... the warm-up hook (warm-up.ts), and the trees kept current as any process writes.
  await runWarmUp(nodeWarmUp, deps);
  refresher = keepTreesFresh(deps);
  deps.readiness.release('warming');
  const ready = { pid: process.pid, ms: Math.round(performance.now() - started) };
  if (forked) {
    deps.log.debug('server process ready', ready);
    tellPrimaryReady();
  } else deps.log.info('placement-edge ready', ready);
}

/**
 * The provider trees kept in memory brought up to date every
 * PLACEMENT_TREE_REFRESH_MS with writes from any process, so the first
 * candidates request after a load reads none, and the engine re-warmed over
 * them when they take a shape this process has not answered over (a cloud
 * loaded after the start: nodeRewarm). A database file only: its
 * batches run in call order, so a refresh and a request apply their
 * snapshots in the order they were read.
 */
function keepTreesFresh(deps: Deps): { stop(): void } | undefined {
  const { config, log, store } = deps;
  if (config.PLACEMENT_TREE_REFRESH_MS === 0 || config.PLACEMENT_CANDIDATE_TREE_CACHE === 0 || !config.PLACEMENT_DB_URL.startsWith('file:'))
    return undefined;
  return deps.candidates.keepFresh(
    store.nearby,
    config.PLACEMENT_TREE_REFRESH_MS,
    (err) => log.warn('refreshing the provider trees failed', { err: String(err) }),
    (kind) => nodeRewarm(deps, kind),
  );
}

/** The Deps on the database opened (not yet prepared), or the start refused in one line when it cannot be opened. */
async function openDeps(config: AppConfig): Promise<Deps> {
  // A forked worker finds the paths checked by the primary.
  if (!cluster.isWorker) {
    try {
      checkPolicyFile(config.PLACEMENT_POLICY_FILE);
      checkDatabasePath(config.PLACEMENT_DB_URL);
    } catch (err) {
      return refuseStart(err);
    }
  }
  try {
    return await buildNodeDeps(config, undefined, { prepare: false });
  } catch (err) {
    return refuseStart(databaseOpenProblem(config.PLACEMENT_DB_URL, err));
  }
}

/**
 * A Worker's ExecutionContext, for Node: work handed to waitUntil() runs on
 * and its failure is logged. Without one, every mounted sub-app makes Hono
 * throw and catch an Error per request to find there is none.
 */
function nodeExecutionContext(log: Logger): ExecutionContext {
  return {
    waitUntil: (work) => {
      work.catch((err: unknown) => log.error('background work failed', { err: String(err) }));
    },
    passThroughOnException: () => {},
    props: {},
  };
}
