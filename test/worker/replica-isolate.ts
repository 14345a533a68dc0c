// An isolate's app as the Worker entry builds it (openWorkerStore), on the
// shared sqld primary of the Worker suite; reading from a replica when `env`
// names one (PLACEMENT_DB_READ_URL).
import { inject } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import type { Logger } from '../../src/deps.js';
import { prepareDatabase } from '../../src/entry/prepare-database.js';
import { openWorkerStore } from '../../src/entry/worker.js';

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {} };

export async function replicaIsolate(env: Record<string, string> = {}, log: Logger = silent) {
  const config = loadConfig({
    PLACEMENT_DB_URL: inject('replicaPrimaryUrl'),
    PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
    ...env,
  });
  const store = openWorkerStore(config, log);
  await prepareDatabase(store.client);
  const app = createApp(makeDeps(store, config, log));
  const call = (method: string, path: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  return { store, call };
}
