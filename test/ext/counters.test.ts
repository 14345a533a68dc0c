// Shared counters (docs/extensions-gpu.md): the /ext/ resource, and the capacity rule it
// adds to claims (PUT/POST allocations, the one-batch claim, the reshaper)
// and to allocation candidates, for a stock client.
import type { InStatement } from '@libsql/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Microversion } from '../../src/http/microversion.js';
import { findAllocationCandidates } from '../../src/placement/candidates/index.js';
import { parseCandidateQueryString } from '../../src/placement/candidates/parse.js';
import { countBatches } from '../write-model/count-batches.js';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { ensureClasses, H100_PROFILES, h100Counters, migGpu } from './mig-h100.js';

let app: TestApp;

const PROJECT = crypto.randomUUID();
const USER = crypto.randomUUID();

async function claim(consumer: string, rp: string, resources: Record<string, number>, generation: number | null = null) {
  return app.call('PUT', `/allocations/${consumer}`, {
    body: {
      allocations: { [rp]: { resources } },
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: generation,
      consumer_type: 'INSTANCE',
    },
  });
}

async function candidateProviders(query: string, version = 'latest'): Promise<string[]> {
  const res = await app.call('GET', `/allocation_candidates?${query}`, { version });
  expect(res.status).toBe(200);
  type Listed = { resource_provider: { uuid: string } }[];
  const body = (await res.json()) as { allocation_requests: { allocations: Record<string, unknown> | Listed }[] };
  // Before 1.12 allocations are a list.
  return body.allocation_requests.flatMap((r) =>
    Array.isArray(r.allocations) ? r.allocations.map((a) => a.resource_provider.uuid) : Object.keys(r.allocations),
  );
}

describe('/ext/resource_providers/{uuid}/counters', () => {
  beforeAll(async () => {
    app = await makeTestApp();
  });
  afterAll(() => app.close());

  it('reads back what was written, bumps the generation and shows the load', async () => {
    const gpu = await migGpu(app);
    const res = await app.call('GET', `/ext/resource_providers/${gpu}/counters`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      resource_provider_generation: number;
      counters: object;
      consumption: Record<string, object>;
      load: object;
    };
    expect(body.counters).toEqual({ memory_slices: 8, compute_slices: 7 });
    expect(body.consumption.CUSTOM_MIG_3G_40GB).toEqual({ memory_slices: 4, compute_slices: 3 });
    expect(body.load).toEqual({ memory_slices: 0, compute_slices: 0 });
    expect(body.resource_provider_generation).toBe(2);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 1 })).status).toBe(204);
    const after = (await (await app.call('GET', `/ext/resource_providers/${gpu}/counters`)).json()) as { load: object };
    expect(after.load).toEqual({ memory_slices: 4, compute_slices: 3 });
  });

  it('refuses a stale generation (409 concurrent_update), an unknown provider (404), a class without inventory and an undeclared counter (400)', async () => {
    const gpu = await migGpu(app);
    const stale = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, { body: h100Counters(0) });
    expect(stale.status).toBe(409);
    expect((await errorOf(stale)).code).toBe('placement.concurrent_update');
    const missing = await app.call('PUT', `/ext/resource_providers/${crypto.randomUUID()}/counters`, { body: h100Counters(0) });
    expect(missing.status).toBe(404);
    expect((await app.call('GET', `/ext/resource_providers/${crypto.randomUUID()}/counters`)).status).toBe(404);
    await ensureClasses(app, ['CUSTOM_NOT_HERE']);
    const noInventory = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      body: { resource_provider_generation: 2, counters: { a: 1 }, consumption: { CUSTOM_NOT_HERE: { a: 1 } } },
    });
    expect(noInventory.status).toBe(400);
    expect((await errorOf(noInventory)).detail).toContain('CUSTOM_NOT_HERE');
    const undeclared = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      body: { resource_provider_generation: 2, counters: { a: 1 }, consumption: { CUSTOM_MIG_1G_10GB: { b: 1 } } },
    });
    expect(undeclared.status).toBe(400);
    const badBody = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      body: { resource_provider_generation: 2, counters: { a: -1 }, consumption: {} },
    });
    expect(badBody.status).toBe(400);
    expect((await errorOf(badBody)).detail).toContain('JSON does not validate');
  });

  it('refuses counters the current allocations already exceed (409), and removes them with empty objects', async () => {
    const gpu = await migGpu(app);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 2 })).status).toBe(204);
    const gen = (
      (await (await app.call('GET', `/ext/resource_providers/${gpu}/counters`)).json()) as { resource_provider_generation: number }
    ).resource_provider_generation;
    const lower = h100Counters(gen);
    lower.counters.compute_slices = 5;
    const res = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, { body: lower });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).detail).toContain('compute_slices');
    const cleared = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      body: { resource_provider_generation: gen, counters: {}, consumption: {} },
    });
    expect(cleared.status).toBe(200);
    expect(((await cleared.json()) as { counters: object }).counters).toEqual({});
  });
});

