// The GPU extensions (docs/extensions-gpu.md) beside the others (docs/extensions.md): shared counters with device taints
// (a tainted MIG GPU is out of candidates even where its profile fits, and
// ext_tolerate brings it back), and headroom applying both the counters and
// ext_first_of. Both engines (trees in memory, SQL alone).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { candidates, claim, countOf, headroom } from './helpers.js';
import { migGpu } from './mig-h100.js';

const UNHEALTHY = { key: 'gpu.example.com/unhealthy', value: 'ecc', effect: 'NoSchedule', reason: '3 uncorrected ECC errors' };
const TOLERATE = '&ext_tolerate=gpu.example.com/unhealthy';

describe.each([
  ['trees in memory', '20000'],
  ['SQL alone', '0'],
])('shared counters with taints, headroom and ext_first_of (%s)', (_engine, cache) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp({ PLACEMENT_CANDIDATE_TREE_CACHE: cache });
  });
  afterAll(() => t.close());

  async function taint(uuid: string): Promise<void> {
    const generation = ((await (await t.call('GET', `/resource_providers/${uuid}`)).json()) as { generation: number }).generation;
    const res = await t.call('PUT', `/ext/resource_providers/${uuid}/taints`, {
      body: { resource_provider_generation: generation, taints: [UNHEALTHY] },
    });
    expect(res.status, await res.clone().text()).toBe(200);
  }

  const gpusIn = async (query: string) => new Set((await candidates(t, query)).flatMap((a) => Object.keys(a)));

  it('a tainted MIG GPU is out of candidates even where its profile fits; ext_tolerate brings it back, within its counters', async () => {
    const tainted = await migGpu(t);
    const healthy = await migGpu(t);
    await taint(tainted);
    const ask = 'resources=CUSTOM_MIG_3G_40GB:1';
    const plain = await gpusIn(ask);
    expect(plain.has(healthy)).toBe(true);
    expect(plain.has(tainted)).toBe(false);
    const tolerated = await gpusIn(ask + TOLERATE);
    expect(tolerated.has(healthy) && tolerated.has(tainted)).toBe(true);
    // Fill the tainted GPU's slices (a 4g.40gb and a 3g.40gb: 7 of 7 compute slices) through a tolerating claim.
    expect((await claim(t, { [tainted]: { resources: { CUSTOM_MIG_4G_40GB: 1 } } })).status).toBe(204);
    expect((await claim(t, { [tainted]: { resources: { CUSTOM_MIG_3G_40GB: 1 } } })).status).toBe(204);
    // Its 3g.40gb inventory still has room (1 of 2), its counters do not: tolerated or not, it is out.
    expect((await gpusIn(ask + TOLERATE)).has(tainted)).toBe(false);
    expect((await gpusIn('resources=CUSTOM_MIG_1G_10GB:1' + TOLERATE)).has(tainted)).toBe(false);
    expect((await gpusIn(ask)).has(healthy)).toBe(true);
  });

  it('headroom counts claims within the counters, leaves a tainted GPU out unless tolerated, and follows ext_first_of', async () => {
    const gpu = await migGpu(t);
    // A fresh GPU: seven 1g.10gb (compute slices and inventory agree).
    expect(countOf(await headroom(t, 'resources=CUSTOM_MIG_1G_10GB:1'), gpu)).toBe(7);
    expect((await claim(t, { [gpu]: { resources: { CUSTOM_MIG_3G_40GB: 1 } } })).status).toBe(204);
    // After a 3g.40gb: 4 compute slices left, so four 1g.10gb (the inventory of 7 would say seven) and one 3g.40gb.
    expect(countOf(await headroom(t, 'resources=CUSTOM_MIG_1G_10GB:1'), gpu)).toBe(4);
    expect(countOf(await headroom(t, 'resources=CUSTOM_MIG_3G_40GB:1'), gpu)).toBe(1);
    // ext_first_of=_A,_B: the 4g.40gb first (one fits: 4 memory and 4 compute slices left, inventory 1), then 1g.10gb on what is left (none).
    const firstOf = 'resources_A=CUSTOM_MIG_4G_40GB:1&resources_B=CUSTOM_MIG_1G_10GB:1&group_policy=none&ext_first_of=_A,_B';
    expect(countOf(await headroom(t, firstOf), gpu)).toBe(1);
    // The same alternatives the other way round: 1g.10gb while a compute slice is left.
    expect(countOf(await headroom(t, firstOf.replace('ext_first_of=_A,_B', 'ext_first_of=_B,_A')), gpu)).toBe(4);
    // Candidates agree on which alternative a scheduler gets on this GPU.
    const first = (await candidates(t, firstOf)).find((a) => Object.keys(a).includes(gpu));
    expect(first?.[gpu]?.resources).toEqual({ CUSTOM_MIG_4G_40GB: 1 });
    await taint(gpu);
    expect(countOf(await headroom(t, 'resources=CUSTOM_MIG_1G_10GB:1'), gpu)).toBe(0);
    expect(countOf(await headroom(t, `resources=CUSTOM_MIG_1G_10GB:1${TOLERATE}`), gpu)).toBe(4);
  });
});
