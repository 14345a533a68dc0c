// Wide device trees (upstream bugs 2070257 and 2126751): hosts with many
// one-PGPU children asked for one PGPU per group with group_policy=isolate.
// The search cuts a combination at its first bad choice and checks that the
// groups still to place can each get a child of their own, so a limited
// answer costs about the candidates it returns and an impossible request is
// known impossible at once (enumerating would take 8^9 steps per host).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

type Body = {
  allocation_requests: { allocations: Record<string, { resources: Record<string, number> }>; mappings: Record<string, string[]> }[];
};

const groups = (n: number) => Array.from({ length: n }, (_, i) => `resources${i + 1}=PGPU:1`).join('&');

describe('eight isolated PGPU groups on hosts of eight one-PGPU children', () => {
  let app: TestApp;
  const hosts: { root: string; gpus: string[] }[] = [];
  beforeAll(async () => {
    app = await makeTestApp();
    for (let h = 0; h < 10; h += 1) {
      const root = await provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 8192 } } });
      const gpus: string[] = [];
      for (let i = 0; i < 8; i += 1) gpus.push(await provider(app, { parent: root, inventory: { PGPU: { total: 1 } } }));
      hosts.push({ root, gpus });
    }
  });
  afterAll(() => app.close());

  it('gives each group a child of its own, first host first', async () => {
    const res = await app.call('GET', `/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024&${groups(8)}&group_policy=isolate&limit=10`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Body;
    expect(body.allocation_requests).toHaveLength(10);
    for (const request of body.allocation_requests) {
      const gpus = Object.entries(request.mappings)
        .filter(([suffix]) => suffix !== '')
        .map(([, uuids]) => uuids[0]!);
      expect(new Set(gpus).size).toBe(8);
      expect(gpus.every((uuid) => hosts[0]!.gpus.includes(uuid))).toBe(true);
      expect(request.allocations[hosts[0]!.root]!.resources).toEqual({ VCPU: 1, MEMORY_MB: 1024 });
    }
  });

  it('returns 1000 distinct candidates for limit=1000', async () => {
    const res = await app.call(
      'GET',
      `/allocation_candidates?resources=VCPU:1,MEMORY_MB:1024&${groups(8)}&group_policy=isolate&limit=1000`,
    );
    const body = (await res.json()) as Body;
    expect(body.allocation_requests).toHaveLength(1000);
    expect(new Set(body.allocation_requests.map((r) => JSON.stringify(r.mappings))).size).toBe(1000);
  });

  it('answers at once that nine isolated groups cannot fit on eight children', async () => {
    const res = await app.call('GET', `/allocation_candidates?${groups(9)}&group_policy=isolate`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as Body).allocation_requests).toEqual([]);
  });

  it('without isolate, two groups may share a child only when its inventory allows', async () => {
    const res = await app.call('GET', `/allocation_candidates?${groups(2)}&group_policy=none&limit=100`);
    const body = (await res.json()) as Body;
    // Each child has one PGPU: the two groups never land on the same one.
    for (const request of body.allocation_requests) expect(request.mappings['1']).not.toEqual(request.mappings['2']);
    expect(body.allocation_requests).toHaveLength(100);
  });
});

describe('allocation_candidates_generation_strategy (upstream HEAD)', () => {
  let depthFirst: TestApp;
  let breadthFirst: TestApp;
  const roots: Record<'depth' | 'breadth', string[]> = { depth: [], breadth: [] };
  beforeAll(async () => {
    depthFirst = await makeTestApp();
    breadthFirst = await makeTestApp({
      PLACEMENT_ALLOCATION_CANDIDATES_GENERATION_STRATEGY: 'breadth-first',
      PLACEMENT_MAX_ALLOCATION_CANDIDATES: '6',
    });
    for (const [app, list] of [
      [depthFirst, roots.depth],
      [breadthFirst, roots.breadth],
    ] as const) {
      for (let h = 0; h < 4; h += 1) {
        const root = await provider(app, { inventory: { VCPU: { total: 8 } } });
        for (let i = 0; i < 4; i += 1) await provider(app, { parent: root, inventory: { PGPU: { total: 1 } } });
        list.push(root);
      }
    }
  });
  afterAll(() => {
    depthFirst.close();
    breadthFirst.close();
  });

  const hostsOf = async (app: TestApp, query: string) => {
    const res = await app.call('GET', `/allocation_candidates?${query}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Body;
    return body.allocation_requests.map((r) => Object.keys(r.allocations).find((uuid) => r.allocations[uuid]!.resources.VCPU)!);
  };
  const query = `resources=VCPU:1&${groups(2)}&group_policy=isolate`;

  it('depth-first (the default) gives every candidate of the first host before the next', async () => {
    // 4 children, 2 isolated groups: 12 ordered pairs per host.
    expect(await hostsOf(depthFirst, `${query}&limit=4`)).toEqual(Array(4).fill(roots.depth[0]));
  });

  it('breadth-first takes one candidate from each host in turn, under limit and the candidate cap alike', async () => {
    expect(await hostsOf(breadthFirst, `${query}&limit=4`)).toEqual(roots.breadth);
    // No limit: max_allocation_candidates (6 here) keeps the first six in round-robin order.
    expect(await hostsOf(breadthFirst, query)).toEqual([...roots.breadth, roots.breadth[0], roots.breadth[1]]);
  });
});

describe('a request naming more classes than one coverage mask holds', () => {
  it('finds the tree offering all 32 classes and not the one missing the last', async () => {
    const app = await makeTestApp();
    try {
      const classes = Array.from({ length: 32 }, (_, i) => `CUSTOM_C${i}`);
      for (const name of classes) expect((await app.call('PUT', `/resource_classes/${name}`)).status).toBe(201);
      const inventory = (names: string[]) => Object.fromEntries(names.map((name) => [name, { total: 4 }]));
      const full = await provider(app, { inventory: inventory(classes) });
      await provider(app, { inventory: inventory(classes.slice(0, 31)) });
      const res = await app.call('GET', `/allocation_candidates?resources=${classes.map((c) => `${c}:1`).join(',')}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as Body;
      expect(body.allocation_requests.map((r) => Object.keys(r.allocations))).toEqual([[full]]);
    } finally {
      app.close();
    }
  });
});
