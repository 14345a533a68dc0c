// Worker-mode safety: two independent app instances (as two Worker isolates
// would be) talk to one sqld over libSQL's HTTP protocol and race claims on
// one provider. No in-process lock is shared between them; only the
// database's write transaction keeps the pool from being overcommitted.
import { createClient } from '@libsql/client/web';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createDataStore } from '../../src/db/client.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations.generated.js';
import { syncStandards } from '../../src/placement/sync-standards.js';
import { makeDeps } from '../../src/compose.js';
import { describeWithPart } from '../helpers/parts.js';
import { SQLD_MISSING, startSqld, type Sqld } from '../helpers/sqld.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const RP = '5a1c0d9e-0000-4000-8000-00000000c0de';
const POOL = 5;
const ATTEMPTS = 16;

describeWithPart(SQLD_MISSING, 'two isolates racing claims against sqld', () => {
  let sqld: Sqld;
  let apps: ReturnType<typeof createApp>[];

  beforeAll(async () => {
    sqld = await startSqld();
    const config = loadConfig({ PLACEMENT_DB_URL: sqld.url, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' });
    const first = createClient({ url: sqld.url });
    await applyMigrations(first, MIGRATIONS);
    await syncStandards(first);
    apps = [first, createClient({ url: sqld.url })].map((client) => createApp(makeDeps(createDataStore(client), config, silent)));
  }, 60_000);
  afterAll(() => sqld?.stop());

  const call = (app: ReturnType<typeof createApp>, method: string, path: string, body?: unknown) =>
    app.request(path, {
      method,
      headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement 1.39' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('never overcommits; every refusal is a 409 in the error envelope', async () => {
    expect((await call(apps[0]!, 'POST', '/resource_providers', { name: 'edge-cn', uuid: RP })).status).toBe(200);
    expect(
      (
        await call(apps[1]!, 'PUT', `/resource_providers/${RP}/inventories`, {
          resource_provider_generation: 0,
          inventories: { VCPU: { total: POOL } },
        })
      ).status,
    ).toBe(200);

    const results = await Promise.all(
      Array.from({ length: ATTEMPTS }, (_, i) =>
        call(apps[i % 2]!, 'PUT', `/allocations/${crypto.randomUUID()}`, {
          allocations: { [RP]: { resources: { VCPU: 1 } } },
          project_id: 'p',
          user_id: 'u',
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        }),
      ),
    );
    const statuses = results.map((r) => r.status);
    const ok = statuses.filter((s) => s === 204).length;
    const refused = results.filter((r) => r.status === 409);
    for (const res of refused) {
      const body = (await res.json()) as { errors: { status: number }[] };
      expect(body.errors[0]!.status).toBe(409);
    }
    expect(ok + refused.length).toBe(ATTEMPTS);
    // Writers are serialised by the database, so exactly the pool is granted.
    expect(ok).toBe(POOL);
    const usages = (await (await call(apps[0]!, 'GET', `/resource_providers/${RP}/usages`)).json()) as { usages: { VCPU: number } };
    expect(usages.usages.VCPU).toBe(ok);
    expect(usages.usages.VCPU).toBeLessThanOrEqual(POOL);
  }, 60_000);

  it('one-batch provider writes at one generation from both isolates: exactly one wins, the generation moves once', async () => {
    const rp = crypto.randomUUID();
    expect((await call(apps[0]!, 'POST', '/resource_providers', { name: `race-${rp}`, uuid: rp })).status).toBe(200);
    const results = await Promise.all(
      Array.from({ length: ATTEMPTS }, (_, i) =>
        i % 4 < 2
          ? call(apps[i % 2]!, 'PUT', `/resource_providers/${rp}/inventories`, {
              resource_provider_generation: 0,
              inventories: { VCPU: { total: 1 + i } },
            })
          : call(apps[i % 2]!, 'PUT', `/resource_providers/${rp}/traits`, { resource_provider_generation: 0, traits: ['HW_CPU_X86_AVX2'] }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const lost of results.filter((r) => r.status !== 200)) {
      expect(lost.status).toBe(409);
      expect(((await lost.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('placement.concurrent_update');
    }
    const shown = (await (await call(apps[1]!, 'GET', `/resource_providers/${rp}`)).json()) as { generation: number };
    expect(shown.generation).toBe(1);
  }, 60_000);
});
