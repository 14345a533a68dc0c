// GET /diagnostics/allocation_candidates: the funnel of a request through the
// candidate engine and, per named host, the first reason its tree fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Diagnosis } from '../../src/diagnostics/why-no-host.js';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
const AGG = crypto.randomUUID();
const hosts: Record<string, string> = {};
const name = (uuid: string) => `rp-${uuid}`;

beforeAll(async () => {
  t = await makeTestApp();
  const compute = { VCPU: { total: 16 }, MEMORY_MB: { total: 8192 } };
  hosts.fits = await provider(t, { inventory: compute, traits: ['HW_CPU_X86_AVX2'], aggregates: [AGG] });
  hosts.small = await provider(t, {
    inventory: { VCPU: { total: 4 }, MEMORY_MB: { total: 8192 } },
    traits: ['HW_CPU_X86_AVX2'],
    aggregates: [AGG],
  });
  hosts.noAvx = await provider(t, { inventory: compute, aggregates: [AGG] });
  hosts.outside = await provider(t, { inventory: compute, traits: ['HW_CPU_X86_AVX2'] });
  hosts.diskOnly = await provider(t, { inventory: { DISK_GB: { total: 100 } } });
  hosts.capped = await provider(t, {
    inventory: { VCPU: { total: 16, max_unit: 8 }, MEMORY_MB: { total: 8192 } },
    traits: ['HW_CPU_X86_AVX2'],
    aggregates: [AGG],
  });
});
afterAll(() => t.close());

async function diagnose(query: string, version = 'latest'): Promise<Diagnosis> {
  const res = await t.call('GET', `/diagnostics/allocation_candidates?${query}`, { version });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Diagnosis;
}

describe('GET /diagnostics/allocation_candidates', () => {
  const query = `resources=VCPU:10,MEMORY_MB:1024&required=HW_CPU_X86_AVX2&member_of=${AGG}`;

  it('counts providers and trees after each constraint, ending at the real answer', async () => {
    const diagnosis = await diagnose(query);
    expect(diagnosis.steps.map((s) => [s.group, s.constraint, s.providers, s.trees])).toEqual([
      [null, 'inventory', 5, 5],
      ['', 'resources', 3, 3],
      ['', 'required', 2, 2],
      ['', 'member_of', 1, 1],
    ]);
    expect(diagnosis.steps[1]!.detail).toBe('VCPU:10,MEMORY_MB:1024');
    const real = (await (await t.call('GET', `/allocation_candidates?${query}`)).json()) as { allocation_requests: unknown[] };
    expect(diagnosis.allocation_requests).toBe(real.allocation_requests.length);
    expect(diagnosis.allocation_requests).toBe(1);
  });

  it('names the first reason each host fails, by name or uuid', async () => {
    const asked = [hosts.fits!, name(hosts.small!), hosts.noAvx!, name(hosts.outside!), hosts.diskOnly!, hosts.capped!, 'no-such-host'];
    const diagnosis = await diagnose(`${query}&${asked.map((h) => `host=${encodeURIComponent(h)}`).join('&')}`);
    const verdicts = Object.fromEntries(diagnosis.hosts.map((h) => [h.root_provider_uuid, h]));
    expect(verdicts[hosts.fits!]).toMatchObject({ fits: true });
    expect(verdicts[hosts.fits!]!.failed_at).toBeUndefined();
    expect(verdicts[hosts.small!]).toMatchObject({
      host: name(hosts.small!),
      fits: false,
      failed_at: { group: '', constraint: 'resources', reason: `VCPU: needs 10, free 4 on ${hosts.small}` },
    });
    expect(verdicts[hosts.capped!]!.failed_at).toMatchObject({
      constraint: 'resources',
      reason: `VCPU: needs 10, max_unit 8 on ${hosts.capped}`,
    });
    expect(verdicts[hosts.noAvx!]!.failed_at).toMatchObject({
      constraint: 'required',
      reason: 'required trait HW_CPU_X86_AVX2 on no provider of the tree',
    });
    expect(verdicts[hosts.outside!]!.failed_at).toMatchObject({
      constraint: 'member_of',
      reason: `no provider of the tree is in aggregate ${AGG}`,
    });
    expect(verdicts[hosts.diskOnly!]!.failed_at).toMatchObject({ constraint: 'inventory' });
    expect(diagnosis.unknown_hosts).toEqual(['no-such-host']);
  });

  it('explains usage: a host that fitted stops fitting once its VCPUs are claimed', async () => {
    const claim = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [hosts.fits!]: { resources: { VCPU: 12 } } },
        project_id: 'p',
        user_id: 'u',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(claim.status).toBe(204);
    const diagnosis = await diagnose(`${query}&host=${hosts.fits}`);
    expect(diagnosis.hosts[0]!.failed_at?.reason).toBe(`VCPU: needs 10, free 4 on ${hosts.fits}`);
    expect(diagnosis.allocation_requests).toBe(0);
  });

  it('shows granular groups and group_policy as steps of their own', async () => {
    const pf = crypto.randomUUID();
    const root = await provider(t, { inventory: { VCPU: { total: 4 } } });
    const made = await t.call('POST', '/resource_providers', { body: { name: `pf-${pf}`, uuid: pf, parent_provider_uuid: root } });
    expect(made.status).toBe(200);
    expect(
      (
        await t.call('PUT', `/resource_providers/${pf}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { SRIOV_NET_VF: { total: 2 } } },
        })
      ).status,
    ).toBe(200);
    const diagnosis = await diagnose(`resources1=SRIOV_NET_VF:1&resources2=SRIOV_NET_VF:1&group_policy=isolate&host=${root}`);
    expect(diagnosis.steps.map((s) => [s.group, s.constraint, s.trees])).toEqual([
      [null, 'inventory', 1],
      ['1', 'resources', 1],
      ['2', 'resources', 1],
      [null, 'group_policy', 0],
    ]);
    expect(diagnosis.hosts[0]!.failed_at).toMatchObject({ constraint: 'group_policy' });
  });

  it('accepts exactly what GET /allocation_candidates accepts at the microversion', async () => {
    for (const [q, version] of [
      ['resources=VCPU:1&required=in:HW_CPU_X86_AVX2,HW_CPU_X86_SSE', '1.38'],
      ['resources=VCPU:x', 'latest'],
      ['resourcesX=VCPU:1', '1.32'],
      ['resources=CUSTOM_NOPE:1', 'latest'],
    ] as const) {
      const real = await t.call('GET', `/allocation_candidates?${q}`, { version });
      const diag = await t.call('GET', `/diagnostics/allocation_candidates?${q}`, { version });
      expect(diag.status, q).toBe(real.status);
      expect((await errorOf(diag)).detail, q).toBe((await errorOf(real)).detail);
    }
    expect((await t.call('GET', '/diagnostics/allocation_candidates?resources=VCPU:1', { version: '1.9' })).status).toBe(404);
  });

  it('is admin only', async () => {
    const res = await t.call('GET', '/diagnostics/allocation_candidates?resources=VCPU:1', {
      headers: { 'x-auth-token': 'nova:svc', 'x-roles': 'service' },
    });
    expect(res.status).toBe(403);
  });
});
