// Forbidden traits in requests of several groups. A single-group request drops
// providers with a forbidden trait before the search (the research prefilter);
// with several groups the search itself must refuse them, per group, for every
// way a group can be served: one provider of a granular group, the spread of
// an unsuffixed group over a tree, a sharing provider, and inside same_subtree.
// Until these examples, only the random differential test noticed when the
// search ignored them.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

interface Candidates {
  allocation_requests: { allocations: Record<string, { resources: Record<string, number> }>; mappings: Record<string, string[]> }[];
}

let app: TestApp;
beforeEach(async () => {
  app = await makeTestApp();
  expect((await app.call('PUT', '/traits/CUSTOM_BAD')).status).toBe(201);
});
afterEach(() => app.close());

async function candidates(query: string): Promise<Candidates['allocation_requests']> {
  const res = await app.call('GET', `/allocation_candidates?${query}`);
  const body = (await res.json()) as Candidates;
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body.allocation_requests;
}

/** Each candidate as "group=provider,..." strings, sorted, for order-free comparison. */
const mappingsOf = (requests: Candidates['allocation_requests']) =>
  requests
    .map((r) =>
      Object.entries(r.mappings)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([group, providers]) => `${group}=${[...providers].sort().join(',')}`)
        .join(' '),
    )
    .sort();

describe('forbidden traits with several request groups', () => {
  it('a granular group never lands on a provider with its forbidden trait; the other group may', async () => {
    const cn = await provider(app);
    const bad = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 } }, traits: ['CUSTOM_BAD'] });
    const good = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 } } });
    const got = await candidates('resources_A=VCPU:1&required_A=!CUSTOM_BAD&resources_B=VCPU:1&group_policy=none');
    expect(mappingsOf(got)).toEqual([`_A=${good} _B=${bad}`, `_A=${good} _B=${good}`].sort());
  });

  it('the unsuffixed group forbids its trait on flat hosts beside a granular group', async () => {
    await provider(app, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } }, traits: ['CUSTOM_BAD'] });
    const clean = await provider(app, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } } });
    const got = await candidates('resources=VCPU:1&required=!CUSTOM_BAD&resources_M=MEMORY_MB:64&group_policy=none');
    expect(got.map((r) => Object.keys(r.allocations))).toEqual([[clean]]);
  });

  it('the unsuffixed group spread over a tree uses no provider with its forbidden trait', async () => {
    const cn = await provider(app, { inventory: { MEMORY_MB: { total: 1024 } } });
    await provider(app, { parent: cn, inventory: { VCPU: { total: 4 } }, traits: ['CUSTOM_BAD'] });
    const good = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 } } });
    const got = await candidates('resources=VCPU:1,MEMORY_MB:64&required=!CUSTOM_BAD&resources_M=MEMORY_MB:64&group_policy=none');
    expect(got.map((r) => Object.keys(r.allocations).sort())).toEqual([[cn, good].sort()]);
  });

  it('a sharing provider with the forbidden trait serves neither the unsuffixed nor a granular group', async () => {
    const agg = crypto.randomUUID();
    const host = await provider(app, { inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } }, aggregates: [agg] });
    await provider(app, {
      inventory: { DISK_GB: { total: 100 } },
      traits: ['MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_BAD'],
      aggregates: [agg],
    });
    const goodDisk = await provider(app, {
      inventory: { DISK_GB: { total: 100 } },
      traits: ['MISC_SHARES_VIA_AGGREGATE'],
      aggregates: [agg],
    });
    const unsuffixed = await candidates('resources=VCPU:1,DISK_GB:10&required=!CUSTOM_BAD&resources_M=MEMORY_MB:64&group_policy=none');
    expect(unsuffixed.map((r) => Object.keys(r.allocations).sort())).toEqual([[host, goodDisk].sort()]);
    const granular = await candidates('resources=VCPU:1&resources_D=DISK_GB:10&required_D=!CUSTOM_BAD&group_policy=none');
    expect(mappingsOf(granular)).toEqual([`=${host} _D=${goodDisk}`]);
  });

  it('same_subtree: the group with the forbidden trait takes the clean branch, and its partner follows', async () => {
    const cn = await provider(app);
    const badNuma = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 } }, traits: ['CUSTOM_BAD'] });
    await provider(app, { parent: badNuma, inventory: { SRIOV_NET_VF: { total: 4 } } });
    const goodNuma = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 } } });
    const goodPf = await provider(app, { parent: goodNuma, inventory: { SRIOV_NET_VF: { total: 4 } } });
    const got = await candidates(
      'resources_C=VCPU:1&required_C=!CUSTOM_BAD&resources_N=SRIOV_NET_VF:1&same_subtree=_C,_N&group_policy=none',
    );
    expect(mappingsOf(got)).toEqual([`_C=${goodNuma} _N=${goodPf}`]);
  });
});
