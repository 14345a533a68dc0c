// `npm start`: the service on an embedded libSQL file (or a libSQL URL). With
// more than one server process (PLACEMENT_WORKERS, default one per core) this
// process becomes the cluster primary and forks the HTTP servers
// (node-cluster.ts); otherwise it is the one server (node-server.ts).
import cluster from 'node:cluster';
import { consoleLogger } from '../deps.js';
import { configSummary, startSummary } from '../observability/config-summary.js';
import { nodeEnvironment } from '../config.js';
import { checkSettings } from './settings-check.js';
import { refuseStart, serverArgs, serverProcessCount } from './node-start.js';

// --help and --version answer before anything is opened or created.
const info = cluster.isPrimary ? serverArgs(process.argv.slice(2)) : null;
if (info) {
  (info.code === 0 ? process.stdout : process.stderr).write(`${info.text}\n`);
  process.exit(info.code);
}
const config = (() => {
  try {
    return checkSettings(nodeEnvironment(process.env));
  } catch (err) {
    return refuseStart(err);
  }
})();
const processes = serverProcessCount(config);
if (cluster.isPrimary) {
  // One short line first (what starts, where), then every setting on a line of its own.
  const log = consoleLogger(config.LOG_LEVEL);
  log.info('placement-edge starting', startSummary(config, { pid: process.pid, node: process.version, processes }));
  log.info('placement-edge configuration', { config: configSummary(config) });
}
// The code for either role is loaded only now: a cluster primary forks its
// server processes first, and loads the service's code while they start.
if (cluster.isPrimary && processes > 1) await (await import('./node-cluster.js')).runPrimary(config, processes);
else await (await import('./node-server.js')).serveHttp(config);
