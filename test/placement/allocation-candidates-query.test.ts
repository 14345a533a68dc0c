// Query-language corners of GET /allocation_candidates that the main test
// file does not pin: any-of traits and aggregates, traits met by a sharing
// provider, in_tree, string suffixes and mappings per microversion, groups
// folded onto one provider, and the max-candidates cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientReader } from '../../src/db/client.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { Microversion } from '../../src/http/microversion.js';
import { findAllocationCandidates } from '../../src/placement/candidates/index.js';
import { parseCandidateQueryString } from '../../src/placement/candidates/parse.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

interface DictRequest {
  allocations: Record<string, { resources: Record<string, number> }>;
  mappings?: Record<string, string[]>;
}
interface Candidates {
  allocation_requests: DictRequest[];
  provider_summaries: Record<string, unknown>;
}
interface ErrorBody {
  errors: { detail: string }[];
}

async function candidates(app: TestApp, query: string, version = 'latest'): Promise<Candidates> {
  const res = await app.call('GET', `/allocation_candidates?${query}`, { version });
  expect(res.status).toBe(200);
  return (await res.json()) as Candidates;
}

/** Provider uuids used by each request, sorted, for order-free comparison. */
const providersUsed = (body: Candidates) => body.allocation_requests.map((r) => Object.keys(r.allocations).sort().join(' ')).sort();

describe('query language against two compute nodes and a shared disk', () => {
  let app: TestApp;
  let cn1: string, cn2: string, disk: string;
  const aggA = crypto.randomUUID();
  const aggB = crypto.randomUUID();
  beforeAll(async () => {
    app = await makeTestApp();
    cn1 = await provider(app, {
      inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } },
      traits: ['HW_CPU_X86_AVX2'],
      aggregates: [aggA],
    });
    cn2 = await provider(app, {
      inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } },
      traits: ['HW_CPU_X86_SSE42'],
      aggregates: [aggB],
    });
    // The disk shares with cn1 only (aggregate A) and carries a trait no compute node has.
    disk = await provider(app, {
      inventory: { DISK_GB: { total: 100 } },
      traits: ['MISC_SHARES_VIA_AGGREGATE', 'CUSTOM_FAST_DISK'],
      aggregates: [aggA],
    });
  });
  afterAll(() => app.close());

  it('required=in: accepts any one of the traits from 1.39, and is a 400 before', async () => {
    expect(providersUsed(await candidates(app, 'resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE42'))).toEqual(
      [cn1, cn2].sort(),
    );
    expect(providersUsed(await candidates(app, 'resources=VCPU:1&required=in:HW_CPU_X86_SSE42,CUSTOM_FAST_DISK'))).toEqual([cn2]);
    const old = await app.call('GET', '/allocation_candidates?resources=VCPU:1&required=in:HW_CPU_X86_AVX2', { version: '1.38' });
    expect(old.status).toBe(400);
    expect(((await old.json()) as ErrorBody).errors[0]!.detail).toContain('only supported since microversion 1.39');
  });

  it('a required trait of the unsuffixed group may be met by the sharing provider it uses, with or without a limit', async () => {
    const query = 'resources=VCPU:1,DISK_GB:10&required=CUSTOM_FAST_DISK';
    expect(providersUsed(await candidates(app, query))).toEqual([[cn1, disk].sort().join(' ')]);
    expect(providersUsed(await candidates(app, `${query}&limit=1`))).toEqual([[cn1, disk].sort().join(' ')]);
    // Forbidding it rules out every candidate that needs the disk.
    expect((await candidates(app, 'resources=VCPU:1,DISK_GB:10&required=!CUSTOM_FAST_DISK')).allocation_requests).toEqual([]);
  });

  it('member_of=in: is any-of, repeated member_of is all-of, !in: excludes', async () => {
    expect(providersUsed(await candidates(app, `resources=VCPU:1&member_of=in:${aggA},${aggB}`))).toEqual([cn1, cn2].sort());
    expect((await candidates(app, `resources=VCPU:1&member_of=${aggA}&member_of=${aggB}`)).allocation_requests).toEqual([]);
    expect(providersUsed(await candidates(app, `resources=VCPU:1&member_of=!in:${aggA},${crypto.randomUUID()}`))).toEqual([cn2]);
  });

  it('in_tree keeps one tree; an unknown provider gives no candidates rather than an error', async () => {
    expect(providersUsed(await candidates(app, `resources=VCPU:1&in_tree=${cn2}`))).toEqual([cn2]);
    expect(providersUsed(await candidates(app, `resources_X=VCPU:1&in_tree_X=${cn1}`))).toEqual([cn1]);
    expect((await candidates(app, `resources=VCPU:1&in_tree=${crypto.randomUUID()}`)).allocation_requests).toEqual([]);
  });

  it('string suffixes come with 1.33 and mappings with 1.34', async () => {
    const bad = await app.call('GET', '/allocation_candidates?resources_CPU=VCPU:1', { version: '1.32' });
    expect(bad.status).toBe(400);
    const before = await candidates(app, 'resources_CPU=VCPU:1&resources_MEM=MEMORY_MB:64&group_policy=none', '1.33');
    expect(before.allocation_requests).toHaveLength(2);
    expect(before.allocation_requests[0]).not.toHaveProperty('mappings');
    const after = await candidates(app, 'resources_CPU=VCPU:1&resources_MEM=MEMORY_MB:64&group_policy=none', '1.34');
    const mapped = after.allocation_requests.map((r) => `${r.mappings!._CPU!.join()}|${r.mappings!._MEM!.join()}`).sort();
    expect(mapped).toEqual([`${cn1}|${cn1}`, `${cn2}|${cn2}`].sort());
  });

  it('groups folded onto one provider must fit together', async () => {
    // Each group alone fits on either node; both together need 6 of 4 VCPU.
    const body = await candidates(app, 'resources1=VCPU:3&resources2=VCPU:3&group_policy=none');
    expect(body.allocation_requests).toEqual([]);
    const fits = await candidates(app, 'resources1=VCPU:2&resources2=VCPU:2&group_policy=none');
    expect(fits.allocation_requests.map((r) => Object.values(r.allocations).map((a) => a.resources.VCPU)).sort()).toEqual([[4], [4]]);
  });
});

