// `npm start`: the service on an embedded libSQL file (or a libSQL URL). With
// more than one server process (PLACEMENT_WORKERS, default one per core) this
// process becomes the cluster primary and forks the HTTP servers.
import cluster from 'node:cluster';
import type { Socket } from 'node:net';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import type { ExecutionContext } from 'hono';
import { createApp } from '../app.js';
import { checkSettings } from '../settings-check.js';
import { startNodeJobs } from '../jobs/node-runner.js';
import { runPrimary } from './node-cluster.js';
import { shareWriteMarks } from './write-marks-sharing.js';
import { handleClientError, MAX_HEADER_BYTES, refuseWithoutHost, unreadableRequest } from './node-client-errors.js';
import { buildNodeDeps, serverProcessCount } from './node-service.js';
import { consoleLogger, type Logger } from '../deps.js';
import { clusterMetricsSource } from '../observability/cluster.js';
import { configSummary } from '../observability/config-summary.js';
import { drainable } from './drain.js';
import {
  checkDatabasePath,
  checkPolicyFile,
  databaseOpenProblem,
  EXIT_CANNOT_START,
  listenProblem,
  refuseStart,
  serverArgs,
} from './node-start.js';
import { prepareForTraffic } from './node-warm-up.js';

// --help and --version answer before anything is opened or created.
const info = cluster.isPrimary ? serverArgs(process.argv.slice(2)) : null;
if (info) {
  (info.code === 0 ? process.stdout : process.stderr).write(`${info.text}\n`);
  process.exit(info.code);
}
const config = (() => {
  try {
    return checkSettings(process.env);
  } catch (err) {
    return refuseStart(err);
  }
})();
const processes = serverProcessCount(config);
if (cluster.isPrimary) {
  consoleLogger(config.LOG_LEVEL).info('placement-edge starting', {
    pid: process.pid,
    node: process.version,
    processes,
    config: configSummary(config),
  });
}
if (cluster.isPrimary && processes > 1) await runPrimary(config, processes);
else await serveHttp();

async function serveHttp(): Promise<void> {
  const forked = cluster.isWorker;
  const deps = await openDeps(forked);
  // A scrape shows the whole cluster: the primary sums every process's counters.
  if (forked) deps.metricsSource = clusterMetricsSource(deps.metrics);
  // Accelerator bind jobs and Nova events: an in-process queue for the work
  // this process commits; the sweeps run here only when no primary runs them.
  const jobs = startNodeJobs(deps, { timers: !forked });
  shareWriteMarks(deps.store);
  const app = createApp(deps);
  // Warm-up and the provider trees read before listening: first answers as fast as later ones.
  const readiness = await prepareForTraffic(deps);
  const executionCtx = nodeExecutionContext(deps.log);
  // @hono/node-server's serve(), plus its errorHandler: a request it cannot
  // turn into a fetch Request (no Host header, a target like "*") gets a 400
  // in the envelope instead of an empty one.
  const listener = getRequestListener((request, env) => app.fetch(request, env, executionCtx), {
    hostname: config.HOST,
    errorHandler: unreadableRequest,
  });
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
    if (!refuseWithoutHost(incoming, outgoing)) void listener(incoming, outgoing);
  });
  const drain = drainable(server);
  server.once('error', (err) => {
    const problem = listenProblem(err, config.HOST, config.PORT);
    if (!problem) throw err;
    if (!forked) refuseStart(problem);
    // The primary probed the port before forking; losing it since is told once, by the primary.
    process.exit(EXIT_CANNOT_START);
  });
  server.listen(config.PORT, config.HOST, () => {
    const url = `http://${config.HOST}:${(server.address() as AddressInfo).port}`;
    if (forked) deps.log.debug('server process listening', { url, pid: process.pid });
    else deps.log.info('placement-edge listening', { url, db: config.PLACEMENT_DB_URL, processes: 1 });
  });

  // What Node's HTTP parser refuses (unknown methods, oversized heads, bad
  // content-length) is answered in the API's envelope, not with a bare 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => handleClientError(app.fetch, err, socket as Socket));

  // Stop accepting, let requests in flight finish (each answered with
  // Connection: close) for at most the grace period, then close the database.
  let stopping = false;
  async function shutdown(signal: NodeJS.Signals) {
    if (stopping) return;
    stopping = true;
    if (forked) deps.log.debug('server process stopping', { pid: process.pid, signal });
    else deps.log.info('placement-edge stopping', { pid: process.pid, signal });
    const grace = config.PLACEMENT_SHUTDOWN_GRACE_MS;
    const { inFlight, cut } = await drain.drain(grace);
    jobs.stop();
    readiness.stop();
    deps.store.close();
    const fields = { signal, pid: process.pid, in_flight: inFlight, cut };
    if (cut > 0) deps.log.warn(`stopped after the ${grace} ms grace period, cutting requests in flight`, fields);
    else if (forked) deps.log.debug('server process stopped', fields);
    else deps.log.info('placement-edge stopped', fields);
    process.exit(0);
  }
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}

/** The Deps, or the start refused in one line when the database cannot be opened. */
async function openDeps(forked: boolean) {
  // A forked worker finds the database prepared by the primary.
  if (forked) return buildNodeDeps(config, undefined, { prepare: false });
  try {
    checkPolicyFile(config.PLACEMENT_POLICY_FILE);
    checkDatabasePath(config.PLACEMENT_DB_URL);
  } catch (err) {
    return refuseStart(err);
  }
  let deps: Awaited<ReturnType<typeof buildNodeDeps>>;
  try {
    deps = await buildNodeDeps(config);
  } catch (err) {
    return refuseStart(databaseOpenProblem(config.PLACEMENT_DB_URL, err));
  }
  // Project limits (PLACEMENT_LIMITS): read once before serving; limits that cannot be read as configured refuse the start.
  await deps.limits?.start().catch(refuseStart);
  return deps;
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
