import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocations, consumerTypes, consumers, inventories, projects, resourceProviders, users } from '../../src/db/schema/index.js';
import { resourceClassIdsByName } from '../../src/placement/repo/lookups.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const PROJECT = 'project-a';
const OTHER_PROJECT = 'project-b';
let t: TestApp;
let provider: { id: number; uuid: string };

/**
 * Fixture written straight to the tables: one provider with VCPU/DISK_GB/MEMORY_MB
 * inventory; project-a has an INSTANCE consumer, a MIGRATION consumer and an
 * untyped one (two users); project-b has one untyped consumer.
 */
beforeAll(async () => {
  t = await makeTestApp();
  const ids = await resourceClassIdsByName(t.deps.store.db, ['VCPU', 'DISK_GB', 'MEMORY_MB']);
  provider = await t.deps.store.writeTx(async (tx) => {
    const uuid = randomUUID();
    const [rp] = await tx.insert(resourceProviders).values({ uuid, name: 'usage-host', generation: 3 }).returning();
    for (const rc of ['VCPU', 'DISK_GB', 'MEMORY_MB']) {
      await tx.insert(inventories).values({ resourceProviderId: rp!.id, resourceClassId: ids.get(rc)!, total: 100, maxUnit: 100 });
    }
    const [pa, pb] = await tx
      .insert(projects)
      .values([{ externalId: PROJECT }, { externalId: OTHER_PROJECT }])
      .returning();
    const [u1, u2] = await tx
      .insert(users)
      .values([{ externalId: 'user-1' }, { externalId: 'user-2' }])
      .returning();
    const [instance, migration] = await tx
      .insert(consumerTypes)
      .values([{ name: 'INSTANCE' }, { name: 'MIGRATION' }])
      .returning();
    const consumer = async (projectId: number, userId: number, typeId: number | null, used: Record<string, number>) => {
      const uuid = randomUUID();
      await tx.insert(consumers).values({ uuid, projectId, userId, consumerTypeId: typeId });
      for (const [rc, amount] of Object.entries(used)) {
        await tx.insert(allocations).values({ resourceProviderId: rp!.id, consumerId: uuid, resourceClassId: ids.get(rc)!, used: amount });
      }
    };
    await consumer(pa!.id, u1!.id, instance!.id, { VCPU: 2, DISK_GB: 10 });
    await consumer(pa!.id, u1!.id, migration!.id, { VCPU: 1 });
    await consumer(pa!.id, u2!.id, null, { VCPU: 4, DISK_GB: 5 });
    await consumer(pb!.id, u2!.id, null, { VCPU: 8 });
    return { id: rp!.id, uuid };
  });
});
afterAll(() => t.close());

type Body = { usages?: Record<string, unknown>; resource_provider_generation?: number; errors?: { detail: string }[] };
const json = async (res: Response) => (await res.json()) as Body;

describe('provider usages', () => {
  it('sums allocations per class and lists inventoried classes with no usage as 0', async () => {
    const res = await t.call('GET', `/resource_providers/${provider.uuid}/usages`);
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ resource_provider_generation: 3, usages: { VCPU: 15, DISK_GB: 15, MEMORY_MB: 0 } });
  });

  it('sets cache headers from 1.15 only', async () => {
    const old = await t.call('GET', `/resource_providers/${provider.uuid}/usages`, { version: '1.14' });
    expect(old.headers.get('last-modified')).toBeNull();
    const current = await t.call('GET', `/resource_providers/${provider.uuid}/usages`, { version: '1.15' });
    expect(current.headers.get('cache-control')).toBe('no-cache');
  });

  it('answers 404 for an unknown provider', async () => {
    const res = await t.call('GET', `/resource_providers/${randomUUID()}/usages`);
    expect(res.status).toBe(404);
  });
});

describe('project usages', () => {
  it('totals by project, and by user too, before 1.38', async () => {
    expect(await json(await t.call('GET', `/usages?project_id=${PROJECT}`, { version: '1.9' }))).toEqual({
      usages: { VCPU: 7, DISK_GB: 15 },
    });
    expect(await json(await t.call('GET', `/usages?project_id=${PROJECT}&user_id=user-2`, { version: '1.37' }))).toEqual({
      usages: { VCPU: 4, DISK_GB: 5 },
    });
    expect(await json(await t.call('GET', '/usages?project_id=nobody', { version: '1.9' }))).toEqual({ usages: {} });
  });

  it('groups by consumer type from 1.38, with consumer counts', async () => {
    expect(await json(await t.call('GET', `/usages?project_id=${PROJECT}`))).toEqual({
      usages: {
        INSTANCE: { consumer_count: 1, VCPU: 2, DISK_GB: 10 },
        MIGRATION: { consumer_count: 1, VCPU: 1 },
        unknown: { consumer_count: 1, VCPU: 4, DISK_GB: 5 },
      },
    });
  });

  it.each([
    ['all', { all: { consumer_count: 3, VCPU: 7, DISK_GB: 15 } }],
    ['unknown', { unknown: { consumer_count: 1, VCPU: 4, DISK_GB: 5 } }],
    ['INSTANCE', { INSTANCE: { consumer_count: 1, VCPU: 2, DISK_GB: 10 } }],
    ['ALL', {}],
    ['PONY', {}],
  ])('narrows to consumer_type=%s', async (type, usages) => {
    expect(await json(await t.call('GET', `/usages?project_id=${PROJECT}&consumer_type=${type}`))).toEqual({ usages });
  });

  it.each([
    ['no project_id', '/usages', "'project_id' is a required property"],
    ['an empty project_id', '/usages?project_id=', "Failed validating 'minLength'"],
    ['a project_id over 255 characters', `/usages?project_id=${'p'.repeat(256)}`, "Failed validating 'maxLength'"],
    ['an unknown parameter', `/usages?project_id=${PROJECT}&colour=red`, 'Additional properties are not allowed'],
  ])('answers 400 for %s', async (_what, path, message) => {
    const res = await t.call('GET', path);
    expect(res.status).toBe(400);
    expect((await json(res)).errors![0]!.detail).toContain(message);
  });

  it('refuses consumer_type before 1.38 and the whole route before 1.9', async () => {
    expect((await t.call('GET', `/usages?project_id=${PROJECT}&consumer_type=all`, { version: '1.37' })).status).toBe(400);
    expect((await t.call('GET', `/usages?project_id=${PROJECT}`, { version: '1.8' })).status).toBe(404);
  });
});

describe('usages policy (secure defaults)', () => {
  let secure: TestApp;
  beforeAll(async () => {
    secure = await makeTestApp({ PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'true' });
  });
  afterAll(() => secure.close());

  const reader = (project: string) => ({ 'x-auth-token': 'user', 'x-roles': 'reader', 'x-project-id': project });

  it("lets a project reader see its own project's usage only", async () => {
    expect((await secure.call('GET', `/usages?project_id=${PROJECT}`, { headers: reader(PROJECT) })).status).toBe(200);
    expect((await secure.call('GET', `/usages?project_id=${PROJECT}`, { headers: reader(OTHER_PROJECT) })).status).toBe(403);
  });
});
