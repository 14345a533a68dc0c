import { randomUUID } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allocations, resourceProviders } from '../../src/db/schema/index.js';
import { findProvider, resourceClassIdsByName } from '../../src/placement/repo/lookups.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

/** A bare root provider written straight to the table, so these tests need no provider endpoint. */
async function newProvider(): Promise<{ id: number; uuid: string }> {
  const uuid = randomUUID();
  return t.deps.store.writeTx(async (tx) => {
    const [row] = await tx
      .insert(resourceProviders)
      .values({ uuid, name: `rp-${uuid}` })
      .returning();
    await tx.update(resourceProviders).set({ rootProviderId: row!.id }).where(eq(resourceProviders.id, row!.id));
    return { id: row!.id, uuid };
  });
}

async function allocate(providerId: number, rc: string, used: number): Promise<void> {
  const ids = await resourceClassIdsByName(t.deps.store.db, [rc]);
  await t.deps.store.writeTx((tx) =>
    tx.insert(allocations).values({ resourceProviderId: providerId, consumerId: randomUUID(), resourceClassId: ids.get(rc)!, used }),
  );
}

async function json(res: Response): Promise<Record<string, unknown> & { errors?: { code?: string; detail: string }[] }> {
  return (await res.json()) as Record<string, unknown> & { errors?: { code?: string; detail: string }[] };
}

const invPath = (uuid: string, rc?: string) => `/resource_providers/${uuid}/inventories${rc ? `/${rc}` : ''}`;

