// The import's write half on its own (no source needed): one transaction, so
// a write that fails half way (here: a duplicate consumer the database
// refuses after the providers went in) leaves the target exactly as it was,
// even with --replace; and a standard class this service does not know is
// refused before anything is opened.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeSnapshot } from '../../src/admin/import-writer.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations.generated.js';
import { openNodeClient } from '../../src/db/node-client.js';
import { syncStandards } from '../../src/placement/sync-standards.js';
import { openInProcessTarget } from '../../src/entry/admin-target.js';
import { describeWithPart } from '../helpers/parts.js';
import { SQLD_MISSING, startSqld } from '../helpers/sqld.js';
import type { ConsumerSnap, Snapshot } from '../../src/admin/placement-reader.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const RP = 'a1000000-0000-4000-8000-000000000001';
const consumer = (uuid: string): ConsumerSnap => ({
  uuid,
  projectId: 'p',
  userId: 'u',
  consumerType: 'INSTANCE',
  generation: 3,
  allocations: { [RP]: { VCPU: 1 } },
});
const snapshot = (consumers: ConsumerSnap[], resourceClasses = ['VCPU']): Snapshot => ({
  version: '1.39',
  resourceClasses,
  traits: [],
  providers: [
    {
      uuid: RP,
      name: 'imported',
      generation: 7,
      parentUuid: null,
      rootUuid: RP,
      inventories: { VCPU: { total: 8, reserved: 0, min_unit: 1, max_unit: 8, step_size: 1, allocation_ratio: 1 } },
      traits: [],
      aggregates: [],
      allocations: {},
    },
  ],
  consumers,
});

describe('import writer', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeTestApp();
  });
  afterEach(() => t.close());

  const providerNames = async () =>
    ((await (await t.call('GET', '/resource_providers')).json()) as { resource_providers: { name: string; generation: number }[] })
      .resource_providers;

  it('rolls everything back when a write fails half way, the wiped data included', async () => {
    expect((await t.call('POST', '/resource_providers', { body: { name: 'already-here' } })).status).toBe(200);
    const dup = 'c1000000-0000-4000-8000-000000000001';
    await expect(writeSnapshot(t.deps.store.client, snapshot([consumer(dup), consumer(dup)]), { replace: true })).rejects.toThrow(
      /UNIQUE constraint failed: consumers\.uuid/,
    );
    expect((await providerNames()).map((p) => p.name)).toEqual(['already-here']);
  });

  it('writes uuids and generations as read', async () => {
    const counts = await writeSnapshot(t.deps.store.client, snapshot([consumer('c1000000-0000-4000-8000-000000000002')]));
    expect(counts).toMatchObject({ providers: 1, consumers: 1, allocations: 1 });
    expect(await providerNames()).toMatchObject([{ name: 'imported', generation: 7 }]);
    const alloc = (await (await t.call('GET', '/allocations/c1000000-0000-4000-8000-000000000002')).json()) as Record<string, unknown>;
    expect(alloc).toMatchObject({ consumer_generation: 3, project_id: 'p', user_id: 'u', consumer_type: 'INSTANCE' });
  });

  it('takes a target whose only rows are leftovers of deleted consumers (projects, users, types) as empty', async () => {
    const rp = ((await (await t.call('POST', '/resource_providers', { body: { name: 'gone' } })).json()) as { uuid: string }).uuid;
    await t.call('PUT', `/resource_providers/${rp}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
    });
    const gone = 'c1000000-0000-4000-8000-0000000000ff';
    const claim = {
      allocations: { [rp]: { resources: { VCPU: 1 } } },
      project_id: 'p',
      user_id: 'u',
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
    expect((await t.call('PUT', `/allocations/${gone}`, { body: claim })).status).toBe(204);
    expect((await t.call('DELETE', `/allocations/${gone}`)).status).toBe(204);
    expect((await t.call('DELETE', `/resource_providers/${rp}`)).status).toBe(204);
    await writeSnapshot(t.deps.store.client, snapshot([consumer('c1000000-0000-4000-8000-000000000003')]));
    expect(await providerNames()).toMatchObject([{ name: 'imported' }]);
  });

  it('refuses a standard resource class it does not know, writing nothing', async () => {
    await expect(writeSnapshot(t.deps.store.client, snapshot([], ['VCPU', 'QUANTUM_FLUX']))).rejects.toThrow(
      /standard resource classes this service does not know .*QUANTUM_FLUX/,
    );
    expect(await providerNames()).toEqual([]);
  });
});

describeWithPart(SQLD_MISSING, 'import writer on a libSQL server (sqld)', () => {
  it('writes in one transaction over the network, refuses once it holds data, and rolls back a failed --replace', async () => {
    const sqld = await startSqld();
    const client = await openNodeClient(sqld.url);
    try {
      await applyMigrations(client, MIGRATIONS);
      await syncStandards(client);
      await writeSnapshot(client, snapshot([consumer('c2000000-0000-4000-8000-000000000001')]));
      await expect(writeSnapshot(client, snapshot([]))).rejects.toThrow(/already holds data \(.*1 resource_providers.*--replace/);
      const dup = consumer('c2000000-0000-4000-8000-000000000002');
      await expect(writeSnapshot(client, snapshot([dup, dup]), { replace: true })).rejects.toThrow(/UNIQUE/);
      // Served from the server: what the first import wrote, untouched by the failed one.
      const target = await openInProcessTarget(sqld.url);
      try {
        const res = await target.endpoint.fetch(`${target.endpoint.base}/allocations/c2000000-0000-4000-8000-000000000001`, {
          headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39' },
        });
        expect(await res.json()).toMatchObject({
          consumer_generation: 3,
          consumer_type: 'INSTANCE',
          allocations: { [RP]: { generation: 7 } },
        });
      } finally {
        target.close();
      }
    } finally {
      client.close();
      sqld.stop();
    }
  }, 60_000);
});
