// Another app on a test app's database, with its extensions changed (a
// declaration doubled, one left out), and JSON requests to any app as admin:
// what the tests that compare two apps on one database share.
import { createApp } from '../../src/app.js';
import { EXTENSIONS, makeDeps } from '../../src/compose.js';
import type { Deps } from '../../src/deps.js';
import { openStore } from '../../src/entry/node-service.js';
import type { Extension } from '../../src/extension.js';
import type { TestApp } from './test-app.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

export type App = ReturnType<typeof createApp>;

/** An app on `t`'s database whose extensions are EXTENSIONS, each passed through `swap`. */
export async function siblingApp(t: TestApp, swap: (extension: Extension) => Extension): Promise<{ app: App; deps: Deps }> {
  const store = await openStore(t.deps.config, { prepare: false }, silent);
  const deps = makeDeps(store, t.deps.config, silent, { extensions: EXTENSIONS.map(swap) });
  return { app: createApp(deps), deps };
}

/** A JSON request to `app` as admin: at the latest microversion without a body, at `bodyVersion` with one. */
export const adminRequest = (
  app: App,
  method: string,
  path: string,
  body?: unknown,
  { bodyVersion = '1.28', headers = {} }: { bodyVersion?: string; headers?: Record<string, string> } = {},
) =>
  app.request(path, {
    method,
    headers: {
      'x-auth-token': 'admin',
      'openstack-api-version': `placement ${body === undefined ? 'latest' : bodyVersion}`,
      'content-type': 'application/json',
      accept: 'application/json',
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