describe('one inventory record', () => {
  it('creates with upstream defaults, bumps the generation and points location at the record', async () => {
    const rp = await newProvider();
    const res = await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`http://localhost${invPath(rp.uuid, 'VCPU')}`);
    expect(await res.json()).toEqual({
      resource_provider_generation: 1,
      total: 8,
      reserved: 0,
      min_unit: 1,
      max_unit: 2147483647,
      step_size: 1,
      allocation_ratio: 1,
    });
    const shown = await t.call('GET', invPath(rp.uuid, 'VCPU'), { version: '1.15' });
    expect(shown.headers.get('last-modified')).toMatch(/GMT$/);
    expect(await json(shown)).toMatchObject({ resource_provider_generation: 1, total: 8 });
  });

  it('refuses a class the provider already has (409) and a class that does not exist (400)', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'DISK_GB', total: 10 } });
    const dup = await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'DISK_GB', total: 10 } });
    expect(dup.status).toBe(409);
    const unknown = await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'CUSTOM_NOPE', total: 10 } });
    expect(unknown.status).toBe(400);
    expect((await json(unknown)).errors![0]!.detail).toContain('No such resource class CUSTOM_NOPE');
    const list = await json(await t.call('GET', invPath(rp.uuid)));
    expect(list.resource_provider_generation).toBe(1);
  });

  it.each([
    ['malformed JSON', '{"total": }', 'Malformed JSON'],
    [
      'an unknown field',
      { resource_class: 'VCPU', total: 1, colour: 'red' },
      "Additional properties are not allowed ('colour' was unexpected)",
    ],
    ['a zero total', { resource_class: 'VCPU', total: 0 }, "Failed validating 'minimum' in schema['properties']['total']"],
    ['a total beyond the integer column', { resource_class: 'VCPU', total: 2147483648 }, "Failed validating 'maximum'"],
    ['a string total', { resource_class: 'VCPU', total: '8' }, "'8' is not of type"],
    ['a lower-case class', { resource_class: 'vcpu', total: 8 }, "does not match '^[A-Z0-9_]+$'"],
    ['a huge allocation ratio', { resource_class: 'VCPU', total: 8, allocation_ratio: 3.5e39 }, "Failed validating 'maximum'"],
  ])('answers 400 for %s and writes nothing', async (_what, body, message) => {
    const rp = await newProvider();
    const res = await t.call('POST', invPath(rp.uuid), { body });
    expect(res.status).toBe(400);
    expect((await json(res)).errors![0]!.detail).toContain(message);
    expect((await findProvider(t.deps.store.db, rp.uuid))!.generation).toBe(0);
    expect((await json(await t.call('GET', invPath(rp.uuid)))).inventories).toEqual({});
  });

  it('answers 415 without a JSON content type and 404 for a missing provider', async () => {
    const rp = await newProvider();
    const res = await t.call('POST', invPath(rp.uuid), { body: 'total=1', headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(415);
    const missing = await t.call('GET', invPath(randomUUID()));
    expect(missing.status).toBe(404);
  });

  it('updates with the current generation only', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    const stale = await t.call('PUT', invPath(rp.uuid, 'VCPU'), { body: { resource_provider_generation: 0, total: 16 } });
    expect(stale.status).toBe(409);
    expect((await json(stale)).errors![0]!.code).toBe('placement.concurrent_update');
    const ok = await t.call('PUT', invPath(rp.uuid, 'VCPU'), { body: { resource_provider_generation: 1, total: 16 } });
    expect(ok.status).toBe(200);
    expect(await json(ok)).toMatchObject({ resource_provider_generation: 2, total: 16 });
    const absent = await t.call('PUT', invPath(rp.uuid, 'DISK_GB'), { body: { resource_provider_generation: 2, total: 1 } });
    expect(absent.status).toBe(400);
    expect((await json(absent)).errors![0]!.detail).toContain('No inventory record with resource class');
  });

  it('lets reserved equal total only from 1.26', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    const old = await t.call('PUT', invPath(rp.uuid, 'VCPU'), {
      version: '1.25',
      body: { resource_provider_generation: 1, total: 8, reserved: 8 },
    });
    expect(old.status).toBe(400);
    expect((await json(old)).errors![0]!.detail).toContain('greater than or equal to total');
    const now = await t.call('PUT', invPath(rp.uuid, 'VCPU'), {
      version: '1.26',
      body: { resource_provider_generation: 1, total: 8, reserved: 8 },
    });
    expect(now.status).toBe(200);
    const over = await t.call('PUT', invPath(rp.uuid, 'VCPU'), {
      version: '1.26',
      body: { resource_provider_generation: 2, total: 8, reserved: 9 },
    });
    expect(over.status).toBe(400);
    expect((await json(over)).errors![0]!.detail).toContain('The reserved value is greater than total');
  });

  it('refuses to delete a class with allocations (409 inuse), then deletes it once free', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    await allocate(rp.id, 'VCPU', 2);
    const busy = await t.call('DELETE', invPath(rp.uuid, 'VCPU'));
    expect(busy.status).toBe(409);
    expect((await json(busy)).errors![0]!.code).toBe('placement.inventory.inuse');
    await t.deps.store.writeTx((tx) => tx.delete(allocations).where(eq(allocations.resourceProviderId, rp.id)));
    const done = await t.call('DELETE', invPath(rp.uuid, 'VCPU'));
    expect(done.status).toBe(204);
    expect(done.headers.get('content-type')).toBeNull();
    const again = await t.call('DELETE', invPath(rp.uuid, 'VCPU'));
    expect(again.status).toBe(404);
  });
});

