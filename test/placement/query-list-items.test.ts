// Every item of a comma-separated query list is stripped of whitespace, as
// upstream's parsers strip each item (README "Query semantics"): a client that
// writes `required=HW_CPU_X86_AVX2, CUSTOM_X` gets the same answer as one that
// writes `required=HW_CPU_X86_AVX2,CUSTOM_X`. query-whitespace.test.ts covers
// blanks around a whole value; this file covers blanks around each item, for
// every list parameter and every `in:` form, on both endpoints that take them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

interface Candidates {
  allocation_requests: { allocations: Record<string, unknown>; mappings?: Record<string, string[]> }[];
}
interface Providers {
  resource_providers: { uuid: string }[];
}

let app: TestApp;
const aggA = crypto.randomUUID();
const aggB = crypto.randomUUID();
let cn: string, numa: string, pf: string, other: string;

beforeAll(async () => {
  app = await makeTestApp();
  // A trait that exists but no provider has: forbidding it, or offering it as an alternative, changes nothing.
  expect((await app.call('PUT', '/traits/CUSTOM_NOPE')).status).toBe(201);
  cn = await provider(app, { traits: ['HW_CPU_X86_AVX2', 'CUSTOM_ROOTY'], aggregates: [aggA] });
  numa = await provider(app, {
    parent: cn,
    inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } },
    traits: ['CUSTOM_NUMA'],
    aggregates: [aggA],
  });
  pf = await provider(app, { parent: numa, inventory: { SRIOV_NET_VF: { total: 4 } }, traits: ['CUSTOM_PHYSNET1', 'CUSTOM_FAST'] });
  // A second, plain tree that every filter below must leave out.
  const otherRoot = await provider(app, { aggregates: [aggB] });
  other = await provider(app, { parent: otherRoot, inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 4096 } } });
});
afterAll(() => app.close());

async function get<T>(path: string): Promise<T> {
  const res = await app.call('GET', path);
  const body: unknown = await res.json();
  expect(res.status, `${path}: ${JSON.stringify(body)}`).toBe(200);
  return body as T;
}

const candidateSets = async (query: string) =>
  (await get<Candidates>(`/allocation_candidates?${query}`)).allocation_requests.map((r) => Object.keys(r.allocations).sort());

const providerUuids = async (query: string) =>
  (await get<Providers>(`/resource_providers?${query}`)).resource_providers.map((p) => p.uuid).sort();

describe('GET /allocation_candidates: blanks around list items', () => {
  it('resources items: blanks around each class and amount', async () => {
    expect(await candidateSets('resources=VCPU:1, MEMORY_MB :512 ,SRIOV_NET_VF: 1')).toEqual([[numa, pf].sort()]);
  });

  it('required: plain items, a forbidden item and the in: form', async () => {
    expect(await candidateSets('resources=VCPU:1,SRIOV_NET_VF:1&required=CUSTOM_PHYSNET1, CUSTOM_FAST')).toEqual([[numa, pf].sort()]);
    expect(await candidateSets('resources=VCPU:1&required=CUSTOM_NUMA, !CUSTOM_NOPE')).toEqual([[numa]]);
    expect(await candidateSets('resources=VCPU:1&required=in:CUSTOM_NOPE, CUSTOM_NUMA')).toEqual([[numa]]);
  });

  it('granular groups: required, member_of and same_subtree items', async () => {
    const query = [
      'resources_C=VCPU:1',
      'required_C=CUSTOM_NUMA, !CUSTOM_NOPE',
      'resources_N=SRIOV_NET_VF:1',
      'required_N=CUSTOM_PHYSNET1 ,CUSTOM_FAST',
      `member_of_C=in:${crypto.randomUUID()}, ${aggA}`,
      'same_subtree=_C, _N',
      'group_policy=none',
    ].join('&');
    const body = await get<Candidates>(`/allocation_candidates?${query}`);
    expect(body.allocation_requests.map((r) => r.mappings)).toEqual([{ _C: [numa], _N: [pf] }]);
  });

  it('root_required items and member_of in: items', async () => {
    expect(await candidateSets('resources=VCPU:1&root_required=HW_CPU_X86_AVX2, CUSTOM_ROOTY')).toEqual([[numa]]);
    expect(await candidateSets('resources=VCPU:1&root_required=CUSTOM_ROOTY, !CUSTOM_NOPE')).toEqual([[numa]]);
    expect(await candidateSets(`resources=VCPU:1&member_of=in:${crypto.randomUUID()} , ${aggA}`)).toEqual([[numa]]);
    expect(await candidateSets(`resources=VCPU:1&member_of=!in:${crypto.randomUUID()}, ${aggA}`)).toEqual([[other]]);
  });
});

describe('GET /resource_providers: blanks around list items', () => {
  it('required: plain items, a forbidden item and the in: form', async () => {
    expect(await providerUuids('required=CUSTOM_PHYSNET1, CUSTOM_FAST')).toEqual([pf]);
    expect(await providerUuids('required=CUSTOM_NUMA , !CUSTOM_NOPE')).toEqual([numa]);
    expect(await providerUuids('required=in:CUSTOM_NOPE, CUSTOM_NUMA')).toEqual([numa]);
  });

  it('resources items and member_of in: items', async () => {
    expect(await providerUuids('resources=VCPU:4, MEMORY_MB :4096')).toEqual([numa, other].sort());
    expect(await providerUuids(`member_of=in:${crypto.randomUUID()}, ${aggB}`)).toHaveLength(1);
  });
});
