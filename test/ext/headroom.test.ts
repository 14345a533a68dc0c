// GET /ext/headroom, proved by claiming: on each kind of tree, exactly `count`
// claims of the tree's first candidate go through, and the next is 409.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { claim, claimFirstUntilFull, countOf, headroom } from './helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

/** Headroom of `root` for `query`, then the claims that prove it, then the refused one. */
async function proveByClaiming(query: string, root: string, tree: string[], version?: string): Promise<number> {
  const expected = countOf(await headroom(t, query, version), root);
  const { granted, last } = await claimFirstUntilFull(t, query, new Set(tree), version);
  expect(granted).toBe(expected);
  if (last) {
    const refused = await claim(t, last);
    expect(refused.status).toBe(409);
  }
  expect(countOf(await headroom(t, query, version), root)).toBe(0);
  return expected;
}

describe('GET /ext/headroom', () => {
  it('counts flat hosts by capacity, ratio, reserved, step size and usage, ignoring limit', async () => {
    const a = await provider(t, { inventory: { VCPU: { total: 8, allocation_ratio: 2 }, MEMORY_MB: { total: 4096, reserved: 512 } } });
    const b = await provider(t, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 8192, step_size: 256 } } });
    const c = await provider(t, { inventory: { VCPU: { total: 1 } } });
    expect((await claim(t, { [a]: { resources: { VCPU: 1, MEMORY_MB: 100 } } })).status).toBe(204);
    const body = await headroom(t, 'resources=VCPU:3,MEMORY_MB:1024&limit=1');
    // a: VCPU (16-1)/3 = 5, MEMORY (3584-100)/1024 = 3; b: VCPU 4/3 = 1; c: no memory.
    expect(body).toEqual({
      total: 4,
      trees: [
        { root_provider_uuid: a, count: 3 },
        { root_provider_uuid: b, count: 1 },
      ],
    });
    expect(body.trees.some((tree) => tree.root_provider_uuid === c)).toBe(false);
    // MEMORY_MB:1000 is not a multiple of b's step size: only a fits.
    expect((await headroom(t, 'resources=VCPU:1,MEMORY_MB:1000')).trees.map((tree) => tree.root_provider_uuid)).toEqual([a]);
    expect(await proveByClaiming('resources=VCPU:3,MEMORY_MB:1024', a, [a])).toBe(3);
    expect(await proveByClaiming('resources=VCPU:3,MEMORY_MB:1024', b, [b])).toBe(1);
  });

  it('rounds down at fractional allocation ratios: whole claims of what (total - reserved) x ratio leaves', async () => {
    // a: 7 x 1.5 = 10.5, capacity 10; b: 10 x 0.75 = 7.5, capacity 7; c: (5 - 1) x 1.9 = 7.6, capacity 7, one used.
    const a = await provider(t, { inventory: { VCPU: { total: 7, allocation_ratio: 1.5 } } });
    const b = await provider(t, { inventory: { VCPU: { total: 10, allocation_ratio: 0.75 } } });
    const c = await provider(t, { inventory: { VCPU: { total: 5, reserved: 1, allocation_ratio: 1.9 } } });
    expect((await claim(t, { [c]: { resources: { VCPU: 1 } } })).status).toBe(204);
    const counts = async (query: string) => {
      const body = await headroom(t, query);
      return [countOf(body, a), countOf(body, b), countOf(body, c), body.total];
    };
    // VCPU:4: a 10/4 = 2.5 -> 2; b 7/4 = 1.75 -> 1; c 6/4 = 1.5 -> 1.
    expect(await counts('resources=VCPU:4')).toEqual([2, 1, 1, 4]);
    // VCPU:2: a 5; b 7/2 = 3.5 -> 3; c 6/2 = 3.
    expect(await counts('resources=VCPU:2')).toEqual([5, 3, 3, 11]);
    // VCPU:3: a 10/3 -> 3; b 7/3 -> 2; c 6/3 = 2.
    expect(await counts('resources=VCPU:3')).toEqual([3, 2, 2, 7]);
    expect(await proveByClaiming('resources=VCPU:4', a, [a])).toBe(2);
    expect(await proveByClaiming('resources=VCPU:2', b, [b])).toBe(3);
    expect(await proveByClaiming('resources=VCPU:4', c, [c])).toBe(1);
  });

  it('walks a nested tree child by child, as the first candidate moves', async () => {
    const root = await provider(t);
    const numa0 = await provider(t, { parent: root, inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048 } } });
    const numa1 = await provider(t, { parent: root, inventory: { VCPU: { total: 6 }, MEMORY_MB: { total: 1024 } } });
    // numa0: 2 claims; numa1: 1 (memory); mixing children (VCPU of one, memory of the other) gives more.
    const query = 'resources=VCPU:2,MEMORY_MB:1024';
    const expected = countOf(await headroom(t, query), root);
    expect(expected).toBeGreaterThanOrEqual(3);
    expect(await proveByClaiming(query, root, [root, numa0, numa1])).toBe(expected);
    // Granular: one child for both classes.
    const other = await makeTestApp();
    try {
      const r = await provider(other);
      await provider(other, { parent: r, inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048 } } });
      await provider(other, { parent: r, inventory: { VCPU: { total: 6 }, MEMORY_MB: { total: 1024 } } });
      expect(countOf(await headroom(other, 'resources1=VCPU:2,MEMORY_MB:1024'), r)).toBe(3);
    } finally {
      other.close();
    }
  });

  it('counts a sharing provider in each tree it serves, from the usage as it is now', async () => {
    const agg = crypto.randomUUID();
    const a = await provider(t, { inventory: { VCPU: { total: 16 } }, aggregates: [agg] });
    const b = await provider(t, { inventory: { VCPU: { total: 16 } }, aggregates: [agg] });
    const disk = await provider(t, { inventory: { DISK_GB: { total: 100 } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [agg] });
    const query = 'resources=VCPU:1,DISK_GB:30';
    const before = await headroom(t, query);
    expect(countOf(before, a)).toBe(3);
    expect(countOf(before, b)).toBe(3);
    expect(await proveByClaiming(query, a, [a, disk])).toBe(3);
    // The shared disk is full now: b has no headroom left either.
    expect(countOf(await headroom(t, query), b)).toBe(0);
  });

  it('follows group_policy=isolate and same_subtree on a device tree', async () => {
    const root = await provider(t, { inventory: { VCPU: { total: 32 } } });
    const numa = [
      await provider(t, { parent: root, traits: ['CUSTOM_NUMA'] }),
      await provider(t, { parent: root, traits: ['CUSTOM_NUMA'] }),
    ];
    const gpus: string[] = [];
    for (const n of numa) {
      for (let i = 0; i < 2; i += 1) gpus.push(await provider(t, { parent: n, inventory: { VGPU: { total: 3 } } }));
    }
    const query =
      'resources=VCPU:1&required_N=CUSTOM_NUMA&resources_G1=VGPU:2&resources_G2=VGPU:1&group_policy=isolate&same_subtree=_N,_G1,_G2';
    // Each NUMA node: two GPUs of 3; isolate puts G1 (2) and G2 (1) on different GPUs of one NUMA node.
    const expected = countOf(await headroom(t, query), root);
    expect(expected).toBe(4);
    expect(await proveByClaiming(query, root, [root, ...numa, ...gpus])).toBe(4);
  });

  it('answers as /allocation_candidates does to a bad request, and only to admins', async () => {
    await provider(t, { inventory: { VCPU: { total: 4 } } });
    const bad = await t.call('GET', '/ext/headroom?resources=VCPU:x');
    const candidatesBad = await t.call('GET', '/allocation_candidates?resources=VCPU:x');
    expect(bad.status).toBe(400);
    const [badError, candidatesError] = [await errorOf(bad), await errorOf(candidatesBad)];
    expect([badError.code, badError.detail]).toEqual([candidatesError.code, candidatesError.detail]);
    const unknown = await t.call('GET', '/ext/headroom?resources=VCPU:1&ext_unknown=1');
    expect(unknown.status).toBe(400);
    expect((await t.call('GET', '/ext/headroom?resources=VCPU:1', { version: '1.9' })).status).toBe(404);
    const member = await t.call('GET', '/ext/headroom?resources=VCPU:1', { headers: { 'x-roles': 'member', 'x-auth-token': 'user' } });
    expect(member.status).toBe(403);
  });
});