// Both research engines: the trees kept in memory (default) and SQL alone (PLACEMENT_CANDIDATE_TREE_CACHE=0).
describe.each([
  ['trees in memory', '20000'],
  ['SQL alone', '0'],
])('the capacity rule with counters (%s)', (_engine, cache) => {
  beforeAll(async () => {
    app = await makeTestApp({ PLACEMENT_CANDIDATE_TREE_CACHE: cache });
  });
  afterAll(() => app.close());

  it('claims: a 3g.40gb and a 4g.40gb fill the GPU; nothing more fits, whatever each profile inventory says', async () => {
    const gpu = await migGpu(app);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_4G_40GB: 1 })).status).toBe(204);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 1 })).status).toBe(204);
    // 1g.10gb has 7 in inventory and none used, but no slice is left.
    const refused = await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_1G_10GB: 1 });
    expect(refused.status).toBe(409);
    expect((await errorOf(refused)).detail).toContain('would exceed the capacity');
    // POST /allocations (the ordinary path) refuses it too.
    const posted = await app.call('POST', '/allocations', {
      body: {
        [crypto.randomUUID()]: {
          allocations: { [gpu]: { resources: { CUSTOM_MIG_1G_10GB: 1 } } },
          project_id: PROJECT,
          user_id: USER,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
      },
    });
    expect(posted.status).toBe(409);
  });

  it('claims: several profiles in one request add up on the counters', async () => {
    const gpu = await migGpu(app);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 2, CUSTOM_MIG_1G_10GB: 1 })).status).toBe(409);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 1, CUSTOM_MIG_2G_20GB: 2 })).status).toBe(204);
  });

  it('candidates: a stock client asking resources=CUSTOM_MIG_3G_40GB:1 gets only GPUs where the profile still fits', async () => {
    const busy = await migGpu(app);
    const free = await migGpu(app);
    const half = await migGpu(app);
    expect((await claim(crypto.randomUUID(), busy, { CUSTOM_MIG_4G_40GB: 1, CUSTOM_MIG_2G_20GB: 1 })).status).toBe(204);
    expect((await claim(crypto.randomUUID(), half, { CUSTOM_MIG_2G_20GB: 1 })).status).toBe(204);
    for (const version of ['1.10', '1.29', 'latest']) {
      const found = await candidateProviders('resources=CUSTOM_MIG_3G_40GB:1', version);
      expect(found).toContain(free);
      expect(found).toContain(half);
      expect(found).not.toContain(busy);
      // Two 3g.40gb: only the free GPU; the half-used one has 5 compute slices left but only 6 memory.
      const two = await candidateProviders('resources=CUSTOM_MIG_3G_40GB:2', version);
      expect(two).toContain(free);
      expect(two).not.toContain(half);
    }
    // Granular groups on one GPU add up too (1.25+).
    const both = await candidateProviders('resources1=CUSTOM_MIG_3G_40GB:1&resources2=CUSTOM_MIG_4G_40GB:1&group_policy=none');
    expect(both).toContain(free);
    expect(both).not.toContain(half);
  });

  it('candidates read the counters in their research batch: as many round trips as before the GPUs had counters, one snapshot', async () => {
    // A cloud of its own: the GPUs start without counters.
    const own = await makeTestApp({ PLACEMENT_CANDIDATE_TREE_CACHE: cache });
    try {
      await ensureClasses(own, Object.keys(H100_PROFILES));
      const inventory = Object.fromEntries(Object.entries(H100_PROFILES).map(([rc, [, , most]]) => [rc, { total: most, max_unit: most }]));
      const gpus = [await provider(own, { inventory }), await provider(own, { inventory })];
      const batches: string[][] = [];
      const reader = {
        readBatch: (statements: InStatement[]) => {
          batches.push(statements.map((s) => (typeof s === 'string' ? s : s.sql)));
          return own.deps.store.readBatch(statements);
        },
      };
      const mv = Microversion.parse('1.39')!;
      // The app's engine: its tree cache and the read hooks compose.ts installs (shared counters among them).
      const options = own.deps.candidates.options({ randomize: false, maxCandidates: 0 });
      const ask = async (query: string) => {
        batches.length = 0;
        const body = await findAllocationCandidates(reader, parseCandidateQueryString(query, mv), mv, options);
        return { trips: batches.length, providers: body.allocation_requests.flatMap((r) => Object.keys(r.allocations)).sort() };
      };
      const query = 'resources=CUSTOM_MIG_3G_40GB:1';
      await ask(query); // the trees kept in memory are read cold once
      const without = await ask(query);
      expect(without.providers).toEqual([...gpus].sort());
      for (const gpu of gpus) {
        const generation = ((await (await own.call('GET', `/resource_providers/${gpu}`)).json()) as { generation: number }).generation;
        expect((await own.call('PUT', `/ext/resource_providers/${gpu}/counters`, { body: h100Counters(generation) })).status).toBe(200);
      }
      // 4g.40gb on one GPU: 3 compute slices and 4 memory slices left, room for one 3g.40gb, not two.
      const busy = gpus[0]!;
      const claimed = await own.call('PUT', `/allocations/${crypto.randomUUID()}`, {
        body: {
          allocations: { [busy]: { resources: { CUSTOM_MIG_4G_40GB: 1 } } },
          project_id: PROJECT,
          user_id: USER,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
      });
      expect(claimed.status).toBe(204);
      const withCounters = await ask(query);
      expect(withCounters.providers).toEqual([...gpus].sort());
      // Two 3g.40gb (6 compute slices): only the idle GPU, as its counters say.
      const two = await ask('resources=CUSTOM_MIG_3G_40GB:2');
      expect(two.providers).toEqual([gpus[1]]);
      expect(withCounters.trips).toBe(without.trips);
      expect(two.trips).toBe(without.trips);
      if (cache !== '0') expect(withCounters.trips).toBe(1);
      // The counters came in a batch that also read the candidates' usage: the same snapshot.
      const counterBatches = batches.filter((b) => b.some((sql) => sql.includes('ext_counter_consumption')));
      expect(counterBatches).toHaveLength(1);
      expect(counterBatches[0]!.some((sql) => sql.includes('allocations a'))).toBe(true);
    } finally {
      own.close();
    }
  });

  it('a GPU nested under a compute node: the flavor request with VCPU finds it only while its profile fits', async () => {
    const host = await provider(app, { inventory: { VCPU: { total: 64 }, MEMORY_MB: { total: 65536 } } });
    const gpu = await migGpu(app, host);
    const query = 'resources=VCPU:2,MEMORY_MB:1024&resources1=CUSTOM_MIG_7G_80GB:1&group_policy=none';
    expect(await candidateProviders(query)).toContain(gpu);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_1G_10GB: 1 })).status).toBe(204);
    expect(await candidateProviders(query)).not.toContain(gpu);
  });

  it('candidates: a profile the counters leave unmetered rides along with a metered one on the same GPU', async () => {
    const gpu = await migGpu(app);
    const generation = ((await (await app.call('GET', `/resource_providers/${gpu}`)).json()) as { generation: number }).generation;
    const { CUSTOM_MIG_1G_10GB: _unmetered, ...metered } = h100Counters(generation).consumption;
    const put = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      body: { ...h100Counters(generation), consumption: metered },
    });
    expect(put.status).toBe(200);
    const query = 'resources=CUSTOM_MIG_3G_40GB:1,CUSTOM_MIG_1G_10GB:1';
    expect(await candidateProviders(query)).toContain(gpu);
    // Granular groups on the GPU: the walk holds both profiles at once.
    expect(await candidateProviders('resources1=CUSTOM_MIG_3G_40GB:1&resources2=CUSTOM_MIG_1G_10GB:1&group_policy=none')).toContain(gpu);
    // 7 of 1g.10gb, unmetered, leave the counters whole: a 4g.40gb and a 3g.40gb still fill them, then nothing fits.
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_1G_10GB: 7 })).status).toBe(204);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_4G_40GB: 1, CUSTOM_MIG_3G_40GB: 1 })).status).toBe(204);
    expect(await candidateProviders('resources=CUSTOM_MIG_1G_20GB:1')).not.toContain(gpu);
  });

  it("candidates: one request on two GPUs of a host counts each GPU's counters against its own pieces only", async () => {
    const host = await provider(app, { inventory: { VCPU: { total: 64 } } });
    const first = await migGpu(app, host);
    const second = await migGpu(app, host);
    // A 4g.40gb takes 4 of 7 compute slices: one per GPU fits, two on one GPU would not (nor does the inventory allow it).
    for (const policy of ['isolate', 'none']) {
      const res = await app.call(
        'GET',
        `/allocation_candidates?resources=VCPU:1&resources1=CUSTOM_MIG_4G_40GB:1&resources2=CUSTOM_MIG_4G_40GB:1&group_policy=${policy}`,
      );
      expect(res.status).toBe(200);
      const body = (await res.json()) as { allocation_requests: { allocations: Record<string, { resources: Record<string, number> }> }[] };
      const onHost = body.allocation_requests.filter((r) => host in r.allocations);
      // Group 1 on either GPU, group 2 on the other.
      expect(onHost).toHaveLength(2);
      for (const r of onHost) {
        expect(Object.keys(r.allocations).sort()).toEqual([host, first, second].sort());
        expect(r.allocations[first]!.resources).toEqual({ CUSTOM_MIG_4G_40GB: 1 });
        expect(r.allocations[second]!.resources).toEqual({ CUSTOM_MIG_4G_40GB: 1 });
      }
    }
    // Once one GPU holds a 4g.40gb, the pair no longer fits on the host.
    expect((await claim(crypto.randomUUID(), first, { CUSTOM_MIG_4G_40GB: 1 })).status).toBe(204);
    expect(
      await candidateProviders('resources=VCPU:1&resources1=CUSTOM_MIG_4G_40GB:1&resources2=CUSTOM_MIG_4G_40GB:1&group_policy=none'),
    ).not.toContain(host);
  });

  it('the reshaper applies the counters to the allocations it moves', async () => {
    const gpu = await migGpu(app);
    const other = crypto.randomUUID();
    expect((await claim(other, gpu, { CUSTOM_MIG_4G_40GB: 1 })).status).toBe(204);
    const rp = (await (await app.call('GET', `/resource_providers/${gpu}`)).json()) as { generation: number };
    const consumer = crypto.randomUUID();
    const inventories = (await (await app.call('GET', `/resource_providers/${gpu}/inventories`)).json()) as { inventories: object };
    const res = await app.call('POST', '/reshaper', {
      body: {
        inventories: { [gpu]: { resource_provider_generation: rp.generation, inventories: inventories.inventories } },
        allocations: {
          [consumer]: {
            allocations: { [gpu]: { resources: { CUSTOM_MIG_7G_80GB: 1 } } },
            project_id: PROJECT,
            user_id: USER,
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          },
        },
      },
    });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).detail).toContain('shared counter');
  });

  it('deleting an inventory drops its consumption; deleting the provider drops its counters', async () => {
    const gpu = await migGpu(app);
    expect((await app.call('DELETE', `/resource_providers/${gpu}/inventories/CUSTOM_MIG_7G_80GB`)).status).toBe(204);
    const body = (await (await app.call('GET', `/ext/resource_providers/${gpu}/counters`)).json()) as { consumption: object };
    expect(Object.keys(body.consumption)).not.toContain('CUSTOM_MIG_7G_80GB');
    expect((await app.call('DELETE', `/resource_providers/${gpu}`)).status).toBe(204);
    const [rows] = await app.deps.store.readBatch([
      {
        sql: 'SELECT count(*) AS n FROM ext_counter_consumption c JOIN ext_provider_counters p USING (resource_provider_id) WHERE NOT EXISTS (SELECT 1 FROM resource_providers r WHERE r.id = c.resource_provider_id)',
        args: [],
      },
    ]);
    expect(Number(rows!.rows[0]!.n)).toBe(0);
  });
});

