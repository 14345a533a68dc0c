// What the hostile-input fuzz (hostile-fuzz.test.ts) found, each pinned down
// by a focused test that failed before its fix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

describe('an allocation ratio as large (or as negative) as placement accepts', () => {
  it('leaves every read that reports or compares capacity answering', async () => {
    const huge = await provider(t, { inventory: { VCPU: { total: 2147483647, allocation_ratio: 3.4e38 } } });
    // Two of each: the dashboard sums capacities per class.
    await provider(t, { inventory: { VCPU: { total: 2147483647, allocation_ratio: 3.4e38 } } });
    const negative = await provider(t, { inventory: { MEMORY_MB: { total: 2147483647, allocation_ratio: -3.4e38 } } });
    await provider(t, { inventory: { MEMORY_MB: { total: 2147483647, allocation_ratio: -3.4e38 } } });
    const consumer = crypto.randomUUID();
    const claim = await t.call('PUT', `/allocations/${consumer}`, {
      body: {
        allocations: { [huge]: { resources: { VCPU: 2147483647 } } },
        project_id: 'p',
        user_id: 'u',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(claim.status).toBe(204);
    const reads = [
      '/allocation_candidates?resources=VCPU:1',
      '/allocation_candidates?resources=MEMORY_MB:1',
      '/resource_providers?resources=VCPU:1',
      `/resource_providers/${huge}/usages`,
      `/resource_providers/${negative}/inventories`,
      '/diagnostics/audit',
      '/diagnostics/allocation_candidates?resources=VCPU:1',
      `/diagnostics/allocation_candidates?resources=MEMORY_MB:1&host=${negative}`,
      '/dashboard/api/summary',
      '/dashboard/api/summary?over=50',
    ];
    for (const path of reads) {
      const res = await t.call('GET', path);
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
    }
    const candidates = (await (await t.call('GET', '/allocation_candidates?resources=VCPU:1')).json()) as {
      provider_summaries: Record<string, { resources: Record<string, { capacity: number; used: number }> }>;
    };
    expect(candidates.provider_summaries[huge]!.resources.VCPU).toEqual({ capacity: Number.MAX_SAFE_INTEGER, used: 2147483647 });
    const summary = (await (await t.call('GET', '/dashboard/api/summary')).json()) as {
      resource_classes: Record<string, { capacity: number }>;
    };
    expect(summary.resource_classes.VCPU!.capacity).toBe(Number.MAX_SAFE_INTEGER);
    expect(summary.resource_classes.MEMORY_MB!.capacity).toBe(-Number.MAX_SAFE_INTEGER);
  });
});
