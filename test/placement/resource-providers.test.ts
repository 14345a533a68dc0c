import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

const ROOT = '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f0001';
const CHILD = '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f0002';
const OTHER = '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f0003';

async function json(res: Response) {
  // biome-ignore lint/suspicious/noExplicitAny: tests read whatever body the API answered
  return res.json() as Promise<Record<string, any>>;
}

describe('resource providers', () => {
  it('creates a tree, answers with the body from 1.20 and a Location', async () => {
    const root = await t.call('POST', '/resource_providers', { body: { name: 'cn1', uuid: ROOT } });
    expect(root.status).toBe(200);
    expect(root.headers.get('location')).toBe(`http://localhost/resource_providers/${ROOT}`);
    const child = await json(
      await t.call('POST', '/resource_providers', {
        body: { name: 'cn1-numa0', uuid: CHILD, parent_provider_uuid: ROOT },
      }),
    );
    expect(child).toMatchObject({ parent_provider_uuid: ROOT, root_provider_uuid: ROOT, generation: 0 });
    const old = await t.call('POST', '/resource_providers', { body: { name: 'cn2', uuid: OTHER }, version: '1.19' });
    expect(old.status).toBe(201);
    expect(await old.text()).toBe('');
  });

  it('refuses duplicates with placement.duplicate_name, dashless uuids included', async () => {
    const res = await t.call('POST', '/resource_providers', { body: { name: 'x', uuid: ROOT.replace(/-/g, '') } });
    expect(res.status).toBe(409);
    expect((await json(res)).errors[0].code).toBe('placement.duplicate_name');
  });

  it('rejects bad bodies in the error envelope without writing anything', async () => {
    for (const body of [{ name: 'a'.repeat(201) }, { name: 'ok', uuid: 'not-a-uuid' }, { name: 'ok', color: 'blue' }, '{"name":']) {
      const res = await t.call('POST', '/resource_providers', { body });
      expect(res.status).toBe(400);
      expect((await json(res)).errors[0].status).toBe(400);
    }
    const list = await json(await t.call('GET', '/resource_providers'));
    expect(list.resource_providers).toHaveLength(3);
  });

  it('filters by in_tree, name and uuid', async () => {
    const tree = await json(await t.call('GET', `/resource_providers?in_tree=${CHILD}`));
    expect(tree.resource_providers.map((p: { uuid: string }) => p.uuid).sort()).toEqual([ROOT, CHILD].sort());
    const named = await json(await t.call('GET', '/resource_providers?name=cn2'));
    expect(named.resource_providers.map((p: { uuid: string }) => p.uuid)).toEqual([OTHER]);
    const bad = await t.call('GET', '/resource_providers?uuid=nope');
    expect(bad.status).toBe(400);
  });

  it('re-parents from 1.37 only, and never into its own subtree', async () => {
    const early = await t.call('PUT', `/resource_providers/${CHILD}`, {
      body: { name: 'cn1-numa0', parent_provider_uuid: OTHER },
      version: '1.36',
    });
    expect(early.status).toBe(400);
    const loop = await t.call('PUT', `/resource_providers/${ROOT}`, { body: { name: 'cn1', parent_provider_uuid: CHILD } });
    expect(loop.status).toBe(400);
    expect(await loop.text()).toContain('creating loop in the provider tree is not allowed');
    const moved = await json(
      await t.call('PUT', `/resource_providers/${CHILD}`, { body: { name: 'cn1-numa0', parent_provider_uuid: OTHER } }),
    );
    expect(moved).toMatchObject({ parent_provider_uuid: OTHER, root_provider_uuid: OTHER });
  });

  it('will not delete a parent, deletes a leaf, then 404s', async () => {
    const parent = await t.call('DELETE', `/resource_providers/${OTHER}`);
    expect(parent.status).toBe(409);
    expect((await json(parent)).errors[0].code).toBe('placement.resource_provider.cannot_delete_parent');
    expect((await t.call('DELETE', `/resource_providers/${CHILD}`)).status).toBe(204);
    expect((await t.call('GET', `/resource_providers/${CHILD}`)).status).toBe(404);
  });
});

