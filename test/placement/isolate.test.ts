// group_policy=isolate with three and four suffixed groups, answers written
// out by hand: every pair of suffixed groups on providers of their own, not
// only neighbouring groups, and not only the first two; the unsuffixed group
// is free to share. One host: root R (VCPU) over children A and B (one VF
// each), C (two VFs, two FPGAs) and, for four groups, D (one VF, two FPGAs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

interface Candidates {
  allocation_requests: { allocations: Record<string, { resources: Record<string, number> }>; mappings: Record<string, string[]> }[];
}

let t: TestApp;
/** Provider uuid -> its letter. */
const letter = new Map<string, string>();

beforeAll(async () => {
  t = await makeTestApp();
  expect((await t.call('PUT', '/resource_classes/CUSTOM_FPGA')).status).toBe(201);
  const root = await provider(t, { inventory: { VCPU: { total: 8 } } });
  letter.set(root, 'R');
  const children: [string, Record<string, { total: number }>][] = [
    ['A', { SRIOV_NET_VF: { total: 1 } }],
    ['B', { SRIOV_NET_VF: { total: 1 } }],
    ['C', { SRIOV_NET_VF: { total: 2 }, CUSTOM_FPGA: { total: 2 } }],
  ];
  for (const [name, inventory] of children) letter.set(await provider(t, { parent: root, inventory }), name);
});
afterAll(() => t.close());

/** Each candidate's groups, as "group=provider" in group order ("1=A 2=B 3=C"; the unsuffixed group first, as "=A"), sorted. */
async function mappings(query: string): Promise<string[]> {
  const res = await t.call('GET', `/allocation_candidates?${query}`, { version: '1.34' });
  expect(res.status).toBe(200);
  const body = (await res.json()) as Candidates;
  return body.allocation_requests
    .map((r) =>
      Object.entries(r.mappings)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([group, [uuid]]) => `${group}=${letter.get(uuid!)}`)
        .join(' '),
    )
    .sort();
}

const VF = 'SRIOV_NET_VF:1';

describe('group_policy=isolate, three groups', () => {
  it('three VF groups: each permutation of A, B and C, never C twice though C has two VFs', async () => {
    const query = `resources=VCPU:1&resources1=${VF}&resources2=${VF}&resources3=${VF}`;
    expect(await mappings(`${query}&group_policy=isolate`)).toEqual([
      '=R 1=A 2=B 3=C',
      '=R 1=A 2=C 3=B',
      '=R 1=B 2=A 3=C',
      '=R 1=B 2=C 3=A',
      '=R 1=C 2=A 3=B',
      '=R 1=C 2=B 3=A',
    ]);
    // The control: without isolate C takes two groups (A and B one each): 6 + 3 + 3.
    const none = await mappings(`${query}&group_policy=none`);
    expect(none).toContain('=R 1=C 2=A 3=C');
    expect(none).toContain('=R 1=C 2=C 3=A');
    expect(none).toHaveLength(12);
  });

  it('the FPGA group takes C, so the first and second groups cannot: isolation between groups that are not neighbours', async () => {
    expect(await mappings(`resources1=${VF}&resources2=${VF}&resources3=CUSTOM_FPGA:1&group_policy=isolate`)).toEqual([
      '1=A 2=B 3=C',
      '1=B 2=A 3=C',
    ]);
    expect(await mappings(`resources1=CUSTOM_FPGA:1&resources2=${VF}&resources3=${VF}&group_policy=isolate`)).toEqual([
      '1=C 2=A 3=B',
      '1=C 2=B 3=A',
    ]);
  });

  it('the unsuffixed group shares a provider with a suffixed one', async () => {
    expect(await mappings(`resources=${VF}&resources1=CUSTOM_FPGA:1&resources2=${VF}&group_policy=isolate`)).toEqual([
      '=A 1=C 2=B',
      '=B 1=C 2=A',
      '=C 1=C 2=A',
      '=C 1=C 2=B',
    ]);
  });
});

describe('group_policy=isolate, four groups', () => {
  it('four VF groups on three VF providers: none; with a fourth provider D, the 24 orders of A, B, C and D', async () => {
    const query = `resources1=${VF}&resources2=${VF}&resources3=${VF}&resources4=${VF}&group_policy=isolate`;
    expect(await mappings(query)).toEqual([]);
    const root = [...letter].find(([, name]) => name === 'R')![0];
    letter.set(await provider(t, { parent: root, inventory: { SRIOV_NET_VF: { total: 1 }, CUSTOM_FPGA: { total: 2 } } }), 'D');
    const all = await mappings(query);
    expect(all).toHaveLength(24);
    for (const answer of all) expect(new Set(answer.split(' ').map((m) => m.split('=')[1]))).toEqual(new Set(['A', 'B', 'C', 'D']));
    expect(new Set(all).size).toBe(24);
  });

  it('FPGA groups first and last (C or D each), VF groups between (then A and B): the first and the last never share', async () => {
    expect(
      await mappings(`resources1=CUSTOM_FPGA:1&resources2=${VF}&resources3=${VF}&resources4=CUSTOM_FPGA:1&group_policy=isolate`),
    ).toEqual(['1=C 2=A 3=B 4=D', '1=C 2=B 3=A 4=D', '1=D 2=A 3=B 4=C', '1=D 2=B 3=A 4=C']);
  });
});
