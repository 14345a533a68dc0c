import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { PROJECT as project, USER as user } from '../helpers/claims.js';

interface Summary {
  resources: Record<string, { capacity: number; used: number }>;
  traits?: string[];
  parent_provider_uuid?: string | null;
  root_provider_uuid?: string;
}
interface DictRequest {
  allocations: Record<string, { resources: Record<string, number> }>;
  mappings?: Record<string, string[]>;
}
interface Candidates {
  allocation_requests: DictRequest[];
  provider_summaries: Record<string, Summary>;
}
interface ErrorBody {
  errors: { detail: string; code?: string }[];
}

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

async function candidates(app: TestApp, query: string, version = 'latest'): Promise<Candidates> {
  const res = await app.call('GET', `/allocation_candidates?${query}`, { version });
  expect(res.status).toBe(200);
  return (await res.json()) as Candidates;
}

async function badRequest(app: TestApp, query: string, version = 'latest'): Promise<string> {
  const res = await app.call('GET', `/allocation_candidates?${query}`, { version });
  expect(res.status).toBe(400);
  return ((await res.json()) as ErrorBody).errors[0]!.detail;
}

/** "provider:CLASS=amount" strings of each request, for order-free comparison. */
const flatten = (body: Candidates) =>
  body.allocation_requests
    .map((r) =>
      Object.entries(r.allocations)
        .flatMap(([uuid, a]) => Object.entries(a.resources).map(([rc, n]) => `${uuid}:${rc}=${n}`))
        .sort()
        .join(' '),
    )
    .sort();

describe('nested trees and sharing providers', () => {
  let cn: string, numa0: string, numa1: string, pf: string, disk: string;
  const agg = crypto.randomUUID();
  let app: TestApp;
  beforeAll(async () => {
    app = await makeTestApp();
    cn = await provider(app, { traits: ['HW_CPU_X86_AVX2'], aggregates: [agg] });
    numa0 = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048 } } });
    numa1 = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048 } } });
    pf = await provider(app, { parent: numa0, inventory: { SRIOV_NET_VF: { total: 8 } }, traits: ['CUSTOM_PHYSNET1'] });
    disk = await provider(app, { inventory: { DISK_GB: { total: 500 } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [agg] });
  });
  afterAll(() => app.close());

  it('combines providers of one tree with a sharing provider, and summarises whole trees from 1.29', async () => {
    const body = await candidates(app, 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10');
    expect(flatten(body)).toEqual(
      [
        [`${numa0}:MEMORY_MB=512`, `${numa0}:VCPU=1`, `${disk}:DISK_GB=10`].sort().join(' '),
        [`${numa0}:MEMORY_MB=512`, `${numa1}:VCPU=1`, `${disk}:DISK_GB=10`].sort().join(' '),
        [`${numa1}:MEMORY_MB=512`, `${numa0}:VCPU=1`, `${disk}:DISK_GB=10`].sort().join(' '),
        [`${numa1}:MEMORY_MB=512`, `${numa1}:VCPU=1`, `${disk}:DISK_GB=10`].sort().join(' '),
      ].sort(),
    );
    expect(Object.keys(body.provider_summaries).sort()).toEqual([cn, numa0, numa1, pf, disk].sort());
    expect(body.provider_summaries[pf]).toMatchObject({ parent_provider_uuid: numa0, root_provider_uuid: cn, traits: ['CUSTOM_PHYSNET1'] });
    expect(body.provider_summaries[numa0]!.resources.VCPU).toEqual({ capacity: 4, used: 0 });
  });

  it('before 1.29 drops candidates that use two providers of one tree, and summarises only providers used', async () => {
    const body = await candidates(app, 'resources=VCPU:1,MEMORY_MB:512,DISK_GB:10', '1.28');
    expect(flatten(body)).toEqual(
      [
        [`${numa0}:MEMORY_MB=512`, `${numa0}:VCPU=1`, `${disk}:DISK_GB=10`].sort().join(' '),
        [`${numa1}:MEMORY_MB=512`, `${numa1}:VCPU=1`, `${disk}:DISK_GB=10`].sort().join(' '),
      ].sort(),
    );
    expect(Object.keys(body.provider_summaries).sort()).toEqual([numa0, numa1, disk].sort());
    expect(body.provider_summaries[numa0]).not.toHaveProperty('root_provider_uuid');
  });

  it('applies unsuffixed required traits to the providers used, and granular groups to one provider each', async () => {
    // AVX2 sits on the root, which provides nothing: the unsuffixed group cannot use it.
    expect((await candidates(app, 'resources=VCPU:1&required=HW_CPU_X86_AVX2')).allocation_requests).toEqual([]);
    const body = await candidates(
      app,
      'resources=VCPU:1&resources_NET=SRIOV_NET_VF:2&required_NET=CUSTOM_PHYSNET1&same_subtree=_NET&group_policy=none',
    );
    expect(body.allocation_requests).toHaveLength(2);
    expect(body.allocation_requests.every((r) => r.mappings!._NET![0] === pf)).toBe(true);
  });

  it('same_subtree keeps only groups served under one ancestor', async () => {
    const body = await candidates(app, 'resources_CPU=VCPU:1&resources_NET=SRIOV_NET_VF:1&same_subtree=_CPU,_NET&group_policy=none');
    expect(flatten(body)).toEqual([[`${numa0}:VCPU=1`, `${pf}:SRIOV_NET_VF=1`].sort().join(' ')]);
    expect(body.allocation_requests[0]!.mappings).toEqual({ _CPU: [numa0], _NET: [pf] });
  });

  it('group_policy=isolate puts each suffixed group on its own provider', async () => {
    const none = await candidates(app, 'resources1=VCPU:1&resources2=VCPU:1&group_policy=none');
    const isolate = await candidates(app, 'resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate');
    expect(none.allocation_requests).toHaveLength(4);
    expect(isolate.allocation_requests).toHaveLength(2);
  });

  it('limit combines with traits, aggregates and root_required in one group', async () => {
    const body = await candidates(
      app,
      `resources=VCPU:1,SRIOV_NET_VF:1&required=CUSTOM_PHYSNET1&member_of=${agg}&root_required=HW_CPU_X86_AVX2&limit=1`,
    );
    expect(flatten(body)).toEqual([[`${numa0}:VCPU=1`, `${pf}:SRIOV_NET_VF=1`].sort().join(' ')]);
  });

  it('member_of on the root spans the tree; forbidden aggregates exclude it', async () => {
    expect((await candidates(app, `resources=VCPU:1&member_of=${agg}`)).allocation_requests).toHaveLength(2);
    expect((await candidates(app, `resources=VCPU:1&member_of=!${agg}`)).allocation_requests).toEqual([]);
  });

  it('root_required filters by the traits of the tree root', async () => {
    expect((await candidates(app, 'resources=VCPU:1&root_required=HW_CPU_X86_AVX2')).allocation_requests).toHaveLength(2);
    expect((await candidates(app, 'resources=VCPU:1&root_required=!HW_CPU_X86_AVX2')).allocation_requests).toEqual([]);
  });

  it('answers in the list shape before 1.12', async () => {
    const res = await app.call('GET', '/allocation_candidates?resources=DISK_GB:10', { version: '1.10' });
    expect(await res.json()).toEqual({
      allocation_requests: [{ allocations: [{ resource_provider: { uuid: disk }, resources: { DISK_GB: 10 } }] }],
      provider_summaries: { [disk]: { resources: { DISK_GB: { capacity: 500, used: 0 } } } },
    });
  });
});