describe('the audit', () => {
  beforeAll(async () => {
    app = await makeTestApp();
  });
  afterAll(() => app.close());

  it('lists a provider whose allocations exceed its counters (written before the counters, then forced in the database)', async () => {
    const gpu = await migGpu(app);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 2 })).status).toBe(204);
    const audit = async () =>
      (await (await app.call('GET', '/diagnostics/audit?section=over_counter_providers')).json()) as {
        summary: { over_counter_providers: number };
        over_counter_providers: { items: { uuid: string; counters: { name: string; total: number; load: number }[] }[] };
      };
    expect((await audit()).summary.over_counter_providers).toBe(0);
    await app.deps.store.writeBatch([
      {
        sql: "UPDATE ext_provider_counters SET total = 4 WHERE name = 'compute_slices' AND resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = ?)",
        args: [gpu],
      },
    ]);
    const report = await audit();
    expect(report.summary.over_counter_providers).toBe(1);
    expect(report.over_counter_providers.items).toEqual([{ uuid: gpu, counters: [{ name: 'compute_slices', total: 4, load: 6 }] }]);
    // Usage over a counter may stay, but may not grow: releasing is allowed, adding is not.
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_1G_10GB: 1 })).status).toBe(409);
  });
});

describe('the dashboard', () => {
  beforeAll(async () => {
    app = await makeTestApp();
  });
  afterAll(() => app.close());

  it('shows each counter of a partitionable GPU with its load; other providers have none', async () => {
    const gpu = await migGpu(app);
    const plain = await provider(app, { inventory: { VCPU: { total: 4 } } });
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 1 })).status).toBe(204);
    const res = await app.call('GET', '/dashboard/api/summary?per_page=100');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { providers: { trees: { uuid: string; counters?: object; over_capacity: boolean }[] } };
    const shown = body.providers.trees.find((t) => t.uuid === gpu)!;
    expect(shown.counters).toEqual({ compute_slices: { total: 7, load: 3 }, memory_slices: { total: 8, load: 4 } });
    expect(shown.over_capacity).toBe(false);
    expect(body.providers.trees.find((t) => t.uuid === plain)!.counters).toBeUndefined();
  });
});