describe('traits and aggregates on a provider', () => {
  it('sets traits with a generation compare-and-swap', async () => {
    expect((await t.call('PUT', '/traits/CUSTOM_GOLD')).status).toBe(201);
    expect((await t.call('PUT', '/traits/CUSTOM_GOLD')).status).toBe(204);
    const set = await json(
      await t.call('PUT', `/resource_providers/${ROOT}/traits`, {
        body: { traits: ['CUSTOM_GOLD', 'HW_CPU_X86_AVX2'], resource_provider_generation: 0 },
      }),
    );
    expect(set).toEqual({ traits: ['CUSTOM_GOLD', 'HW_CPU_X86_AVX2'], resource_provider_generation: 1 });
    const stale = await t.call('PUT', `/resource_providers/${ROOT}/traits`, { body: { traits: [], resource_provider_generation: 0 } });
    expect(stale.status).toBe(409);
    expect((await json(stale)).errors[0].code).toBe('placement.concurrent_update');
    const inUse = await t.call('DELETE', '/traits/CUSTOM_GOLD');
    expect(inUse.status).toBe(409);
    const filtered = await json(await t.call('GET', '/resource_providers?required=CUSTOM_GOLD,!HW_CPU_X86_SSE'));
    expect(filtered.resource_providers.map((p: { uuid: string }) => p.uuid)).toEqual([ROOT]);
    const anyOf = await json(await t.call('GET', '/resource_providers?required=in:CUSTOM_GOLD,HW_CPU_X86_SSE&required=!CUSTOM_GOLD'));
    expect(anyOf.resource_providers).toEqual([]);
  });

  it('sets aggregates; member_of and its negation filter providers', async () => {
    const agg = 'c1a0b7f5-0000-4000-8000-00000000aaaa';
    const res = await json(
      await t.call('PUT', `/resource_providers/${ROOT}/aggregates`, {
        body: { aggregates: [agg], resource_provider_generation: 1 },
      }),
    );
    expect(res).toEqual({ aggregates: [agg], resource_provider_generation: 2 });
    const inAgg = await json(await t.call('GET', `/resource_providers?member_of=${agg}`));
    expect(inAgg.resource_providers.map((p: { uuid: string }) => p.uuid)).toEqual([ROOT]);
    const notIn = await json(await t.call('GET', `/resource_providers?member_of=!${agg}`));
    expect(notIn.resource_providers.map((p: { uuid: string }) => p.uuid)).toEqual([OTHER]);
    // The 1.1 bare-list form does not carry or bump the generation.
    await t.call('PUT', `/resource_providers/${OTHER}/aggregates`, { body: [agg], version: '1.1' });
    const other = await json(await t.call('GET', `/resource_providers/${OTHER}`));
    expect(other.generation).toBe(0);
  });
});

describe('names and updates at the edges', () => {
  it('counts name length in characters, so 200 emoji fit and round-trip', async () => {
    const name = '😀'.repeat(200);
    const created = await t.call('POST', '/resource_providers', { body: { name } });
    expect(created.status).toBe(200);
    const { uuid } = await json(created);
    expect((await json(await t.call('GET', `/resource_providers/${uuid}`))).name).toBe(name);
    const tooLong = await t.call('POST', '/resource_providers', { body: { name: 'é'.repeat(201) } });
    expect(tooLong.status).toBe(400);
    expect(await tooLong.text()).toContain('is too long');
  });

  it('rejects bad renames and a taken name without changing the provider', async () => {
    for (const body of [{}, { name: '' }, { name: 'x', uuid: OTHER }, { name: 5 }]) {
      const res = await t.call('PUT', `/resource_providers/${ROOT}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    const taken = await t.call('PUT', `/resource_providers/${ROOT}`, { body: { name: 'cn2' } });
    expect(taken.status).toBe(409);
    expect((await json(taken)).errors[0].code).toBe('placement.duplicate_name');
    expect((await json(await t.call('GET', `/resource_providers/${ROOT}`))).name).toBe('cn1');
  });
});

describe('resources filter and deleting a provider in use', () => {
  const HOST = '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f0010';
  const CONSUMER = '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f00c1';

  it('lists only providers where the amount still fits after current usage', async () => {
    await t.call('POST', '/resource_providers', { body: { name: 'host-with-vcpu', uuid: HOST } });
    const inv = await t.call('PUT', `/resource_providers/${HOST}/inventories`, {
      body: { inventories: { VCPU: { total: 4, max_unit: 4 } }, resource_provider_generation: 0 },
    });
    expect(inv.status).toBe(200);
    const alloc = await t.call('PUT', `/allocations/${CONSUMER}`, {
      body: {
        allocations: { [HOST]: { resources: { VCPU: 3 } } },
        project_id: '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f00d1',
        user_id: '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f00e1',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(alloc.status).toBe(204);
    const uuids = async (q: string) =>
      (await json(await t.call('GET', `/resource_providers?resources=${q}`))).resource_providers.map((p: { uuid: string }) => p.uuid);
    expect(await uuids('VCPU:1')).toEqual([HOST]);
    expect(await uuids('VCPU:2')).toEqual([]);
    // Unit rules come from the same capacity rule: step_size 10 refuses 15.
    const DISK = '7a3bd1a7-6a35-4a0c-8a8c-0b5a3f1f0011';
    await t.call('POST', '/resource_providers', { body: { name: 'disk-host', uuid: DISK } });
    await t.call('PUT', `/resource_providers/${DISK}/inventories`, {
      body: { inventories: { DISK_GB: { total: 100, step_size: 10, max_unit: 100 } }, resource_provider_generation: 0 },
    });
    expect(await uuids('DISK_GB:15')).toEqual([]);
    expect(await uuids('DISK_GB:20')).toEqual([DISK]);
    expect(await uuids('DISK_GB:20,VCPU:1')).toEqual([]);
    const unknown = await t.call('GET', '/resource_providers?resources=CUSTOM_NOPE:1');
    expect(unknown.status).toBe(400);
  });

  it('refuses to delete a provider with allocations (placement.resource_provider.inuse)', async () => {
    const res = await t.call('DELETE', `/resource_providers/${HOST}`);
    expect(res.status).toBe(409);
    expect((await json(res)).errors[0].code).toBe('placement.resource_provider.inuse');
    expect((await t.call('GET', `/resource_providers/${HOST}`)).status).toBe(200);
  });
});
