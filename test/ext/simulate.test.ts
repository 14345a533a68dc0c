// POST /ext/simulate: nothing is written (every row and generation stays, for
// every kind of change and for defrag plans), bad input gets the answer the
// real request gets, and the answer's parts on a small cloud.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { claim } from './helpers.js';
import { everyRow } from './simulate-helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

const AGG = '0a0a0a0a-0000-4000-8000-00000000000a';

async function simulate(body: unknown): Promise<Response> {
  return t.call('POST', '/ext/simulate', { body });
}

/** The error envelope without its request id. */
async function problem(res: Response): Promise<{ status: number; errors: unknown[] }> {
  const body = (await res.json()) as { errors: { request_id?: string }[] };
  return { status: res.status, errors: body.errors.map(({ request_id: _, ...e }) => e) };
}

async function smallCloud() {
  const a = await provider(t, {
    inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 8192 } },
    aggregates: [AGG],
    traits: ['HW_CPU_X86_AVX2'],
  });
  const b = await provider(t, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } }, aggregates: [AGG] });
  const c = await provider(t, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } } });
  const large = { VCPU: 2, MEMORY_MB: 2048 };
  const consumers: string[] = [];
  for (const host of [a, a, b, c]) {
    const uuid = crypto.randomUUID();
    expect((await claim(t, { [host]: { resources: large } }, uuid)).status).toBe(204);
    consumers.push(uuid);
  }
  return { a, b, c, consumers };
}

