// `npm start`: the service on an embedded libSQL file (or a libSQL URL).
import { serve } from '@hono/node-server';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { startNodeJobs } from '../jobs/node-runner.js';
import type { Socket } from 'node:net';
import { handleClientError, MAX_HEADER_BYTES } from './node-client-errors.js';
import { buildNodeDeps } from '../node-service.js';

const config = loadConfig(process.env);
const deps = await buildNodeDeps(config);
// Accelerator bind jobs and Nova events: in-process queue + outbox/timeout sweeps.
const jobs = startNodeJobs(deps);
const app = createApp(deps);
const server = serve({ fetch: app.fetch, hostname: config.HOST, port: config.PORT, serverOptions: { maxHeaderSize: MAX_HEADER_BYTES } }, (info) => {
  deps.log.info('placement-edge listening', { url: `http://${config.HOST}:${info.port}`, db: config.PLACEMENT_DB_URL });
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