describe('counters at their edges', () => {
  beforeAll(async () => {
    app = await makeTestApp();
  });
  afterAll(() => app.close());

  const generationOf = async (rp: string) =>
    ((await (await app.call('GET', `/resource_providers/${rp}`)).json()) as { generation: number }).generation;
  const countersOf = async (rp: string) =>
    (await (await app.call('GET', `/ext/resource_providers/${rp}/counters`)).json()) as {
      counters: object;
      consumption: Record<string, object>;
      load: object;
    };
  const forceTotal = (rp: string, name: string, total: number) =>
    app.deps.store.writeBatch([
      {
        sql: 'UPDATE ext_provider_counters SET total = ? WHERE name = ? AND resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = ?)',
        args: [total, name, rp],
      },
    ]);

  it('words each refusal of a counters document exactly, lists classes in class order, and replaces what was there', async () => {
    await ensureClasses(app, ['CUSTOM_CTR_A', 'CUSTOM_CTR_B', 'CUSTOM_CTR_NONE']);
    const rp = await provider(app, { inventory: { CUSTOM_CTR_A: { total: 8 }, CUSTOM_CTR_B: { total: 8 } } });
    const put = (body: object) => app.call('PUT', `/ext/resource_providers/${rp}/counters`, { body });
    let gen = await generationOf(rp);
    const first = await put({
      resource_provider_generation: gen,
      counters: { zeta: 4, alpha: 4 },
      consumption: { CUSTOM_CTR_B: { zeta: 1 }, CUSTOM_CTR_A: { alpha: 1 } },
    });
    expect(first.status).toBe(200);
    const view = (await first.json()) as { resource_provider_generation: number; consumption: Record<string, object> };
    expect(view.resource_provider_generation).toBe(gen + 1);
    // A counter a class does not consume is not shown as 0; classes come in class order, not body order.
    expect(view.consumption).toEqual({ CUSTOM_CTR_A: { alpha: 1 }, CUSTOM_CTR_B: { zeta: 1 } });
    expect(Object.keys(view.consumption)).toEqual(['CUSTOM_CTR_A', 'CUSTOM_CTR_B']);
    gen += 1;
    expect((await claim(crypto.randomUUID(), rp, { CUSTOM_CTR_A: 3, CUSTOM_CTR_B: 3 })).status).toBe(204);
    gen += 1;

    const noInventory = await put({
      resource_provider_generation: gen,
      counters: { a: 1 },
      consumption: { CUSTOM_CTR_NONE: { a: 1 }, VCPU: { a: 1 } },
    });
    expect(noInventory.status).toBe(400);
    expect((await errorOf(noInventory)).detail).toContain(
      `No inventory of class(es) CUSTOM_CTR_NONE, VCPU on resource provider ${rp}: counters can only be consumed by inventory the provider has.`,
    );
    const undeclared = await put({
      resource_provider_generation: gen,
      counters: { a: 1 },
      consumption: { CUSTOM_CTR_A: { beta: 1, gamma: 1 } },
    });
    expect(undeclared.status).toBe(400);
    expect((await errorOf(undeclared)).detail).toContain('Consumption of CUSTOM_CTR_A names undeclared counter(s): beta, gamma.');
    const exceeded = await put({
      resource_provider_generation: gen,
      counters: { zeta: 5, alpha: 5 },
      consumption: { CUSTOM_CTR_A: { zeta: 1, alpha: 1 }, CUSTOM_CTR_B: { zeta: 1, alpha: 1 } },
    });
    expect(exceeded.status).toBe(409);
    expect((await errorOf(exceeded)).detail).toContain(
      `Counter(s) alpha (6 in use), zeta (6 in use) of resource provider ${rp} would be exceeded by its current allocations.`,
    );

    const replaced = await put({ resource_provider_generation: gen, counters: { beta: 5 }, consumption: { CUSTOM_CTR_B: { beta: 1 } } });
    expect(replaced.status).toBe(200);
    expect(await countersOf(rp)).toEqual({
      resource_provider_generation: gen + 1,
      counters: { beta: 5 },
      consumption: { CUSTOM_CTR_B: { beta: 1 } },
      load: { beta: 3 },
    });

    // A claim over the counter names the class on that provider that consumes it, not one on another provider.
    const other = await provider(app, { inventory: { CUSTOM_CTR_B: { total: 8 } } });
    const posted = await app.call('POST', '/allocations', {
      body: {
        [crypto.randomUUID()]: {
          allocations: { [other]: { resources: { CUSTOM_CTR_B: 1 } }, [rp]: { resources: { CUSTOM_CTR_A: 1, CUSTOM_CTR_B: 3 } } },
          project_id: PROJECT,
          user_id: USER,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
      },
    });
    expect(posted.status).toBe(409);
    expect((await errorOf(posted)).detail).toContain(
      `Unable to create allocation for 'CUSTOM_CTR_B' on resource provider '${rp}'. The requested amount would exceed the capacity. (shared counter 'beta': 6 of 5)`,
    );

    // Back to a counter it had before: nothing of the old consumption is left behind.
    const back = await put({ resource_provider_generation: gen + 1, counters: { zeta: 6 }, consumption: { CUSTOM_CTR_B: { zeta: 2 } } });
    expect(back.status).toBe(200);
    expect(await countersOf(rp)).toEqual({
      resource_provider_generation: gen + 2,
      counters: { zeta: 6 },
      consumption: { CUSTOM_CTR_B: { zeta: 2 } },
      load: { zeta: 6 },
    });
    // A class the counters do not meter is offered on a provider whose counter is full; the metered one is not.
    expect(await candidateProviders('resources=CUSTOM_CTR_A:1')).toContain(rp);
    expect(await candidateProviders('resources=CUSTOM_CTR_B:1')).not.toContain(rp);
  });

  it('a consumer that exists may grow to fill a counter exactly, not past it, and may keep usage on a counter lowered below it', async () => {
    const gpu = await migGpu(app);
    const consumer = crypto.randomUUID();
    expect((await claim(consumer, gpu, { CUSTOM_MIG_2G_20GB: 3 })).status).toBe(204);
    // 6 memory and 6 compute slices; one 1g.10gb fills compute (7 of 7).
    expect((await claim(consumer, gpu, { CUSTOM_MIG_2G_20GB: 3, CUSTOM_MIG_1G_10GB: 1 }, 1)).status).toBe(204);
    const over = await claim(consumer, gpu, { CUSTOM_MIG_2G_20GB: 3, CUSTOM_MIG_1G_10GB: 2 }, 2);
    expect(over.status).toBe(409);
    expect((await errorOf(over)).detail).toContain(
      // The first class in the body that consumes the counter is named.
      `Unable to create allocation for 'CUSTOM_MIG_2G_20GB' on resource provider '${gpu}'. The requested amount would exceed the capacity. (shared counter 'compute_slices': 8 of 7)`,
    );
    await forceTotal(gpu, 'compute_slices', 5);
    // The same usage again (7 on a counter now 5): allowed, as upstream lets usage stay over a lowered inventory.
    expect((await claim(consumer, gpu, { CUSTOM_MIG_1G_10GB: 1, CUSTOM_MIG_2G_20GB: 3 }, 2)).status).toBe(204);
    expect((await claim(consumer, gpu, { CUSTOM_MIG_2G_20GB: 3, CUSTOM_MIG_1G_10GB: 2 }, 3)).status).toBe(409);
  });

  it("a new consumer's claim on a GPU with counters is one write batch", async () => {
    const gpu = await migGpu(app);
    const batches = countBatches(app.deps.store);
    expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 1 })).status).toBe(204);
    expect(batches.writes).toBe(1);
  });

  it('consumption left without its counters (edited in the database) is ignored by the view and by claims', async () => {
    const gpu = await migGpu(app);
    // 7g.80gb consumes compute slices alone: once that counter is gone, nothing of its consumption is left to show.
    const doc = h100Counters(await generationOf(gpu));
    const put = await app.call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      body: { ...doc, consumption: { ...doc.consumption, CUSTOM_MIG_7G_80GB: { compute_slices: 7 } } },
    });
    expect(put.status).toBe(200);
    await app.deps.store.writeBatch([
      {
        sql: "DELETE FROM ext_provider_counters WHERE name = 'compute_slices' AND resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = ?)",
        args: [gpu],
      },
    ]);
    const partly = await countersOf(gpu);
    expect(partly.counters).toEqual({ memory_slices: 8 });
    expect(partly.consumption).toEqual(
      Object.fromEntries(
        Object.entries(H100_PROFILES)
          .filter(([rc]) => rc !== 'CUSTOM_MIG_7G_80GB')
          .map(([rc, [memory]]) => [rc, { memory_slices: memory }]),
      ),
    );
    await app.deps.store.writeBatch([
      {
        sql: 'DELETE FROM ext_provider_counters WHERE resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = ?)',
        args: [gpu],
      },
    ]);
    expect(await countersOf(gpu)).toEqual({ counters: {}, consumption: {}, load: {}, resource_provider_generation: expect.any(Number) });
    const consumer = crypto.randomUUID();
    expect((await claim(consumer, gpu, { CUSTOM_MIG_7G_80GB: 1 })).status).toBe(204);
    expect((await claim(consumer, gpu, { CUSTOM_MIG_7G_80GB: 1, CUSTOM_MIG_4G_40GB: 1 }, 1)).status).toBe(204);
  });
});

