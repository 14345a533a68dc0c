// `npm start`: the service on an embedded libSQL file (or a libSQL URL).
import { serve } from '@hono/node-server';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { webobDetail } from '../http/api-error.js';
import { startNodeJobs } from '../jobs/node-runner.js';
import { buildNodeDeps } from '../node-service.js';

const config = loadConfig(process.env);
const deps = await buildNodeDeps(config);
// Accelerator bind jobs and Nova events: in-process queue + outbox/timeout sweeps.
const jobs = startNodeJobs(deps);
const app = createApp(deps);
const server = serve({ fetch: app.fetch, hostname: config.HOST, port: config.PORT }, (info) => {
  deps.log.info('placement-edge listening', { url: `http://${config.HOST}:${info.port}`, db: config.PLACEMENT_DB_URL });
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
