import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inventories, resourceProviders } from '../../src/db/schema/index.js';
import { findResourceClass } from '../../src/placement/repo/resource-classes.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

type Body = { resource_classes?: { name: string }[]; name?: string; links?: unknown; errors?: { code?: string; detail: string }[] };
const json = async (res: Response) => (await res.json()) as Body;

describe('listing and showing', () => {
  it('lists the 21 standard classes in id order, with self links', async () => {
    const body = await json(await t.call('GET', '/resource_classes'));
    expect(body.resource_classes).toHaveLength(21);
    expect(body.resource_classes![0]).toEqual({ name: 'VCPU', links: [{ rel: 'self', href: '/resource_classes/VCPU' }] });
  });

  it('does not exist below 1.2', async () => {
    expect((await t.call('GET', '/resource_classes', { version: '1.1' })).status).toBe(404);
    expect((await t.call('POST', '/resource_classes', { version: '1.1', body: { name: 'CUSTOM_X' } })).status).toBe(404);
  });

  it('answers 404 for an unknown class', async () => {
    const res = await t.call('GET', '/resource_classes/CUSTOM_MISSING');
    expect(res.status).toBe(404);
    expect((await json(res)).errors![0]!.detail).toContain('No such resource class CUSTOM_MISSING');
  });
});

describe('creating', () => {
  it('creates custom classes with ids from 10000 and refuses duplicates with duplicate_name', async () => {
    const res = await t.call('POST', '/resource_classes', { body: { name: 'CUSTOM_GOLD' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe('http://localhost/resource_classes/CUSTOM_GOLD');
    expect(res.headers.get('content-type')).toBeNull();
    expect((await findResourceClass(t.deps.store.db, 'CUSTOM_GOLD'))!.id).toBeGreaterThanOrEqual(10000);
    const dup = await t.call('POST', '/resource_classes', { body: { name: 'CUSTOM_GOLD' } });
    expect(dup.status).toBe(409);
    expect((await json(dup)).errors![0]!.code).toBe('placement.duplicate_name');
  });

  it.each([
    ['a non-custom name', { name: 'GOLD' }, "Failed validating 'pattern'"],
    ['illegal characters', { name: 'CUSTOM_g&ld' }, 'JSON does not validate'],
    ['a name over 255 characters', { name: `CUSTOM_${'A'.repeat(249)}` }, "Failed validating 'maxLength'"],
    ['an extra field', { name: 'CUSTOM_OK', colour: 'red' }, 'Additional properties are not allowed'],
    ['a missing name', {}, "'name' is a required property"],
    ['a unicode name', { name: 'CUSTOM_ÜBER' }, "Failed validating 'pattern'"],
  ])('answers 400 for %s', async (_what, body, message) => {
    const res = await t.call('POST', '/resource_classes', { body });
    expect(res.status).toBe(400);
    expect((await json(res)).errors![0]!.detail).toContain(message);
  });

  it('answers 415 for a non-JSON body', async () => {
    const res = await t.call('POST', '/resource_classes', { body: 'name=CUSTOM_X', headers: { 'content-type': 'text/plain' } });
    expect(res.status).toBe(415);
  });
});

describe('PUT by microversion', () => {
  it('creates (201) then confirms (204) from 1.7, with no body', async () => {
    const first = await t.call('PUT', '/resource_classes/CUSTOM_COW', { version: '1.7' });
    expect(first.status).toBe(201);
    expect(first.headers.get('location')).toMatch(/\/resource_classes\/CUSTOM_COW$/);
    const again = await t.call('PUT', '/resource_classes/CUSTOM_COW', { version: '1.7' });
    expect(again.status).toBe(204);
    const standard = await t.call('PUT', '/resource_classes/VCPU', { version: '1.7' });
    expect(standard.status).toBe(400);
  });

  it('renames a custom class up to 1.6, but never a standard one or onto a taken name', async () => {
    await t.call('POST', '/resource_classes', { body: { name: 'CUSTOM_OLD' } });
    await t.call('POST', '/resource_classes', { body: { name: 'CUSTOM_TAKEN' } });
    const renamed = await t.call('PUT', '/resource_classes/CUSTOM_OLD', { version: '1.6', body: { name: 'CUSTOM_NEW' } });
    expect(renamed.status).toBe(200);
    expect(await json(renamed)).toEqual({ name: 'CUSTOM_NEW', links: [{ rel: 'self', href: '/resource_classes/CUSTOM_NEW' }] });
    const taken = await t.call('PUT', '/resource_classes/CUSTOM_NEW', { version: '1.6', body: { name: 'CUSTOM_TAKEN' } });
    expect(taken.status).toBe(409);
    const standard = await t.call('PUT', '/resource_classes/VCPU', { version: '1.6', body: { name: 'CUSTOM_VCPU' } });
    expect(standard.status).toBe(400);
    expect((await json(standard)).errors![0]!.detail).toContain('Cannot update standard resource class VCPU');
    const bodiless = await t.call('PUT', '/resource_classes/CUSTOM_NEW', {
      version: '1.6',
      headers: { 'content-type': 'application/json' },
    });
    expect(bodiless.status).toBe(400);
    expect((await json(bodiless)).errors![0]!.detail).toContain('Malformed JSON');
  });
});

describe('deleting', () => {
  it('refuses standard classes (400) and classes in use by inventory (409)', async () => {
    expect((await t.call('DELETE', '/resource_classes/VCPU')).status).toBe(400);
    await t.call('POST', '/resource_classes', { body: { name: 'CUSTOM_USED' } });
    const rc = (await findResourceClass(t.deps.store.db, 'CUSTOM_USED'))!;
    await t.deps.store.writeTx(async (tx) => {
      const [rp] = await tx.insert(resourceProviders).values({ uuid: randomUUID(), name: 'rc-user' }).returning();
      await tx.insert(inventories).values({ resourceProviderId: rp!.id, resourceClassId: rc.id, total: 1, maxUnit: 1 });
    });
    const busy = await t.call('DELETE', '/resource_classes/CUSTOM_USED');
    expect(busy.status).toBe(409);
    expect((await json(busy)).errors![0]!.detail).toContain('Class is in use in inventory');
    expect(await findResourceClass(t.deps.store.db, 'CUSTOM_USED')).toBeDefined();
  });

  it('deletes a free custom class, then answers 404', async () => {
    await t.call('POST', '/resource_classes', { body: { name: 'CUSTOM_FREE' } });
    expect((await t.call('DELETE', '/resource_classes/CUSTOM_FREE')).status).toBe(204);
    expect((await t.call('DELETE', '/resource_classes/CUSTOM_FREE')).status).toBe(404);
  });

  it('is admin-only under the legacy policy', async () => {
    const res = await t.call('GET', '/resource_classes', { headers: { 'x-auth-token': 'user', 'x-roles': 'member,reader' } });
    expect(res.status).toBe(403);
  });
});
