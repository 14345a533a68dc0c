import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { providerGeneration, seedProvider, usageOf } from '../helpers/placement-seed.js';
import { PROJECT as project, USER as user } from '../helpers/claims.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

/** A root with VCPU and DISK_GB, an empty child, and one consumer holding VCPU 4 + DISK_GB 10 on the root. */
async function tree() {
  const root = await seedProvider(t.deps, { VCPU: { total: 8 }, DISK_GB: { total: 100 } });
  const child = await seedProvider(t.deps, {}, { parentUuid: root.uuid });
  const consumer = crypto.randomUUID();
  const put = await t.call('PUT', `/allocations/${consumer}`, {
    version: '1.28',
    body: {
      allocations: { [root.uuid]: { resources: { VCPU: 4, DISK_GB: 10 } } },
      project_id: project,
      user_id: user,
      consumer_generation: null,
    },
  });
  expect(put.status).toBe(204);
  return { root, child, consumer };
}

/** POST /reshaper at 1.30: VCPU's inventory moved from `root` to `child`, the consumer's allocations rewritten as `allocations`. */
function moveVcpuToChild(
  root: string,
  child: string,
  consumer: string,
  allocations: Record<string, { resources: Record<string, number> }>,
) {
  return t.call('POST', '/reshaper', {
    version: '1.30',
    body: {
      inventories: {
        [root]: { resource_provider_generation: 1, inventories: { DISK_GB: { total: 100 } } },
        [child]: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } },
      },
      allocations: { [consumer]: { allocations, project_id: project, user_id: user, consumer_generation: 1 } },
    },
  });
}

async function snapshot(ids: number[]) {
  const inv = await t.deps.store.db.query.inventories.findMany();
  return {
    inventories: inv.filter((i) => ids.includes(i.resourceProviderId)).map((i) => [i.resourceProviderId, i.resourceClassId, i.total]),
    usages: await Promise.all(ids.map((id) => usageOf(t.deps, id))),
    generations: await Promise.all(ids.map((id) => providerGeneration(t.deps, id))),
    consumers: (await t.deps.store.db.query.consumers.findMany()).map((c) => [c.uuid, c.generation]),
  };
}

describe('POST /reshaper', () => {
  it('moves VCPU inventory and its allocations from root to child atomically', async () => {
    const { root, child, consumer } = await tree();
    const res = await moveVcpuToChild(root.uuid, child.uuid, consumer, {
      [root.uuid]: { resources: { DISK_GB: 10 } },
      [child.uuid]: { resources: { VCPU: 4 } },
    });
    expect(res.status).toBe(204);
    expect(await usageOf(t.deps, root.id)).toEqual({ DISK_GB: 10 });
    expect(await usageOf(t.deps, child.id)).toEqual({ VCPU: 4 });
    // interim inventory, allocations, final inventory: three bumps each, as upstream.
    expect(await providerGeneration(t.deps, root.id)).toBe(4);
    expect(await providerGeneration(t.deps, child.id)).toBe(3);
    const got = (await (await t.call('GET', `/allocations/${consumer}`)).json()) as { consumer_generation: number };
    expect(got.consumer_generation).toBe(2);
  });

  it('rolls everything back when the final inventory would strand allocations', async () => {
    const { root, child, consumer } = await tree();
    const before = await snapshot([root.id, child.id]);
    // VCPU disappears from the root although the consumer keeps VCPU there.
    const res = await moveVcpuToChild(root.uuid, child.uuid, consumer, { [root.uuid]: { resources: { VCPU: 4, DISK_GB: 10 } } });
    expect(res.status).toBe(409);
    expect(await errorOf(res)).toMatchObject({ code: 'placement.inventory.inuse' });
    expect(await snapshot([root.id, child.id])).toEqual(before);
  });

  it('checks generations, providers, classes and policy before writing', async () => {
    const { root } = await tree();
    const body = (uuid: string, generation: number, rc = 'VCPU') => ({
      inventories: { [uuid]: { resource_provider_generation: generation, inventories: { [rc]: { total: 8 } } } },
      allocations: {},
    });
    const stale = await t.call('POST', '/reshaper', { version: '1.30', body: body(root.uuid, 0) });
    expect(await errorOf(stale)).toMatchObject({
      status: 409,
      code: 'placement.concurrent_update',
      detail: expect.stringContaining('actual: 1, given: 0'),
    });
    const missing = await t.call('POST', '/reshaper', { version: '1.30', body: body(crypto.randomUUID(), 0) });
    expect(await errorOf(missing)).toMatchObject({ status: 400, code: 'placement.resource_provider.not_found' });
    const badClass = await t.call('POST', '/reshaper', { version: '1.30', body: body(root.uuid, 1, 'DISK_OF_STEEL') });
    expect(await errorOf(badClass)).toMatchObject({ status: 400, detail: expect.stringContaining('No such resource class DISK_OF_STEEL') });
    expect((await t.call('POST', '/reshaper', { version: '1.29', body: body(root.uuid, 1) })).status).toBe(404);
    const asUser = await t.call('POST', '/reshaper', { version: '1.30', body: body(root.uuid, 1), headers: { 'x-auth-token': 'user' } });
    expect(asUser.status).toBe(403);
    const typed = await t.call('POST', '/reshaper', {
      version: '1.36',
      body: {
        ...body(root.uuid, 1),
        allocations: {
          [crypto.randomUUID()]: { allocations: {}, project_id: project, user_id: user, consumer_generation: null, consumer_type: 'X' },
        },
      },
    });
    expect((await errorOf(typed)).detail).toContain("'consumer_type' was unexpected");
    expect(await providerGeneration(t.deps, root.id)).toBe(1);
  });
});
