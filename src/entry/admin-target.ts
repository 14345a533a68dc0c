// The target database served in-process, so --verify reads it through the
// same REST API as the source without a running service. It is the
// operator's own database on this machine: the in-process app runs noauth2.
import { createApp } from '../app.js';
import { loadConfig } from '../config.js';
import { buildNodeDeps } from './node-service.js';
import type { PlacementEndpoint } from '../admin/placement-reader.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

export async function openInProcessTarget(dbUrl: string, authToken?: string): Promise<{ endpoint: PlacementEndpoint; close(): void }> {
  const config = loadConfig({
    PLACEMENT_DB_URL: dbUrl,
    ...(authToken ? { PLACEMENT_DB_AUTH_TOKEN: authToken } : {}),
    PLACEMENT_AUTH_STRATEGY: 'noauth2',
    PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
  });
  const deps = await buildNodeDeps(config, silent);
  const app = createApp(deps);
  const base = 'http://placement-edge.local';
  return {
    endpoint: {
      label: `target (${dbUrl})`,
      base,
      token: 'admin',
      fetch: async (input, init) => app.fetch(new Request(input, init)),
    },
    close: () => deps.store.close(),
  };
}
