// Keystone auth inside workerd: the Worker's own boot pieces (bindings ->
// config, libSQL over HTTP, makeDeps) with PLACEMENT_AUTH_STRATEGY=keystone,
// validating over workerd's fetch against the fake Keystone of
// fake-keystone-setup.ts, for what the real one cannot show cheaply: it
// counts the round trips (one for a new token, none for a cached one) and
// goes down on demand. workerd against the real Keystone is
// test/wrangler-dev/keystone.test.ts (`wrangler dev`).
import { createClient } from '@libsql/client/web';
import { describe, expect, inject, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { createDataStore } from '../../src/db/client.js';
import { consoleLogger } from '../../src/deps.js';
import { prepareDatabase } from '../../src/entry/prepare-database.js';
import { environmentFromBindings } from '../../src/entry/worker.js';
import { fakeKeystoneEnv } from '../helpers/fake-keystone.js';

const keystoneUrl = inject('keystoneUrl');
const control = new URL(keystoneUrl).origin;

async function bootWorkerApp(bindings: Record<string, string> = {}) {
  const config = loadConfig(
    environmentFromBindings({ PLACEMENT_DB_URL: inject('sqldUrl'), LOG_LEVEL: 'silent', ...fakeKeystoneEnv(keystoneUrl), ...bindings }),
  );
  const client = createClient({ url: config.PLACEMENT_DB_URL, concurrency: Number.MAX_SAFE_INTEGER });
  await prepareDatabase(client);
  return createApp(makeDeps(createDataStore(client), config, consoleLogger('silent')));
}

const validations = async () =>
  ((await (await fetch(`${control}/__calls`)).json()) as string[]).filter((c) => c === 'GET /v3/auth/tokens').length;

describe('keystone strategy in workerd', () => {
  it('validates a new token with one Keystone round trip and a cached one with none', async () => {
    const suffix = crypto.randomUUID();
    await fetch(`${control}/__users`, {
      method: 'PUT',
      body: JSON.stringify({
        [`admin-${suffix}`]: { userId: 'admin', projectId: 'ops', roles: ['admin', 'reader'] },
        [`reader-${suffix}`]: { userId: 'reader', projectId: 'tenant-w', roles: ['reader'] },
      }),
    });
    const app = await bootWorkerApp();
    const get = (path: string, token: string) =>
      app.fetch(new Request(`http://edge.test${path}`, { headers: { 'x-auth-token': token, 'openstack-api-version': 'placement 1.39' } }));

    // Warm the service's own token (one password authentication) on a first request.
    expect((await get('/resource_providers', `admin-${suffix}`)).status).toBe(200);
    const before = await validations();
    const concurrent = await Promise.all(Array.from({ length: 5 }, () => get('/usages?project_id=tenant-w', `reader-${suffix}`)));
    expect(concurrent.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await validations()).toBe(before + 1);
    expect((await get('/usages?project_id=other', `reader-${suffix}`)).status).toBe(403);
    expect((await get('/resource_providers', `admin-${suffix}`)).status).toBe(200);
    expect(await validations()).toBe(before + 1);

    const refused = await get('/resource_providers', `unknown-${suffix}`);
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(`Keystone uri="${keystoneUrl}"`);
    expect(await validations()).toBe(before + 2);

    await fetch(`${control}/__down`, { method: 'PUT', body: JSON.stringify({ down: true }) });
    try {
      expect((await get('/resource_providers', `admin-${suffix}`)).status).toBe(200);
      const unavailable = await get('/resource_providers', `new-${suffix}`);
      expect(unavailable.status).toBe(503);
      expect(((await unavailable.json()) as { errors: { title: string }[] }).errors[0]!.title).toBe('Service Unavailable');
    } finally {
      await fetch(`${control}/__down`, { method: 'PUT', body: JSON.stringify({ down: false }) });
    }
  });

  it('/readyz is 503 naming the refused sign-in with a wrong PLACEMENT_KEYSTONE_PASSWORD, 200 with the right one', async () => {
    const readyz = async (app: Awaited<ReturnType<typeof bootWorkerApp>>) => {
      const res = await app.fetch(new Request('http://edge.test/readyz'));
      return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
    };
    const wrong = await readyz(await bootWorkerApp({ PLACEMENT_KEYSTONE_PASSWORD: 'not-the-password' }));
    expect(wrong.status).toBe(503);
    expect(wrong.body.reason).toMatch(
      /^the service cannot sign in to Keystone: .*HTTP 401; check PLACEMENT_KEYSTONE_USERNAME, PLACEMENT_KEYSTONE_PASSWORD/,
    );
    expect(await readyz(await bootWorkerApp())).toEqual({ status: 200, body: { status: 'ready' } });
  });
});
