// Device taints: the provider resource (generation-checked like traits), the
// candidates a taint takes away (every client, every microversion) and gives
// back to a request that tolerates it, and the drain list.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { candidates, claim, countOf, headroom } from './helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

const UNHEALTHY = { key: 'gpu.example.com/unhealthy', value: 'ecc', effect: 'NoSchedule', reason: '3 uncorrected ECC errors' };

async function generationOf(uuid: string): Promise<number> {
  return ((await (await t.call('GET', `/resource_providers/${uuid}`)).json()) as { generation: number }).generation;
}

async function taint(uuid: string, taints: unknown[]): Promise<Response> {
  return t.call('PUT', `/ext/resource_providers/${uuid}/taints`, {
    body: { resource_provider_generation: await generationOf(uuid), taints },
  });
}

/** A host with two GPU children; returns [root, gpu0, gpu1]. */
async function gpuHost(): Promise<[string, string, string]> {
  const root = await provider(t, { inventory: { VCPU: { total: 8 } } });
  const g0 = await provider(t, { parent: root, inventory: { VGPU: { total: 1 } } });
  const g1 = await provider(t, { parent: root, inventory: { VGPU: { total: 1 } } });
  return [root, g0, g1];
}

const usedGpus = (all: Record<string, unknown>[]) => new Set(all.flatMap((a) => Object.keys(a)));

