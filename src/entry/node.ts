// `npm start`: the service on an embedded libSQL file (or a libSQL URL). With
// more than one server process (PLACEMENT_WORKERS, default one per core) this
// process becomes the cluster primary and forks the HTTP servers.
import cluster from 'node:cluster';
import { serve } from '@hono/node-server';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { webobDetail } from '../http/api-error.js';
import { startNodeJobs } from '../jobs/node-runner.js';
import { runPrimary } from '../node-cluster.js';
import { buildNodeDeps, serverProcessCount } from '../node-service.js';

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
  const app = createApp(deps);
  const server = serve({ fetch: app.fetch, hostname: config.HOST, port: config.PORT }, (info) => {
    const url = `http://${config.HOST}:${info.port}`;
    if (forked) deps.log.debug('server process listening', { url, pid: process.pid });
    else deps.log.info('placement-edge listening', { url, db: config.PLACEMENT_DB_URL, processes: 1 });
  });

  // Node's HTTP parser rejects a non-integer content-length before the app sees
  // it; answer in placement's envelope, as upstream does, instead of a bare 400.
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    if (err.code === 'HPE_INVALID_CONTENT_LENGTH' || err.code === 'HPE_UNEXPECTED_CONTENT_LENGTH') {
      const body = JSON.stringify({
        errors: [{ status: 400, title: 'Bad Request', detail: webobDetail(400, 'content-length header must be an integer'), request_id: `req-${crypto.randomUUID()}` }],
      });
      socket.end(`HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
      return;
    }
    socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });

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