describe('POST /ext/simulate', () => {
  it('writes nothing: every row and generation stays, whatever the change', async () => {
    const { a, b, consumers } = await smallCloud();
    const queries = [
      { name: 'large', query: 'resources=VCPU:2,MEMORY_MB:2048' },
      { name: 'pairs', query: 'resources=VCPU:1&count=2' },
    ];
    const changes = [
      [{ op: 'add_copies', of: a, count: 10 }],
      [{ op: 'remove_trees', providers: [b] }],
      [{ op: 'set_inventory', providers: [a], resource_class: 'VCPU', total: 2 }],
      [{ op: 'set_inventory', aggregate: AGG, resource_class: 'VCPU', allocation_ratio: 4 }],
      [{ op: 'set_inventory', trait: 'HW_CPU_X86_AVX2', resource_class: 'MEMORY_MB', reserved: 1024 }],
      [{ op: 'taint', aggregate: AGG, key: 'example.com/maintenance' }],
      [{ op: 'resize', from: { VCPU: 2, MEMORY_MB: 2048 }, to: { VCPU: 4, MEMORY_MB: 2048 } }],
      [{ op: 'remove_consumers', consumers: [consumers[0]] }],
    ];
    const rows = await everyRow(t.deps.store.client);
    for (const change of changes) {
      const res = await simulate({ changes: change, queries });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await everyRow(t.deps.store.client)).toEqual(rows);
    }
    for (const query of ['resources=VCPU:6', 'resources=VCPU:4&count=2&max_moves=4', 'resources=VCPU:3&move_leased=true']) {
      expect((await t.call('GET', `/ext/defrag?${query}`)).status).toBe(200);
      expect(await everyRow(t.deps.store.client)).toEqual(rows);
    }
  });

  it('answers a flavor change: headroom before and after, who no longer fits and where it could go, the dashboard figures', async () => {
    const { a, b, c, consumers } = await smallCloud();
    const res = await simulate({
      changes: [{ op: 'resize', from: { VCPU: 2, MEMORY_MB: 2048 }, to: { VCPU: 4, MEMORY_MB: 2048 } }],
      queries: [{ name: 'large', query: 'resources=VCPU:4,MEMORY_MB:2048' }],
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      changes: unknown[];
      queries: { before: { total: number }; after: { total: number } }[];
      displaced: { consumer_uuid: string; from: unknown; could_go: unknown }[];
      over_capacity: { after: { resource_provider_uuid: string; resource_class: string; capacity: number; used: number }[] };
      dashboard: { before: { resource_classes: { VCPU: { used: number } } }; after: { resource_classes: { VCPU: { used: number } } } };
    };
    expect(body.changes).toEqual([{ op: 'resize', matched: 4 }]);
    // Before: a has 4 VCPU free (one 4-VCPU fits), b and c none. After the resize a holds 8 of 8, b 4 of 4, c 4 of 4: nothing fits.
    expect(body.queries[0]!.before.total).toBe(1);
    expect(body.queries[0]!.after.total).toBe(0);
    expect(body.over_capacity.after).toEqual([]);
    expect(body.displaced).toEqual([]);
    expect(body.dashboard.before.resource_classes.VCPU.used).toBe(8);
    expect(body.dashboard.after.resource_classes.VCPU.used).toBe(16);
    // Lowering a's VCPU to 4: its two consumers (now 4 VCPU each) are 8 on 4; one must go, and nowhere has 4 VCPU free.
    const lowered = (await (
      await simulate({
        changes: [
          { op: 'resize', from: { VCPU: 2, MEMORY_MB: 2048 }, to: { VCPU: 4, MEMORY_MB: 2048 } },
          { op: 'set_inventory', providers: [a], resource_class: 'VCPU', total: 4 },
          { op: 'add_copies', of: c, count: 1 },
        ],
        queries: [],
      })
    ).json()) as typeof body & { changes: { copies?: Record<string, string>[] }[] };
    expect(lowered.over_capacity.after).toEqual([{ resource_provider_uuid: a, resource_class: 'VCPU', capacity: 4, used: 8 }]);
    expect(lowered.displaced).toHaveLength(1);
    expect(consumers.slice(0, 2)).toContain(lowered.displaced[0]!.consumer_uuid);
    // The copy of c (empty) is where it could go.
    const copyOfC = lowered.changes[2]!.copies![0]![c]!;
    expect(lowered.displaced[0]!.could_go).toEqual({ [copyOfC]: { resources: { VCPU: 4, MEMORY_MB: 2048 } } });
    expect(b).not.toBe(copyOfC);
  });

  it('refuses bad input as the real request would', async () => {
    const { a } = await smallCloud();
    const missing = crypto.randomUUID();
    const q = [{ name: 'q', query: 'resources=VCPU:1' }];
    // A provider that does not exist: as GET /resource_providers/{uuid}.
    expect(await problem(await simulate({ changes: [{ op: 'add_copies', of: missing, count: 1 }], queries: q }))).toEqual(
      await problem(await t.call('GET', `/resource_providers/${missing}`)),
    );
    // A trait that does not exist: as GET /resource_providers?required=.
    expect(await problem(await simulate({ changes: [{ op: 'taint', trait: 'CUSTOM_NOPE', key: 'k' }], queries: q }))).toEqual(
      await problem(await t.call('GET', '/resource_providers?required=CUSTOM_NOPE')),
    );
    // Reserved over total: as PUT /resource_providers/{uuid}/inventories/{class}.
    const { generation } = (await (await t.call('GET', `/resource_providers/${a}`)).json()) as { generation: number };
    const real = await t.call('PUT', `/resource_providers/${a}/inventories/VCPU`, {
      body: { resource_provider_generation: generation, total: 8, reserved: 9 },
    });
    const simulated = await simulate({
      changes: [{ op: 'set_inventory', providers: [a], resource_class: 'VCPU', reserved: 9 }],
      queries: q,
    });
    expect(await problem(simulated)).toEqual(await problem(real));
    // A consumer with no allocations: as DELETE /allocations/{uuid}.
    expect(await problem(await simulate({ changes: [{ op: 'remove_consumers', consumers: [missing] }], queries: q }))).toEqual(
      await problem(await t.call('DELETE', `/allocations/${missing}`)),
    );
    // A query placement refuses: as GET /allocation_candidates.
    for (const query of ['resources=NOPE:1', 'resources=VCPU:x', 'required=FOO&resources=VCPU:1', 'bogus=1', 'resources=VCPU:1&count=0']) {
      const path = query.includes('count') ? `/ext/headroom?${query}` : `/allocation_candidates?${query}`;
      expect(await problem(await simulate({ changes: [], queries: [{ name: 'q', query }] })), query).toEqual(
        await problem(await t.call('GET', path)),
      );
    }
    // Changes naming nothing: 400.
    for (const change of [
      { op: 'taint', aggregate: crypto.randomUUID(), key: 'k' },
      { op: 'set_inventory', aggregate: AGG, resource_class: 'VGPU', total: 4 },
      { op: 'resize', from: { VCPU: 3 }, to: { VCPU: 4 } },
      { op: 'taint', providers: [a], aggregate: AGG, key: 'k' },
      { op: 'explode' },
    ]) {
      expect((await simulate({ changes: [change], queries: q })).status, JSON.stringify(change)).toBe(400);
    }
    // Admin only.
    const denied = await t.call('POST', '/ext/simulate', {
      body: { changes: [], queries: [] },
      headers: { 'x-auth-token': 'user', 'x-roles': 'member' },
    });
    expect([401, 403]).toContain(denied.status);
  });
});