describe('max candidates', () => {
  it('caps the answer at PLACEMENT_MAX_ALLOCATION_CANDIDATES', async () => {
    const app = await makeTestApp({ PLACEMENT_MAX_ALLOCATION_CANDIDATES: '2' });
    try {
      for (let i = 0; i < 4; i += 1) await provider(app, { inventory: { VCPU: { total: 2 } } });
      expect((await candidates(app, 'resources=VCPU:1')).allocation_requests).toHaveLength(2);
      expect((await candidates(app, 'resources=VCPU:1&limit=1')).allocation_requests).toHaveLength(1);
    } finally {
      app.close();
    }
  });
});

describe('several groups: trees pruned by the classes they offer', () => {
  // 70 flat nodes (more than the first chunk of 64 roots a small limit reads)
  // with VCPU and memory on one provider, then two nested trees whose VCPU,
  // memory and VFs sit on separate children; a disk shares with nested tree 1.
  let app: TestApp;
  const flat: string[] = [];
  const nested: { root: string; cpu: string; mem: string; pf: string }[] = [];
  let disk: string;
  const agg = crypto.randomUUID();
  beforeAll(async () => {
    app = await makeTestApp();
    for (let i = 0; i < 70; i += 1) flat.push(await provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 8192 } } }));
    for (let i = 0; i < 2; i += 1) {
      const root = await provider(app, i === 0 ? { aggregates: [agg] } : {});
      nested.push({
        root,
        cpu: await provider(app, { parent: root, inventory: { VCPU: { total: 4 } } }),
        mem: await provider(app, { parent: root, inventory: { MEMORY_MB: { total: 1024 } } }),
        pf: await provider(app, { parent: root, inventory: { SRIOV_NET_VF: { total: 8 } } }),
      });
    }
    disk = await provider(app, { inventory: { DISK_GB: { total: 100 } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [agg] });
  }, 60_000);
  afterAll(() => app.close());

  it('only trees offering every class answer', async () => {
    const body = await candidates(app, 'resources_C=VCPU:1&resources_N=SRIOV_NET_VF:1&group_policy=none');
    expect(providersUsed(body)).toEqual(nested.map((t) => [t.cpu, t.pf].sort().join(' ')).sort());
  });

  it('a class only a sharing provider offers does not prune the trees it shares with', async () => {
    const body = await candidates(app, 'resources_D=DISK_GB:5&resources_C=VCPU:1&group_policy=none');
    expect(providersUsed(body)).toEqual([[nested[0]!.cpu, disk].sort().join(' ')]);
    const withVf = await candidates(app, 'resources=DISK_GB:5&resources_C=VCPU:1&resources_N=SRIOV_NET_VF:1&group_policy=none');
    expect(providersUsed(withVf)).toEqual([[nested[0]!.cpu, nested[0]!.pf, disk].sort().join(' ')]);
  });

  it('a limit still finds trees beyond the first chunk when the first ones cannot serve', async () => {
    // Every flat node offers both classes but on one provider, which isolate refuses.
    const body = await candidates(app, 'resources_C=VCPU:1&resources_M=MEMORY_MB:1&group_policy=isolate&limit=1');
    expect(body.allocation_requests).toHaveLength(1);
    expect(body.allocation_requests[0]!.mappings).toEqual({ _C: [nested[0]!.cpu], _M: [nested[0]!.mem] });
    const all = await candidates(app, 'resources_C=VCPU:1&resources_M=MEMORY_MB:1&group_policy=none&limit=5');
    expect(providersUsed(all)).toEqual(flat.slice(0, 5).sort());
  });

  it('makes a fixed number of database round trips, however many trees there are', async () => {
    // Each batch/execute is one network hop to libSQL in Worker mode.
    const counted = countRoundTrips(app.deps.store.client);
    const mv = Microversion.parse('1.39')!;
    const tripsFor = async (query: string) => {
      counted.reset();
      const body = await findAllocationCandidates(clientReader(counted.client), parseCandidateQueryString(query, mv), mv, {
        randomize: false,
        maxCandidates: 0,
        treeCacheProviders: 0,
        now: Date.now(),
      });
      return { trips: counted.count(), count: body.allocation_requests.length };
    };
    // No tree condition: every tree, read whole with its usage in the one batch (the one read model;
    // the SQL engine it replaced read the candidate rows, then their trees, in 2).
    expect(await tripsFor('resources=VCPU:1,MEMORY_MB:1')).toEqual({ trips: 1, count: 72 });
    // The lowest trees come whole with their candidate rows.
    expect(await tripsFor('resources=VCPU:1&limit=3')).toEqual({ trips: 1, count: 3 });
    expect(await tripsFor(`resources_C=VCPU:1&resources_N=SRIOV_NET_VF:1&group_policy=none`)).toEqual({ trips: 1, count: 2 });
    // A sharing provider's own tree comes along too.
    expect(await tripsFor(`resources=DISK_GB:5&resources_C=VCPU:1&resources_N=SRIOV_NET_VF:1&group_policy=none`)).toEqual({
      trips: 1,
      count: 1,
    });
    // The lowest trees cannot serve (isolate): one more round trip for all viable trees.
    expect(await tripsFor('resources_C=VCPU:1&resources_M=MEMORY_MB:1&group_policy=isolate&limit=1')).toEqual({ trips: 2, count: 1 });
  });
});
