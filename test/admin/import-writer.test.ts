// The import's write half on its own (no source needed): one transaction, so
// a write that fails half way (here: a duplicate consumer the database
// refuses after the providers went in) leaves the target exactly as it was,
// even with --replace; and a standard class this service does not know is
// refused before anything is opened.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeSnapshot } from '../../src/admin/import-writer.js';
import { STANDARD_TRAITS } from '../../src/placement/standard-names.generated.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations.generated.js';
import { openNodeClient } from '../../src/db/node-client.js';
import { syncStandards } from '../../src/placement/sync-standards.js';
import { openInProcessTarget } from '../../src/entry/admin-target.js';
import { describeWithPart } from '../helpers/parts.js';
import { SQLD_MISSING, startSqld } from '../helpers/sqld.js';
import type { ConsumerSnap, ProviderSnap, Snapshot } from '../../src/admin/placement-reader.js';
import { snapshotInventory } from '../helpers/snapshot-inventory.js';
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
    await expect(writeSnapshot(t.deps.store.client, snapshot([], ['VCPU', 'QUANTUM_FLUX', 'WARP_CORE']))).rejects.toThrow(
      'the source has standard resource classes this service does not know (upgrade it first): QUANTUM_FLUX, WARP_CORE',
    );
    expect(await providerNames()).toEqual([]);
  });
});