describe('/ext/resource_providers/{uuid}/taints', () => {
  it('round-trips, checks and bumps the generation, keeps when a drain began', async () => {
    const [root] = await gpuHost();
    const empty = await t.call('GET', `/ext/resource_providers/${root}/taints`);
    expect(await empty.json()).toEqual({ resource_provider_generation: 1, taints: [] });
    const put = await taint(root, [UNHEALTHY]);
    expect(put.status).toBe(200);
    const body = (await put.json()) as { resource_provider_generation: number; taints: { created_at: string }[] };
    expect(body.resource_provider_generation).toBe(2);
    expect(body.taints).toEqual([{ ...UNHEALTHY, created_at: expect.any(String) }]);
    expect(await generationOf(root)).toBe(2);
    const read = await (await t.call('GET', `/ext/resource_providers/${root}/taints`)).json();
    expect(read).toEqual(body);
    // Set again with a new reason: same taint, its created_at kept.
    const again = (await (await taint(root, [{ ...UNHEALTHY, reason: 'still' }])).json()) as typeof body;
    expect(again.taints[0]!.created_at).toBe(body.taints[0]!.created_at);
    // A stale generation is 409, as for traits; a missing provider 404; a bad body 400.
    const stale = await t.call('PUT', `/ext/resource_providers/${root}/taints`, {
      body: { resource_provider_generation: 1, taints: [] },
    });
    expect(stale.status).toBe(409);
    const staleError = await errorOf(stale);
    expect(staleError.code).toBe('placement.concurrent_update');
    expect(staleError.detail).toContain(`resource provider ${root} changed`);
    expect((await t.call('GET', `/ext/resource_providers/${crypto.randomUUID()}/taints`)).status).toBe(404);
    const missing = await t.call('PUT', `/ext/resource_providers/${crypto.randomUUID()}/taints`, {
      body: { resource_provider_generation: 0, taints: [] },
    });
    expect(missing.status).toBe(404);
    for (const bad of [
      { ...UNHEALTHY, effect: 'Evict' },
      { ...UNHEALTHY, key: 'bad key' },
      { ...UNHEALTHY, extra: 1 },
    ]) {
      expect((await taint(root, [bad])).status).toBe(400);
    }
    expect(
      (await t.call('GET', `/ext/resource_providers/${root}/taints`, { headers: { 'x-roles': 'member', 'x-auth-token': 'user' } })).status,
    ).toBe(403);
  });

  it('replaces the whole set: a taint left out goes, one kept keeps when it began', async () => {
    const [root] = await gpuHost();
    const DRAIN = { key: 'maintenance', value: '', effect: 'NoSchedule', reason: 'BIOS update' };
    const both = (await (await taint(root, [UNHEALTHY, DRAIN])).json()) as { taints: { key: string; created_at: string }[] };
    expect(both.taints.map((x) => x.key)).toEqual([UNHEALTHY.key, DRAIN.key].sort());
    await new Promise((resolve) => setTimeout(resolve, 5)); // a later created_at for anything written anew
    const one = (await (await taint(root, [DRAIN])).json()) as { taints: { key: string; created_at: string }[] };
    expect(one.taints).toEqual([{ ...DRAIN, created_at: both.taints.find((x) => x.key === DRAIN.key)!.created_at }]);
    expect(((await (await t.call('GET', `/ext/resource_providers/${root}/taints`)).json()) as { taints: unknown[] }).taints).toEqual(
      one.taints,
    );
    // Another provider's taints, read and written in turn with these: each its own.
    const [other] = await gpuHost();
    const theirs = (await (await taint(other, [UNHEALTHY])).json()) as { taints: { key: string }[] };
    expect(theirs.taints.map((x) => x.key)).toEqual([UNHEALTHY.key]);
    for (const [uuid, taints] of [
      [root, one.taints],
      [other, theirs.taints],
      [root, one.taints],
    ] as const) {
      expect(((await (await t.call('GET', `/ext/resource_providers/${uuid}/taints`)).json()) as { taints: unknown[] }).taints).toEqual(
        taints,
      );
    }
  });

  it('lets exactly one of racing writers with one generation win', async () => {
    const [root] = await gpuHost();
    const generation = await generationOf(root);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.call('PUT', `/ext/resource_providers/${root}/taints`, {
          body: { resource_provider_generation: generation, taints: [{ ...UNHEALTHY, value: String(i) }] },
        }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, ...Array(11).fill(409)]);
    expect(await generationOf(root)).toBe(generation + 1);
  });

  it('takes a tainted device out of candidates for every client unless tolerated; allocations stay', async () => {
    const [root, g0, g1] = await gpuHost();
    const query = 'resources=VGPU:1';
    expect(usedGpus(await candidates(t, query))).toEqual(new Set([g0, g1]));
    expect((await claim(t, { [g0]: { resources: { VGPU: 1 } } })).status).toBe(204);
    // g0 is full; taint g1: nothing left, at the newest and the oldest candidates microversion.
    expect((await taint(g1, [UNHEALTHY])).status).toBe(200);
    expect(await candidates(t, query)).toEqual([]);
    const old = await t.call('GET', `/allocation_candidates?${query}`, { version: '1.10' });
    expect(((await old.json()) as { allocation_requests: unknown[] }).allocation_requests).toEqual([]);
    expect(countOf(await headroom(t, query), root)).toBe(0);
    // Tolerated: back.
    expect(usedGpus(await candidates(t, `${query}&ext_tolerate=other,${UNHEALTHY.key}`))).toEqual(new Set([g1]));
    expect(countOf(await headroom(t, `${query}&ext_tolerate=${UNHEALTHY.key}`), root)).toBe(1);
    expect(usedGpus(await candidates(t, `${query}&ext_tolerate=other`))).toEqual(new Set());
    // The allocation on a tainted provider stays; a claim there is still granted (taints steer candidates only).
    expect((await taint(g0, [UNHEALTHY])).status).toBe(200);
    expect((await t.call('GET', `/resource_providers/${g0}/usages`)).status).toBe(200);
    expect(((await (await t.call('GET', `/resource_providers/${g0}/usages`)).json()) as { usages: object }).usages).toEqual({ VGPU: 1 });
    // Untainted: back for everyone.
    expect((await taint(g1, [])).status).toBe(200);
    expect(usedGpus(await candidates(t, query))).toEqual(new Set([g1]));
  });

  it('answers a database failure during the write as a server error, not as a generation conflict, and changes nothing', async () => {
    const [, gpu] = await gpuHost();
    expect((await taint(gpu, [UNHEALTHY])).status).toBe(200);
    const before = await (await t.call('GET', `/ext/resource_providers/${gpu}/taints`)).json();
    const { store } = t.deps;
    const write = store.writeBatch;
    // The DELETE after the generation's compare-and-swap and its guard fails, as on a broken database.
    store.writeBatch = async (statements) => write(statements.map((s, i) => (i === 2 ? "SELECT json('injected failure')" : s)));
    try {
      const res = await taint(gpu, []);
      expect(res.status).toBe(500);
    } finally {
      store.writeBatch = write;
    }
    expect(await (await t.call('GET', `/ext/resource_providers/${gpu}/taints`)).json()).toEqual(before);
  });

  it('a provider with two excluding taints stays out unless the request tolerates both', async () => {
    const [root, g0, g1] = await gpuHost();
    const DRAIN = { key: 'maintenance', value: '', effect: 'NoExecute', reason: 'BIOS update' };
    expect((await taint(g1, [UNHEALTHY, DRAIN])).status).toBe(200);
    const query = 'resources=VGPU:1';
    expect(usedGpus(await candidates(t, query))).toEqual(new Set([g0]));
    for (const tolerated of [UNHEALTHY.key, DRAIN.key]) {
      // One of the two tolerated: the other still keeps g1 out.
      expect(usedGpus(await candidates(t, `${query}&ext_tolerate=${tolerated}`)), tolerated).toEqual(new Set([g0]));
      expect(countOf(await headroom(t, `${query}&ext_tolerate=${tolerated}`), root), tolerated).toBe(1);
    }
    const both = `${query}&ext_tolerate=${UNHEALTHY.key},${DRAIN.key}`;
    expect(usedGpus(await candidates(t, both))).toEqual(new Set([g0, g1]));
    expect(countOf(await headroom(t, both), root)).toBe(2);
  });

  it('takes a tainted root out with its whole tree, sharing providers of that tree included', async () => {
    const [root, g0] = await gpuHost();
    const other = await provider(t, { inventory: { VCPU: { total: 8 } } });
    expect((await taint(root, [{ ...UNHEALTHY, effect: 'NoExecute' }])).status).toBe(200);
    expect(usedGpus(await candidates(t, 'resources=VCPU:1'))).toEqual(new Set([other]));
    expect(await candidates(t, 'resources=VGPU:1')).toEqual([]);
    expect(usedGpus(await candidates(t, `resources=VGPU:1&ext_tolerate=${UNHEALTHY.key}`)).has(g0)).toBe(true);
  });

  it('refuses a bad ext_tolerate and any other ext_ parameter, as upstream refuses unknown ones', async () => {
    await gpuHost();
    const bad = await t.call('GET', '/allocation_candidates?resources=VGPU:1&ext_tolerate=a%20b');
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).detail).toContain('ext_tolerate');
    const unknown = await t.call('GET', '/allocation_candidates?resources=VGPU:1&ext_tolerat=a');
    expect(unknown.status).toBe(400);
    expect((await errorOf(unknown)).detail).toContain("'ext_tolerat'");
  });
});

