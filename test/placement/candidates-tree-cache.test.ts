// The provider trees allocation candidates keep in memory (cloud-model.ts):
// one round trip per request, warm or after a write; writes from another
// process on the same file are seen at once; a class removed (a change to
// every tree) is followed too.
import type { InStatement } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { clientReader } from '../../src/db/client.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { Microversion } from '../../src/http/microversion.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { createApp } from '../../src/app.js';
import { findAllocationCandidates } from '../../src/placement/candidates/index.js';
import { parseCandidateQueryString } from '../../src/placement/candidates/parse.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const sqlOf = (statement: InStatement): string => (typeof statement === 'string' ? statement : statement.sql);
const silent = { debug() {}, info() {}, warn() {}, error() {} };

describe('allocation candidates from the trees kept in memory', () => {
  let app: TestApp;
  let hosts: string[];
  beforeAll(async () => {
    app = await makeTestApp();
    hosts = [];
    for (let i = 0; i < 6; i += 1) {
      hosts.push(await provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } }, traits: ['HW_CPU_X86_AVX2'] }));
    }
  });
  afterAll(() => app.close());

  const rootsFor = async (query: string, via: TestApp = app): Promise<string[]> => {
    const res = await via.call('GET', `/allocation_candidates?${query}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { allocation_requests: { allocations: Record<string, unknown> }[] };
    return body.allocation_requests.flatMap((r) => Object.keys(r.allocations)).sort();
  };

  it('answers in one round trip, warm or right after a write', async () => {
    const counted = countRoundTrips(app.deps.store.client);
    const plain = clientReader(counted.client);
    const batches: string[][] = [];
    const reader = {
      readBatch: (statements: InStatement[]) => {
        batches.push(statements.map(sqlOf));
        return plain.readBatch(statements);
      },
    };
    const mv = Microversion.parse('1.39')!;
    // The app's engine (its tree cache, its hooks), with a cache size of this test's own.
    const options = app.deps.candidates.options({ randomize: false, maxCandidates: 0, treeCacheProviders: 1000 });
    const ask = async (query: string) => {
      counted.reset();
      const body = await findAllocationCandidates(reader, parseCandidateQueryString(query, mv), mv, options);
      return { trips: counted.count(), count: body.allocation_requests.length };
    };
    expect(await ask('resources=VCPU:1')).toEqual({ trips: 1, count: 6 }); // cold: every tree read
    expect(await ask('resources=VCPU:1&required=HW_CPU_X86_AVX2')).toEqual({ trips: 1, count: 6 });
    // A write to one tree: the next request re-reads that tree in the same batch.
    const [first] = hosts;
    const generation = ((await (await app.call('GET', `/resource_providers/${first}`)).json()) as { generation: number }).generation;
    const res = await app.call('PUT', `/resource_providers/${first}/traits`, {
      body: { resource_provider_generation: generation, traits: [] },
    });
    expect(res.status).toBe(200);
    expect(await ask('resources=VCPU:1&required=HW_CPU_X86_AVX2')).toEqual({ trips: 1, count: 5 });
    expect(await ask('resources=VCPU:1&limit=2')).toEqual({ trips: 1, count: 2 });
    // The trees came from memory: after the cold load no batch reads providers' traits again, bar the changed tree's.
    expect(batches.every((b) => b.some((sql) => sql.includes('placement_tree_changes')))).toBe(true);
    expect(batches.slice(1).every((b) => b.every((sql) => !sql.includes('resource_providers p WHERE')))).toBe(true);
  });

  it('sees at once what another process writes to the same file', async () => {
    const other = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: app.dbUrl, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), silent, {
      prepare: false,
    });
    const otherApp = createApp(other);
    const viaOther: TestApp = {
      ...app,
      call: (method, path, opts = {}) =>
        Promise.resolve(
          otherApp.request(path, {
            method,
            headers: {
              'x-auth-token': 'admin',
              accept: 'application/json',
              'openstack-api-version': `placement ${opts.version ?? 'latest'}`,
              ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }),
            },
            body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
          }),
        ),
    };
    try {
      const before = await rootsFor('resources=MEMORY_MB:4096', viaOther); // warms the other process's trees
      expect(before).toHaveLength(6);
      // This process changes an inventory and adds a provider; the other one must see both.
      const target = hosts[1]!;
      const generation = ((await (await app.call('GET', `/resource_providers/${target}`)).json()) as { generation: number }).generation;
      const res = await app.call('PUT', `/resource_providers/${target}/inventories`, {
        body: { resource_provider_generation: generation, inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } } },
      });
      expect(res.status).toBe(200);
      const added = await provider(app, { inventory: { MEMORY_MB: { total: 8192 } } });
      const after = await rootsFor('resources=MEMORY_MB:4096', viaOther);
      expect(after).toEqual([...before.filter((u) => u !== target), added].sort());
      expect(after).toEqual(await rootsFor('resources=MEMORY_MB:4096'));
    } finally {
      other.store.close();
    }
  });

  it('follows a change that touches every tree (a custom class removed)', async () => {
    expect(await rootsFor('resources=VCPU:1')).toHaveLength(6);
    expect((await app.call('PUT', '/resource_classes/CUSTOM_GONE')).status).toBe(201);
    expect((await app.call('DELETE', '/resource_classes/CUSTOM_GONE')).status).toBe(204);
    expect(await rootsFor('resources=VCPU:1')).toHaveLength(6);
    const res = await app.call('GET', '/allocation_candidates?resources=CUSTOM_GONE:1');
    expect(res.status).toBe(400);
  });

  it('reads every tree again when the change counter went backwards (a database restored under it)', async () => {
    expect(await rootsFor('resources=VCPU:1')).toHaveLength(6);
    const { client } = app.deps.store;
    // As if an older copy of the database were put in place: its counter is behind the model's,
    // and it lacks the first host's VCPU inventory.
    await client.execute('UPDATE placement_tree_changes SET seq = 1');
    const target = hosts[0]!;
    await client.execute({
      sql: `DELETE FROM inventories WHERE resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = ?)
        AND resource_class_id = (SELECT id FROM resource_classes WHERE name = 'VCPU')`,
      args: [target],
    });
    const roots = await rootsFor('resources=VCPU:1');
    expect(roots).toHaveLength(5);
    expect(roots).not.toContain(target);
  });

  it('reads every tree again when the database is another one (its epoch token changed)', async () => {
    const before = await rootsFor('resources=MEMORY_MB:1');
    const { client } = app.deps.store;
    // Another database whose change counter is ahead of the model's: only the epoch tells.
    await client.execute("UPDATE placement_epoch SET token = 'another-database'");
    await client.execute('UPDATE placement_tree_changes SET seq = seq + 1000 WHERE root_id != 0');
    const gone = before[0]!;
    await client.execute({
      sql: `DELETE FROM inventories WHERE resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = ?)`,
      args: [gone],
    });
    await client.execute({
      sql: 'UPDATE placement_tree_changes SET seq = 1 WHERE root_id = (SELECT id FROM resource_providers WHERE uuid = ?)',
      args: [gone],
    });
    const after = await rootsFor('resources=MEMORY_MB:1');
    expect(after).toEqual(before.filter((uuid) => uuid !== gone));
  });
});