describe('the audit, page by page', () => {
  beforeAll(async () => {
    app = await makeTestApp();
  });
  afterAll(() => app.close());

  it('pages the providers over a counter by uuid', async () => {
    const over: string[] = [];
    for (let i = 0; i < 2; i += 1) {
      const gpu = await migGpu(app);
      expect((await claim(crypto.randomUUID(), gpu, { CUSTOM_MIG_3G_40GB: 2 })).status).toBe(204);
      await app.deps.store.writeBatch([
        {
          sql: "UPDATE ext_provider_counters SET total = 4 WHERE name = 'compute_slices' AND resource_provider_id = (SELECT id FROM resource_providers WHERE uuid = ?)",
          args: [gpu],
        },
      ]);
      over.push(gpu);
    }
    over.sort();
    type Page = {
      summary: { over_counter_providers: number };
      over_counter_providers: { items: { uuid: string }[]; next_marker: string | null };
    };
    const page = async (query: string) =>
      (await (await app.call('GET', `/diagnostics/audit?section=over_counter_providers&${query}`)).json()) as Page;
    const all = await page('limit=2');
    expect(all.summary.over_counter_providers).toBe(2);
    expect(all.over_counter_providers.items.map((p) => p.uuid)).toEqual(over);
    expect(all.over_counter_providers.next_marker).toBeNull();
    const one = await page('limit=1');
    expect(one.summary.over_counter_providers).toBe(2);
    expect(one.over_counter_providers.items.map((p) => p.uuid)).toEqual([over[0]]);
    expect(one.over_counter_providers.next_marker).toBe(over[0]);
    const two = await page(`limit=1&marker=${over[0]}`);
    expect(two.over_counter_providers.items.map((p) => p.uuid)).toEqual([over[1]]);
    expect(two.over_counter_providers.next_marker).toBeNull();
    const after = await page(`limit=1&marker=${over[1]}`);
    expect(after.over_counter_providers.items).toEqual([]);
  });
});
