// POST /ext/simulate with shared counters (partitionable GPUs): the counters'
// loads follow the simulated usage, so a change that moves usage on a GPU
// with counters answers the headroom the service answers once it is made.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { claim } from './helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

describe('POST /ext/simulate with shared counters', () => {
  it('headroom before and after a consumer leaves a GPU whose profiles share counters equals the real headroom', async () => {
    for (const name of ['CUSTOM_MIG_1G', 'CUSTOM_MIG_3G'])
      expect([201, 204]).toContain((await t.call('PUT', `/resource_classes/${name}`)).status);
    const gpu = await provider(t, { inventory: { CUSTOM_MIG_1G: { total: 7 }, CUSTOM_MIG_3G: { total: 2 } } });
    const { generation } = (await (await t.call('GET', `/resource_providers/${gpu}`)).json()) as { generation: number };
    const put = await t.call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      body: {
        resource_provider_generation: generation,
        counters: { slices: 7 },
        consumption: { CUSTOM_MIG_1G: { slices: 1 }, CUSTOM_MIG_3G: { slices: 3 } },
      },
    });
    expect(put.status, await put.clone().text()).toBe(200);
    const big = crypto.randomUUID();
    expect((await claim(t, { [gpu]: { resources: { CUSTOM_MIG_3G: 1 } } }, big)).status).toBe(204);
    expect((await claim(t, { [gpu]: { resources: { CUSTOM_MIG_1G: 2 } } })).status).toBe(204);
    const queries = [
      { name: '3g', query: 'resources=CUSTOM_MIG_3G:1' },
      { name: '1g', query: 'resources=CUSTOM_MIG_1G:1' },
    ];
    const headroom = async (query: string) => ((await (await t.call('GET', `/ext/headroom?${query}`)).json()) as { total: number }).total;
    const res = await t.call('POST', '/ext/simulate', { body: { changes: [{ op: 'remove_consumers', consumers: [big] }], queries } });
    expect(res.status, await res.clone().text()).toBe(200);
    const answer = (await res.json()) as { queries: { before: { total: number }; after: { total: number } }[] };
    // Before: 5 of 7 slices used: no 3g (3 slices), two 1g. The counters decide, not the inventories.
    expect(answer.queries.map((q) => q.before.total)).toEqual([await headroom(queries[0]!.query), await headroom(queries[1]!.query)]);
    expect(answer.queries.map((q) => q.before.total)).toEqual([0, 2]);
    expect((await t.call('DELETE', `/allocations/${big}`)).status).toBe(204);
    expect(answer.queries.map((q) => q.after.total)).toEqual([await headroom(queries[0]!.query), await headroom(queries[1]!.query)]);
    expect(answer.queries.map((q) => q.after.total)).toEqual([1, 5]);
  });
});
