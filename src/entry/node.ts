// `npm start`: the service on an embedded libSQL file (or a libSQL URL).
import { serve } from '@hono/node-server';
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { buildNodeDeps } from '../node-service.js';

const config = loadConfig(process.env);
const deps = await buildNodeDeps(config);
const app = createApp(deps);
const server = serve({ fetch: app.fetch, hostname: config.HOST, port: config.PORT }, (info) => {
  deps.log.info('placement-edge listening', { url: `http://${config.HOST}:${info.port}`, db: config.PLACEMENT_DB_URL });
});

function shutdown() {
  server.close(() => {
    deps.store.close();
    process.exit(0);
  });
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
