// GET /healthz and GET /readyz: no token in any auth mode, readiness in one
// database round trip, and a 503 naming the reason when the database is not
// ready (schema missing, migrations pending, standard names not synced, gone).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { createDataStore } from '../../src/db/client.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations.generated.js';
import { openNodeClient } from '../../src/db/node-client.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'placement-health-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An app on `file` whose store counts its round trips, prepared only as far as the test wants. */
async function countedApp(file: string, env: Record<string, string> = {}) {
  const dbUrl = `file:${join(dir, file)}`;
  const counted = countRoundTrips(await openNodeClient(dbUrl));
  const deps = makeDeps(createDataStore(counted.client), loadConfig({ PLACEMENT_DB_URL: dbUrl, ...env }), silent);
  return { app: createApp(deps), counted, deps, client: counted.client };
}

const readyz = async (app: ReturnType<typeof createApp>) => {
  const res = await app.request('/readyz');
  return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
};

describe('GET /healthz', () => {
  it('answers 200 without a token and without touching the database', async () => {
    const { app, counted, deps } = await countedApp('healthz.db', {
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: '{"t": {"roles": ["admin"]}}',
    });
    counted.reset();
    const res = await app.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.headers.get('x-openstack-request-id')).toMatch(/^req-[0-9a-f-]{36}$/);
    expect(counted.count()).toBe(0);
    expect((await app.request('/healthz', { method: 'HEAD' })).status).toBe(200);
    deps.store.close();
  });
});

describe('GET /readyz', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp({ PLACEMENT_AUTH_STRATEGY: 'token', PLACEMENT_AUTH_TOKENS: '{"t": {"roles": ["admin"]}}' });
  });
  afterAll(() => t.close());

  it('answers 200 on a prepared database, without a token', async () => {
    expect(await readyz(t.app)).toEqual({ status: 200, body: { status: 'ready' } });
  });

  it('reads the database in one round trip', async () => {
    const { app, counted, deps } = await countedApp('one-trip.db');
    await applyMigrations(counted.client, MIGRATIONS);
    const { syncStandards } = await import('../../src/placement/sync-standards.js');
    await syncStandards(counted.client);
    counted.reset();
    expect((await readyz(app)).status).toBe(200);
    expect(counted.count()).toBe(1);
    deps.store.close();
  });

  it('answers 503 naming what is missing: the schema, then the standard names', async () => {
    const { app, deps, client } = await countedApp('unprepared.db');
    const empty = await readyz(app);
    expect(empty.status).toBe(503);
    expect(empty.body.status).toBe('not ready');
    expect(empty.body.reason).toMatch(/migrations were not applied/);

    await applyMigrations(client, MIGRATIONS);
    const unsynced = await readyz(app);
    expect(unsynced.status).toBe(503);
    expect(unsynced.body.reason).toMatch(/standard names are not synced: 0 of \d+ resource classes/);
    deps.store.close();
  });

  it('answers 503 when a migration of this build is not applied', async () => {
    const { app, deps, client } = await countedApp('behind.db');
    await applyMigrations(client, MIGRATIONS.slice(0, -1));
    const behind = await readyz(app);
    expect(behind.status).toBe(503);
    expect(behind.body.reason).toBe('1 database migration(s) of this build are not applied');
    deps.store.close();
  });

  it("answers the process's own holds first, earliest first, without reading the database; ready once all are released", async () => {
    const { app, counted, deps } = await countedApp('held.db');
    await applyMigrations(counted.client, MIGRATIONS);
    deps.readiness.hold('warming', 'warming');
    deps.readiness.hold('other', 'another part is not ready');
    counted.reset();
    expect(await readyz(app)).toEqual({ status: 503, body: { status: 'not ready', reason: 'warming' } });
    expect(counted.count()).toBe(0);
    deps.readiness.release('warming');
    expect(await readyz(app)).toEqual({ status: 503, body: { status: 'not ready', reason: 'another part is not ready' } });
    deps.readiness.release('other');
    // Then the database decides: here the standard names were never synced.
    expect((await readyz(app)).body.reason).toMatch(/^the standard names are not synced/);
    deps.store.close();
  });

  it('answers 503 when the database does not answer', async () => {
    const { app, deps } = await countedApp('closed.db');
    deps.store.close();
    const gone = await readyz(app);
    expect(gone.status).toBe(503);
    expect(gone.body.reason).toMatch(/^the database does not answer: /);
  });
});
