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
import { loadConfig } from '../config.js';
import { startNodeJobs } from '../jobs/node-runner.js';
import { runPrimary } from './node-cluster.js';
import { shareWriteMarks } from './write-marks-sharing.js';
import { handleClientError, MAX_HEADER_BYTES, refuseWithoutHost, unreadableRequest } from './node-client-errors.js';
import { buildNodeDeps, serverProcessCount } from './node-service.js';
import type { Logger } from '../deps.js';

const config = loadConfig(process.env);
const processes = serverProcessCount(config);
if (cluster.isPrimary && processes > 1) await runPrimary(config, processes);
else await serveHttp();

async function serveHttp(): Promise<void> {
  const forked = cluster.isWorker;
  // A forked worker finds the database prepared by the primary.
  const deps = await buildNodeDeps(config, undefined, { prepare: !forked });
  // Accelerator bind jobs and Nova events: an in-process queue for the work
  // this process commits; the sweeps run here only when no primary runs them.
  const jobs = startNodeJobs(deps, { timers: !forked });
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
    if (!refuseWithoutHost(incoming, outgoing)) void listener(incoming, outgoing);
  });
  server.listen(config.PORT, config.HOST, () => {
    const url = `http://${config.HOST}:${(server.address() as AddressInfo).port}`;
    if (forked) deps.log.debug('server process listening', { url, pid: process.pid });
    else deps.log.info('placement-edge listening', { url, db: config.PLACEMENT_DB_URL, processes: 1 });
  });

  // What Node's HTTP parser refuses (unknown methods, oversized heads, bad
  // content-length) is answered in the API's envelope, not with a bare 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => handleClientError(app.fetch, err, socket as Socket));

  function shutdown() {
    jobs.stop();
    server.close(() => {
      deps.store.close();
      process.exit(0);
    });
    setTimeout(() => process.exit(0), 2000).unref();
  }
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
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