describe('capacity', () => {
  it('honours usage, reserved, allocation ratio and min/max/step, as the allocations path does', async () => {
    const rp = await provider(t, { inventory: { VCPU: { total: 4, reserved: 1, allocation_ratio: 2, max_unit: 4, step_size: 2 } } });
    // capacity (4 - 1) * 2 = 6
    expect((await candidates(t, 'resources=VCPU:3')).allocation_requests).toEqual([]); // step 2
    expect((await candidates(t, 'resources=VCPU:6')).allocation_requests).toEqual([]); // max_unit 4
    const before = await candidates(t, 'resources=VCPU:4');
    expect(before.provider_summaries[rp]!.resources.VCPU).toEqual({ capacity: 6, used: 0 });
    const claim = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [rp]: { resources: { VCPU: 4 } } },
        project_id: project,
        user_id: user,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(claim.status).toBe(204);
    expect((await candidates(t, 'resources=VCPU:4')).allocation_requests).toEqual([]);
    const after = await candidates(t, 'resources=VCPU:2');
    expect(after.provider_summaries[rp]!.resources.VCPU).toEqual({ capacity: 6, used: 4 });
  });
});

describe('limit, ordering and round trips', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await makeTestApp();
    await Promise.all(Array.from({ length: 30 }, () => provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } } })));
  });
  afterAll(() => app.close());

  it('limit keeps the first candidates and only their summaries; order is stable', async () => {
    const all = await candidates(app, 'resources=VCPU:1,MEMORY_MB:128');
    expect(all.allocation_requests).toHaveLength(30);
    const limited = await candidates(app, 'resources=VCPU:1,MEMORY_MB:128&limit=3');
    expect(limited.allocation_requests).toEqual(all.allocation_requests.slice(0, 3));
    expect(Object.keys(limited.provider_summaries).sort()).toEqual(
      limited.allocation_requests.map((r) => Object.keys(r.allocations)[0]!).sort(),
    );
  });

  it('uses a fixed number of database round trips, whatever the provider count', async () => {
    // Node mode reads through the store's own connection (db/node-batches.ts), not the client: count both.
    const { store } = app.deps;
    const reads = vi.spyOn(store, 'readBatch');
    const batch = vi.spyOn(store.client, 'batch');
    const execute = vi.spyOn(store.client, 'execute');
    await candidates(app, 'resources=VCPU:1,MEMORY_MB:128');
    const trips = reads.mock.calls.length + batch.mock.calls.length + execute.mock.calls.length;
    expect(trips).toBeGreaterThanOrEqual(1);
    expect(trips).toBeLessThanOrEqual(2);
    reads.mockRestore();
    batch.mockRestore();
    execute.mockRestore();
  });

  it('keeps searching later trees when the first ones cannot fill the limit', async () => {
    const late = await makeTestApp();
    try {
      // More early trees than the first chunk loads, none of which qualifies.
      await Promise.all(
        Array.from({ length: 70 }, () => provider(late, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } } })),
      );
      const good: string[] = [];
      for (let i = 0; i < 3; i += 1) {
        good.push(await provider(late, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } }, traits: ['CUSTOM_LATE'] }));
      }
      const body = await candidates(late, 'resources1=VCPU:1&required1=CUSTOM_LATE&resources2=MEMORY_MB:64&group_policy=none&limit=2');
      expect(body.allocation_requests.map((r) => Object.keys(r.allocations))).toEqual([[good[0]], [good[1]]]);
    } finally {
      late.close();
    }
  });

  it('searches in full when the lowest trees read first cannot fill the limit', async () => {
    const late = await makeTestApp();
    try {
      await Promise.all(Array.from({ length: 70 }, () => provider(late, { inventory: { VCPU: { total: 1 } } })));
      const good: string[] = [];
      for (let i = 0; i < 3; i += 1) good.push(await provider(late, { inventory: { VCPU: { total: 8 } } }));
      const body = await candidates(late, 'resources=VCPU:2&limit=2');
      expect(body.allocation_requests.map((r) => Object.keys(r.allocations))).toEqual([[good[0]], [good[1]]]);
    } finally {
      late.close();
    }
  });

  it('randomizes when configured', async () => {
    const random = await makeTestApp({ PLACEMENT_RANDOMIZE_ALLOCATION_CANDIDATES: 'true' });
    try {
      await Promise.all(Array.from({ length: 20 }, () => provider(random, { inventory: { VCPU: { total: 8 } } })));
      const firsts = new Set<string>();
      for (let i = 0; i < 10; i += 1) {
        const body = await candidates(random, 'resources=VCPU:1&limit=1');
        expect(body.allocation_requests).toHaveLength(1);
        firsts.add(Object.keys(body.allocation_requests[0]!.allocations)[0]!);
      }
      expect(firsts.size).toBeGreaterThan(1);
    } finally {
      random.close();
    }
  });
});