describe('the whole inventory', () => {
  it('replaces every class at once and drops the ones left out', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    const res = await t.call('PUT', invPath(rp.uuid), {
      body: { resource_provider_generation: 1, inventories: { DISK_GB: { total: 100, reserved: 10 }, MEMORY_MB: { total: 4096 } } },
    });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body.resource_provider_generation).toBe(2);
    expect(Object.keys(body.inventories as object).sort()).toEqual(['DISK_GB', 'MEMORY_MB']);
    const listed = await json(await t.call('GET', invPath(rp.uuid)));
    expect(Object.keys(listed.inventories as object).sort()).toEqual(['DISK_GB', 'MEMORY_MB']);
  });

  it('leaves the inventory untouched when one class is unknown', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    const res = await t.call('PUT', invPath(rp.uuid), {
      body: { resource_provider_generation: 1, inventories: { DISK_GB: { total: 100 }, CUSTOM_UNKNOWN: { total: 1 } } },
    });
    expect(res.status).toBe(400);
    expect((await json(res)).errors![0]!.detail).toContain('Unknown resource class in inventory');
    const listed = await json(await t.call('GET', invPath(rp.uuid)));
    expect(listed).toMatchObject({ resource_provider_generation: 1, inventories: { VCPU: { total: 8 } } });
    expect(Object.keys(listed.inventories as object)).toEqual(['VCPU']);
  });

  it('refuses to drop a class in use but allows shrinking below usage, as upstream does', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    await allocate(rp.id, 'VCPU', 6);
    const drop = await t.call('PUT', invPath(rp.uuid), {
      body: { resource_provider_generation: 1, inventories: { DISK_GB: { total: 1 } } },
    });
    expect(drop.status).toBe(409);
    const dropBody = await json(drop);
    expect(dropBody.errors![0]!.code).toBe('placement.inventory.inuse');
    expect(dropBody.errors![0]!.detail).toContain(`Inventory for 'VCPU' on resource provider '${rp.uuid}' in use`);
    const shrink = await t.call('PUT', invPath(rp.uuid), {
      body: { resource_provider_generation: 1, inventories: { VCPU: { total: 4 } } },
    });
    expect(shrink.status).toBe(200);
    const deleteAll = await t.call('DELETE', invPath(rp.uuid));
    expect(deleteAll.status).toBe(409);
  });

  it('names every class in use, in class-id order, when deleting all inventory', async () => {
    const rp = await newProvider();
    await t.call('PUT', invPath(rp.uuid), {
      body: { resource_provider_generation: 0, inventories: { DISK_GB: { total: 10 }, VCPU: { total: 8 } } },
    });
    await allocate(rp.id, 'DISK_GB', 1);
    await allocate(rp.id, 'VCPU', 1);
    const res = await t.call('DELETE', invPath(rp.uuid));
    expect(res.status).toBe(409);
    expect((await json(res)).errors![0]!.detail).toContain(`Inventory for 'VCPU, DISK_GB' on resource provider '${rp.uuid}' in use`);
  });

  it('rejects keys that cannot be class names and stale generations', async () => {
    const rp = await newProvider();
    const badKey = await t.call('PUT', invPath(rp.uuid), {
      body: { resource_provider_generation: 0, inventories: { 'disk gb': { total: 1 } } },
    });
    expect(badKey.status).toBe(400);
    const stale = await t.call('PUT', invPath(rp.uuid), { body: { resource_provider_generation: 7, inventories: {} } });
    expect(stale.status).toBe(409);
    const missingGen = await t.call('PUT', invPath(rp.uuid), { body: { inventories: {} } });
    expect(missingGen.status).toBe(400);
    expect((await json(missingGen)).errors![0]!.detail).toContain("'resource_provider_generation' is a required property");
  });

  it('lets exactly one of two concurrent writers with the same generation win', async () => {
    const rp = await newProvider();
    const put = (total: number) =>
      t.call('PUT', invPath(rp.uuid), { body: { resource_provider_generation: 0, inventories: { VCPU: { total } } } });
    const statuses = (await Promise.all([put(1), put(2)])).map((r) => r.status).sort();
    expect(statuses).toEqual([200, 409]);
    expect((await findProvider(t.deps.store.db, rp.uuid))!.generation).toBe(1);
  });

  it('deletes everything from 1.5 and answers 405 before', async () => {
    const rp = await newProvider();
    await t.call('POST', invPath(rp.uuid), { body: { resource_class: 'VCPU', total: 8 } });
    expect((await t.call('DELETE', invPath(rp.uuid), { version: '1.4' })).status).toBe(405);
    expect((await t.call('DELETE', invPath(rp.uuid), { version: '1.5' })).status).toBe(204);
    expect(await json(await t.call('GET', invPath(rp.uuid)))).toEqual({ resource_provider_generation: 2, inventories: {} });
  });
});
