// Query values with surrounding whitespace, as YAML-folded URLs send them
// (a space before each `&`): every parameter of every endpoint strips its
// values and list items, as upstream's parsers do.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

interface Candidates {
  allocation_requests: { allocations: Record<string, unknown>; mappings?: Record<string, string[]> }[];
}

let app: TestApp;
const agg = crypto.randomUUID();
let cn: string, numa: string, pf: string;
const project = crypto.randomUUID();

beforeAll(async () => {
  app = await makeTestApp();
  cn = await provider(app, { traits: ['HW_CPU_X86_AVX2'], aggregates: [agg] });
  numa = await provider(app, { parent: cn, inventory: { VCPU: { total: 4 } } });
  pf = await provider(app, { parent: numa, inventory: { SRIOV_NET_VF: { total: 4 } }, traits: ['CUSTOM_PHYSNET1'] });
  const claim = await app.call('PUT', `/allocations/${crypto.randomUUID()}`, {
    body: {
      allocations: { [numa]: { resources: { VCPU: 1 } } },
      project_id: project,
      user_id: crypto.randomUUID(),
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });
  expect(claim.status).toBe(204);
});
afterAll(() => app.close());

async function ok(path: string): Promise<unknown> {
  const res = await app.call('GET', path);
  const body: unknown = await res.json();
  expect(res.status, JSON.stringify(body)).toBe(200);
  return body;
}

describe('GET /allocation_candidates', () => {
  it('accepts a folded URL: spaces before each & in resources, same_subtree and group_policy', async () => {
    const body = (await ok(
      '/allocation_candidates?resources-a=VCPU:1 &resources-b=SRIOV_NET_VF:1 ' +
        '&required-b=CUSTOM_PHYSNET1 &same_subtree=-a, -b &group_policy=none ',
    )) as Candidates;
    expect(body.allocation_requests.map((r) => r.mappings)).toEqual([{ '-a': [numa], '-b': [pf] }]);
  });

  it('strips limit, in_tree, member_of, required and root_required values', async () => {
    const query = [
      'resources= VCPU : 1 , SRIOV_NET_VF:1 ',
      'limit= 1 ',
      `in_tree= ${cn} `,
      `member_of= in: ${agg} , ${crypto.randomUUID()} `,
      'required= CUSTOM_PHYSNET1 ',
      'root_required= HW_CPU_X86_AVX2 ',
    ].join('&');
    const body = (await ok(`/allocation_candidates?${query}`)) as Candidates;
    expect(body.allocation_requests.map((r) => Object.keys(r.allocations).sort())).toEqual([[numa, pf].sort()]);
  });
});

describe('other endpoints', () => {
  it('GET /resource_providers strips name, uuid, in_tree, member_of, resources and required', async () => {
    const name = `rp-${cn}`;
    for (const query of [`name=${name} `, `uuid= ${cn} `, `in_tree=${cn} &member_of= ${agg} `, `uuid=${cn} &required= HW_CPU_X86_AVX2 `]) {
      const body = (await ok(`/resource_providers?${query}`)) as { resource_providers: { uuid: string }[] };
      expect(
        body.resource_providers.map((p) => p.uuid),
        query,
      ).toEqual([cn]);
    }
    const withVcpu = (await ok('/resource_providers?resources=VCPU:2 ')) as { resource_providers: { uuid: string }[] };
    expect(withVcpu.resource_providers.map((p) => p.uuid)).toEqual([numa]);
  });

  it('GET /traits strips the name filter and its items', async () => {
    const startsWith = (await ok('/traits?name=startswith:CUSTOM_PHYS &associated=true ')) as { traits: string[] };
    expect(startsWith.traits).toEqual(['CUSTOM_PHYSNET1']);
    const listed = (await ok('/traits?name=in: CUSTOM_PHYSNET1 , HW_CPU_X86_AVX2 ')) as { traits: string[] };
    expect(listed.traits.sort()).toEqual(['CUSTOM_PHYSNET1', 'HW_CPU_X86_AVX2']);
  });

  it('GET /usages strips project_id', async () => {
    const body = await ok(`/usages?project_id= ${project} &consumer_type= INSTANCE `);
    expect(body).toEqual({ usages: { INSTANCE: { VCPU: 1, consumer_count: 1 } } });
  });
});