describe('query validation', () => {
  it('words bad queries as upstream', async () => {
    expect(await badRequest(t, '', '1.24')).toContain("'resources' is a required property");
    expect(await badRequest(t, 'resources=VCPU:1&limit=0')).toContain("Failed validating 'pattern'");
    expect(await badRequest(t, 'resources=VCPU:1&limit=2', '1.15')).toContain("'limit' was unexpected");
    expect(await badRequest(t, 'resources=FOO:1')).toContain('No such resource class FOO');
    expect(await badRequest(t, 'resources=VCPU:1&required=CUSTOM_NOPE')).toContain('No such trait(s): CUSTOM_NOPE');
    expect(await badRequest(t, 'resources1=VCPU:1&resources2=VCPU:1')).toContain('"group_policy" parameter is required');
    expect(await badRequest(t, 'required=HW_CPU_X86_AVX&resources1=VCPU:1', '1.35')).toContain('orphaned traits keys: required');
    expect(await badRequest(t, 'resources=VCPU:1&in_tree=nope')).toContain("Expected 'in_tree' parameter to be a format of uuid");
  });

  it('is 404 before 1.10', async () => {
    const res = await t.call('GET', '/allocation_candidates?resources=VCPU:1', { version: '1.9' });
    expect(res.status).toBe(404);
  });
});
