// member_of as upstream placement applies it (bug 1792503): in the unsuffixed
// group a tree qualifies through its root (or the provider itself), while a
// sharing provider must itself be in the aggregates; in a suffixed group the
// provider that satisfies the group must itself qualify, never through its root.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

interface Candidates {
  allocation_requests: { allocations: Record<string, { resources: Record<string, number> }> }[];
}

let app: TestApp;
const aggA = crypto.randomUUID();
const aggShare = crypto.randomUUID();
const aggX = crypto.randomUUID();
const aggZ = crypto.randomUUID();
let cn1: string, numaPlain: string, numaInX: string, cn2: string, diskInA: string, diskInZ: string;
const names = new Map<string, string>();

beforeAll(async () => {
  app = await makeTestApp();
  // cn1's root is in A (and the sharing aggregate); its NUMA children are not in A.
  cn1 = await provider(app, { aggregates: [aggA, aggShare] });
  numaPlain = await provider(app, { parent: cn1, inventory: { VCPU: { total: 4 } } });
  numaInX = await provider(app, { parent: cn1, inventory: { VCPU: { total: 4 } }, aggregates: [aggX] });
  cn2 = await provider(app, { inventory: { VCPU: { total: 4 } }, aggregates: [aggShare] });
  // Both disks share with cn1 and cn2; only one of them is itself in A.
  diskInA = await provider(app, {
    inventory: { DISK_GB: { total: 100 } },
    traits: ['MISC_SHARES_VIA_AGGREGATE'],
    aggregates: [aggShare, aggA],
  });
  diskInZ = await provider(app, {
    inventory: { DISK_GB: { total: 100 } },
    traits: ['MISC_SHARES_VIA_AGGREGATE'],
    aggregates: [aggShare, aggZ],
  });
  for (const [name, uuid] of Object.entries({ cn1, numaPlain, numaInX, cn2, diskInA, diskInZ })) names.set(uuid, name);
});
afterAll(() => app.close());

/** Each request as "provider+provider" names, sorted, for order-free comparison. */
async function found(query: string): Promise<string[]> {
  const res = await app.call('GET', `/allocation_candidates?${query}`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as Candidates;
  return body.allocation_requests
    .map((r) =>
      Object.keys(r.allocations)
        .map((u) => names.get(u) ?? u)
        .sort()
        .join('+'),
    )
    .sort();
}

describe('member_of in the unsuffixed group', () => {
  it('an aggregate on the root spans the tree: every NUMA child is found', async () => {
    expect(await found(`resources=VCPU:1&member_of=${aggA}`)).toEqual(['numaInX', 'numaPlain']);
  });

  it('a sharing provider must itself be in the aggregate, not just its anchor tree', async () => {
    expect(await found(`resources=VCPU:1,DISK_GB:10&member_of=${aggA}`)).toEqual(['diskInA+numaInX', 'diskInA+numaPlain']);
  });

  it('in: any-of applies to the sharing provider itself', async () => {
    expect(await found(`resources=VCPU:1,DISK_GB:10&member_of=in:${aggA},${aggX}`)).toEqual(['diskInA+numaInX', 'diskInA+numaPlain']);
    expect(await found(`resources=VCPU:1,DISK_GB:10&member_of=in:${aggA},${aggZ}`)).toEqual([
      'diskInA+numaInX',
      'diskInA+numaPlain',
      'diskInZ+numaInX',
      'diskInZ+numaPlain',
    ]);
  });

  it('a forbidden aggregate rules out the sharing provider in it, and a tree whose root is in it', async () => {
    expect(await found(`resources=VCPU:1,DISK_GB:10&member_of=!${aggZ}`)).toEqual(['cn2+diskInA', 'diskInA+numaInX', 'diskInA+numaPlain']);
    expect(await found(`resources=VCPU:1,DISK_GB:10&member_of=!${aggA}`)).toEqual(['cn2+diskInZ']);
  });
});

describe('member_ofN in a suffixed group', () => {
  it('applies to the provider that satisfies the group, not to its root', async () => {
    expect(await found(`resources1=VCPU:1&member_of1=${aggA}`)).toEqual([]);
    expect(await found(`resources1=VCPU:1&member_of1=${aggX}`)).toEqual(['numaInX']);
    expect(await found(`resources1=VCPU:1&member_of1=in:${aggA},${aggX}`)).toEqual(['numaInX']);
  });

  it('a forbidden aggregate on the root does not rule out its children', async () => {
    expect(await found(`resources1=VCPU:1&member_of1=!${aggA}`)).toEqual(['cn2', 'numaInX', 'numaPlain']);
    expect(await found(`resources1=VCPU:1&member_of1=!in:${aggA},${aggX}`)).toEqual(['cn2', 'numaPlain']);
  });

  it('a sharing provider serving a suffixed group must itself be in the aggregate', async () => {
    expect(await found(`resources1=VCPU:1&resources2=DISK_GB:10&member_of2=${aggA}&group_policy=none`)).toEqual([
      'cn2+diskInA',
      'diskInA+numaInX',
      'diskInA+numaPlain',
    ]);
  });
});

describe('GET /resource_providers?member_of', () => {
  it('still lists only the providers that are themselves in the aggregate', async () => {
    const res = await app.call('GET', `/resource_providers?member_of=${aggA}`);
    const body = (await res.json()) as { resource_providers: { uuid: string }[] };
    expect(body.resource_providers.map((p) => names.get(p.uuid)).sort()).toEqual(['cn1', 'diskInA']);
  });
});