describe('GET /ext/taints (the drain list)', () => {
  it('lists each taint with the consumers allocated on its provider (a root: its tree); taints go with their provider', async () => {
    const [root, g0, g1] = await gpuHost();
    const onG0 = crypto.randomUUID();
    const onRoot = crypto.randomUUID();
    expect((await claim(t, { [g0]: { resources: { VGPU: 1 } } }, onG0)).status).toBe(204);
    expect((await claim(t, { [root]: { resources: { VCPU: 2 } } }, onRoot)).status).toBe(204);
    expect((await taint(g0, [UNHEALTHY])).status).toBe(200);
    expect((await taint(root, [{ ...UNHEALTHY, key: 'maintenance' }])).status).toBe(200);
    expect((await taint(g1, [UNHEALTHY])).status).toBe(200);
    const drain = (await (await t.call('GET', '/ext/taints')).json()) as {
      taints: { resource_provider_uuid: string; root_provider_uuid: string; consumers: string[]; taint: { key: string } }[];
    };
    const of = (uuid: string) => drain.taints.find((d) => d.resource_provider_uuid === uuid)!;
    expect(of(g0).consumers).toEqual([onG0]);
    expect(of(g1).consumers).toEqual([]);
    expect(of(root).consumers).toEqual([onG0, onRoot].sort());
    expect(of(g1).root_provider_uuid).toBe(root);
    // A provider deleted takes its taints with it.
    expect((await t.call('DELETE', `/resource_providers/${g1}`)).status).toBe(204);
    const after = (await (await t.call('GET', '/ext/taints')).json()) as typeof drain;
    expect(after.taints.map((d) => d.resource_provider_uuid).sort()).toEqual([g0, root].sort());
  });
});
