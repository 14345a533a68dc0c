// No single allocation-candidates request may take the
// service down or hold every other request up. The request below (one root,
// 12 children of 8 CUSTOM_LEAF each, six groups of 1 with group_policy=none:
// ~3M candidates) used to exhaust the V8 heap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const SIX_GROUPS = `${Array.from({ length: 6 }, (_, i) => `resources${i + 1}=CUSTOM_LEAF:1`).join('&')}&group_policy=none`;

async function wideTree(app: TestApp): Promise<void> {
  await app.call('PUT', '/resource_classes/CUSTOM_LEAF');
  const root = await provider(app, { inventory: { VCPU: { total: 8 } } });
  for (let i = 0; i < 12; i += 1) await provider(app, { parent: root, inventory: { CUSTOM_LEAF: { total: 8 } } });
}

type Body = { allocation_requests: { allocations: Record<string, unknown>; mappings: Record<string, string[]> }[] };

describe('the default configuration caps a request with millions of candidates', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await makeTestApp();
    await wideTree(app);
  });
  afterAll(() => app.close());

  it('answers 10,000 candidates (the default cap) instead of running out of memory', async () => {
    const heapBefore = process.memoryUsage().heapUsed;
    const res = await app.call('GET', `/allocation_candidates?${SIX_GROUPS}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Body;
    expect(body.allocation_requests).toHaveLength(10_000);
    // The first candidates are the first combinations in stable order: all six groups on the first child.
    expect(Object.keys(body.allocation_requests[0]!.allocations)).toHaveLength(1);
    // Bounded memory: the answer and its search stay far below the 4 GB that killed the process.
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(256 * 1024 * 1024);
  });

  it('honours a limit below the cap quickly', async () => {
    const res = await app.call('GET', `/allocation_candidates?${SIX_GROUPS}&limit=10`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Body).allocation_requests).toHaveLength(10);
  });
});

describe('PLACEMENT_MAX_ALLOCATION_CANDIDATES', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await makeTestApp({ PLACEMENT_MAX_ALLOCATION_CANDIDATES: '7' });
    await wideTree(app);
  });
  afterAll(() => app.close());

  it('caps the answer when no limit is given, and a limit below it still applies', async () => {
    const capped = (await (await app.call('GET', `/allocation_candidates?${SIX_GROUPS}`)).json()) as Body;
    expect(capped.allocation_requests).toHaveLength(7);
    const limited = (await (await app.call('GET', `/allocation_candidates?${SIX_GROUPS}&limit=3`)).json()) as Body;
    expect(limited.allocation_requests).toEqual(capped.allocation_requests.slice(0, 3));
  });
});

describe('a long search does not hold other requests up', () => {
  let app: TestApp;
  beforeAll(async () => {
    // A cap high enough that the search runs for a long while.
    app = await makeTestApp({ PLACEMENT_MAX_ALLOCATION_CANDIDATES: '30000' });
    await wideTree(app);
  });
  afterAll(() => app.close());

  it('serves another request while the search runs', async () => {
    const finished: string[] = [];
    const big = app.call('GET', `/allocation_candidates?${SIX_GROUPS}`).then(async (res) => {
      finished.push('big');
      return res;
    });
    // Let the big request reach its search, then ask for something small.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const small = await app.call('GET', '/allocation_candidates?resources=VCPU:1');
    finished.push('small');
    expect(small.status).toBe(200);
    const res = await big;
    expect(res.status).toBe(200);
    expect(((await res.json()) as Body).allocation_requests).toHaveLength(30_000);
    expect(finished).toEqual(['small', 'big']);
  });
});