// A cloud with every kind of row the writer writes: custom and standard classes and traits, a
// nested tree, a provider shared through an aggregate, consumers typed and untyped, in two
// projects; and enough providers that one table takes more than one INSERT.
const ROOT = 'b1000000-0000-4000-8000-000000000001';
const CHILD = 'b1000000-0000-4000-8000-000000000002';
const SHARED = 'b1000000-0000-4000-8000-000000000003';
const AGG_ONE = 'a9000000-0000-4000-8000-000000000001';
const AGG_TWO = 'a9000000-0000-4000-8000-000000000002';
const BULK = 450;
// 24 standard traits on each bulk provider: over 10,000 rows, more statements than one round trip sends.
const BULK_TRAITS = STANDARD_TRAITS.filter((name) => name.startsWith('HW_CPU_X86_')).slice(0, 24);
const bulkUuid = (i: number) => `b2000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
const inventory = snapshotInventory;
const provider = (uuid: string, name: string, more: Partial<ProviderSnap>): ProviderSnap => ({
  uuid,
  name,
  generation: 1,
  parentUuid: null,
  rootUuid: uuid,
  inventories: {},
  traits: [],
  aggregates: [],
  allocations: {},
  ...more,
});
const CLOUD_CONSUMERS: ConsumerSnap[] = [
  {
    uuid: 'c3000000-0000-4000-8000-000000000001',
    projectId: 'p-one',
    userId: 'u-one',
    consumerType: 'INSTANCE',
    generation: 4,
    allocations: { [CHILD]: { VCPU: 2, CUSTOM_GOLD: 1 }, [SHARED]: { DISK_GB: 100 } },
  },
  {
    uuid: 'c3000000-0000-4000-8000-000000000002',
    projectId: 'p-one',
    userId: 'u-two',
    consumerType: null,
    generation: 6,
    allocations: { [ROOT]: { MEMORY_MB: 1024 } },
  },
  {
    uuid: 'c3000000-0000-4000-8000-000000000003',
    projectId: 'p-two',
    userId: 'u-one',
    consumerType: 'MIGRATION',
    generation: 2,
    allocations: { [CHILD]: { VCPU: 1 }, [ROOT]: { MEMORY_MB: 512 } },
  },
];
const cloud = (): Snapshot => ({
  version: '1.39',
  resourceClasses: ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_SILVER', 'CUSTOM_GOLD'],
  traits: ['HW_CPU_X86_AVX2', 'STORAGE_DISK_SSD', 'CUSTOM_SLOW', 'CUSTOM_FAST'],
  providers: [
    provider(ROOT, 'root', {
      generation: 5,
      inventories: { MEMORY_MB: inventory(4096, { reserved: 512, min_unit: 256, max_unit: 2048, step_size: 256, allocation_ratio: 1.5 }) },
      traits: ['HW_CPU_X86_AVX2', 'CUSTOM_FAST'],
      aggregates: [AGG_ONE],
    }),
    provider(CHILD, 'child', {
      generation: 9,
      parentUuid: ROOT,
      rootUuid: ROOT,
      inventories: { VCPU: inventory(16, { allocation_ratio: 4 }), CUSTOM_GOLD: inventory(2) },
      traits: ['CUSTOM_FAST'],
    }),
    provider(SHARED, 'shared', {
      generation: 2,
      inventories: { DISK_GB: inventory(2000, { reserved: 10, step_size: 10, max_unit: 1000 }) },
      traits: ['STORAGE_DISK_SSD', 'MISC_SHARES_VIA_AGGREGATE'],
      aggregates: [AGG_TWO, AGG_ONE],
    }),
    ...Array.from({ length: BULK }, (_, i) =>
      provider(bulkUuid(i), `bulk-${i}`, { inventories: { CUSTOM_SILVER: inventory(1) }, traits: ['CUSTOM_SLOW', ...BULK_TRAITS] }),
    ),
  ],
  consumers: CLOUD_CONSUMERS,
});

describe('import writer, the whole cloud', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await makeTestApp();
  });
  afterEach(() => t.close());

  const get = async (path: string): Promise<Record<string, unknown>> => {
    const res = await t.call('GET', path);
    expect(res.status, path).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  };

  it('answers every provider, inventory, trait, aggregate, consumer and usage as the snapshot says', async () => {
    const snap = cloud();
    // Two traits the snapshot lists that no provider has (one custom): written all the same.
    snap.traits.push('CUSTOM_UNUSED');
    const progress: [number, number][] = [];
    const counts = await writeSnapshot(t.deps.store.client, snap, { onProgress: (done, total) => progress.push([done, total]) });
    expect(counts).toEqual({
      resourceClasses: 2,
      traits: 3,
      providers: BULK + 3,
      inventories: BULK + 4,
      aggregates: 2,
      providerTraits: BULK * (1 + BULK_TRAITS.length) + 5,
      consumers: 3,
      allocations: 6,
    });
    // Progress climbs to its total in steps (more than one round trip) and says each step once.
    expect(progress.length).toBeGreaterThan(1);
    const total = progress[0]![1];
    expect(progress.at(-1)).toEqual([total, total]);
    for (const [i, [done, of]] of progress.entries()) {
      expect(of).toBe(total);
      if (i > 0) expect(done).toBeGreaterThan(progress[i - 1]![0]);
    }

    const classes = ((await get('/resource_classes')).resource_classes as { name: string }[]).map((c) => c.name);
    expect(classes.filter((c) => c.startsWith('CUSTOM_')).sort()).toEqual(['CUSTOM_GOLD', 'CUSTOM_SILVER']);
    expect(((await get('/traits?name=startswith:CUSTOM_')).traits as string[]).sort()).toEqual([
      'CUSTOM_FAST',
      'CUSTOM_SLOW',
      'CUSTOM_UNUSED',
    ]);

    const listed = (await get('/resource_providers')).resource_providers as { uuid: string }[];
    expect(listed.map((p) => p.uuid).sort()).toEqual(snap.providers.map((p) => p.uuid).sort());
    for (const p of [...snap.providers.slice(0, 3), snap.providers.at(-1)!]) {
      expect(await get(`/resource_providers/${p.uuid}`), p.name).toMatchObject({
        uuid: p.uuid,
        name: p.name,
        generation: p.generation,
        parent_provider_uuid: p.parentUuid,
        root_provider_uuid: p.rootUuid,
      });
      expect(await get(`/resource_providers/${p.uuid}/inventories`), p.name).toEqual({
        resource_provider_generation: p.generation,
        inventories: p.inventories,
      });
      const traits = await get(`/resource_providers/${p.uuid}/traits`);
      expect((traits.traits as string[]).sort(), p.name).toEqual([...p.traits].sort());
      const aggregates = await get(`/resource_providers/${p.uuid}/aggregates`);
      expect((aggregates.aggregates as string[]).sort(), p.name).toEqual([...p.aggregates].sort());
    }
    for (const c of CLOUD_CONSUMERS) {
      const alloc = await get(`/allocations/${c.uuid}`);
      expect(alloc, c.uuid).toMatchObject({
        consumer_generation: c.generation,
        project_id: c.projectId,
        user_id: c.userId,
        consumer_type: c.consumerType ?? 'unknown',
      });
      const providers = alloc.allocations as Record<string, { resources: Record<string, number>; generation: number }>;
      expect(Object.fromEntries(Object.entries(providers).map(([rp, a]) => [rp, a.resources])), c.uuid).toEqual(c.allocations);
    }
    expect((await get(`/resource_providers/${CHILD}/usages`)).usages).toEqual({ VCPU: 3, CUSTOM_GOLD: 1 });
    expect((await get(`/resource_providers/${ROOT}/usages`)).usages).toEqual({ MEMORY_MB: 1536 });
    // Per project, user and consumer type (1.38+: the untyped consumer counts as "unknown").
    expect((await get('/usages?project_id=p-one')).usages).toEqual({
      INSTANCE: { VCPU: 2, CUSTOM_GOLD: 1, DISK_GB: 100, consumer_count: 1 },
      unknown: { MEMORY_MB: 1024, consumer_count: 1 },
    });
    expect((await get('/usages?project_id=p-one&user_id=u-two')).usages).toEqual({ unknown: { MEMORY_MB: 1024, consumer_count: 1 } });
    expect((await get('/usages?project_id=p-two')).usages).toEqual({ MIGRATION: { VCPU: 1, MEMORY_MB: 512, consumer_count: 1 } });
    // The shared provider serves the child's tree through the aggregate they share with its root.
    const candidates = await get('/allocation_candidates?resources=VCPU:1,DISK_GB:10');
    const requests = candidates.allocation_requests as { allocations: Record<string, unknown> }[];
    expect(requests.map((r) => Object.keys(r.allocations).sort())).toEqual([[CHILD, SHARED].sort()]);
  });

  it('refuses a target holding data, naming what it holds; --replace wipes it, custom names included, and a running service sees the import', async () => {
    const body = (value: unknown) => ({ body: value });
    const old = ((await (await t.call('POST', '/resource_providers', body({ name: 'old' }))).json()) as { uuid: string }).uuid;
    expect((await t.call('PUT', '/resource_classes/CUSTOM_OLD')).status).toBe(201);
    expect((await t.call('PUT', '/traits/CUSTOM_OLD_TRAIT')).status).toBe(201);
    expect(
      (
        await t.call(
          'PUT',
          `/resource_providers/${old}/inventories`,
          body({ resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } }),
        )
      ).status,
    ).toBe(200);
    // The running service has answered from the tree it holds.
    const before = await get('/allocation_candidates?resources=VCPU:1');
    expect(Object.keys(before.provider_summaries as object)).toEqual([old]);

    await expect(writeSnapshot(t.deps.store.client, cloud())).rejects.toThrow(
      'the target already holds data (1 inventories, 1 resource_providers, 1 custom resource_classes, 1 custom traits); run with --replace to wipe it first',
    );
    await writeSnapshot(t.deps.store.client, cloud(), { replace: true });

    expect((await t.call('GET', `/resource_providers/${old}`)).status).toBe(404);
    expect((await t.call('GET', '/resource_classes/CUSTOM_OLD')).status).toBe(404);
    expect((await t.call('GET', '/traits/CUSTOM_OLD_TRAIT')).status).toBe(404);
    // Standard traits stay (this service's own names).
    expect((await t.call('GET', '/traits/HW_CPU_X86_SSE2')).status).toBe(204);
    const after = await get('/allocation_candidates?resources=VCPU:1');
    expect(Object.keys(after.provider_summaries as object).sort()).toEqual([CHILD, ROOT].sort());
  });

  it('refuses, writing nothing, a snapshot that names a provider, class or trait it does not list', async () => {
    const cases: [string, (s: Snapshot) => void][] = [
      [
        `provider ${CHILD} names parent ${ROOT}, which the source did not list; stop its writers and run again`,
        (s) => {
          s.providers[1] = { ...s.providers[1]!, rootUuid: CHILD };
          s.providers.splice(0, 1);
        },
      ],
      [
        `provider ${CHILD} names root ${ROOT}, which the source did not list; stop its writers and run again`,
        (s) => {
          s.providers[1] = { ...s.providers[1]!, parentUuid: null };
          s.providers.splice(0, 1);
        },
      ],
      [
        'the source uses the resource class CUSTOM_GOLD but does not list it; stop its writers and run again',
        (s) => {
          s.resourceClasses = s.resourceClasses.filter((c) => c !== 'CUSTOM_GOLD');
        },
      ],
      [
        'the source uses the resource class CUSTOM_GHOST but does not list it; stop its writers and run again',
        (s) => {
          s.consumers = [{ ...CLOUD_CONSUMERS[0]!, allocations: { [ROOT]: { CUSTOM_GHOST: 1 } } }];
        },
      ],
      [
        'the source uses the trait CUSTOM_FAST but does not list it; stop its writers and run again',
        (s) => {
          s.traits = s.traits.filter((c) => c !== 'CUSTOM_FAST');
        },
      ],
    ];
    for (const [message, edit] of cases) {
      const snap = cloud();
      edit(snap);
      await expect(writeSnapshot(t.deps.store.client, snap), message).rejects.toThrow(message);
      expect((await get('/resource_providers')).resource_providers, message).toEqual([]);
      expect((await get('/traits?name=startswith:CUSTOM_')).traits as string[], message).toEqual([]);
    }
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
