import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { providerGeneration, seedProvider, usageOf } from '../helpers/placement-seed.js';
import { PROJECT as project, USER as user } from '../helpers/claims.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

const uuid = () => crypto.randomUUID();

describe('PUT /allocations/{consumer}', () => {
  it('claims, replaces and reports allocations with consumer and provider generations', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 }, DISK_GB: { total: 100, maxUnit: 50 } });
    const consumer = uuid();
    const put = await t.call('PUT', `/allocations/${consumer}`, {
      body: {
        allocations: { [rp.uuid]: { resources: { VCPU: 2, DISK_GB: 10 } } },
        project_id: project,
        user_id: user,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(put.status).toBe(204);
    expect(await providerGeneration(t.deps, rp.id)).toBe(1);

    const got = await t.call('GET', `/allocations/${consumer}`);
    expect(got.status).toBe(200);
    expect(got.headers.get('last-modified')).toMatch(/GMT$/);
    expect(await got.json()).toEqual({
      allocations: { [rp.uuid]: { generation: 1, resources: { VCPU: 2, DISK_GB: 10 } } },
      project_id: project,
      user_id: user,
      consumer_generation: 1,
      consumer_type: 'INSTANCE',
    });

    // Replacing counts the consumer's own old allocation out of the usage.
    const again = await t.call('PUT', `/allocations/${consumer}`, {
      body: {
        allocations: { [rp.uuid]: { resources: { VCPU: 8 } } },
        project_id: project,
        user_id: user,
        consumer_generation: 1,
        consumer_type: 'INSTANCE',
      },
    });
    expect(again.status).toBe(204);
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 8 });

    const byProvider = await t.call('GET', `/resource_providers/${rp.uuid}/allocations`);
    expect(await byProvider.json()).toEqual({
      allocations: { [consumer]: { resources: { VCPU: 8 }, consumer_generation: 2 } },
      resource_provider_generation: 2,
    });
  });

  it('refuses a stale or unexpected consumer generation with 409 concurrent_update', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const consumer = uuid();
    const body = (generation: number | null) => ({
      allocations: { [rp.uuid]: { resources: { VCPU: 1 } } },
      project_id: project,
      user_id: user,
      consumer_generation: generation,
    });
    const fresh = await t.call('PUT', `/allocations/${consumer}`, { body: body(3), version: '1.28' });
    expect(fresh.status).toBe(409);
    expect(await errorOf(fresh)).toMatchObject({
      code: 'placement.concurrent_update',
      detail: expect.stringContaining('expected null but got 3'),
    });
    expect((await t.call('PUT', `/allocations/${consumer}`, { body: body(null), version: '1.28' })).status).toBe(204);
    const stale = await t.call('PUT', `/allocations/${consumer}`, { body: body(0), version: '1.28' });
    expect(await errorOf(stale)).toMatchObject({ status: 409, detail: expect.stringContaining('expected 1 but got 0') });
    expect(await providerGeneration(t.deps, rp.id)).toBe(1);
  });

  it('words capacity, constraint and inventory failures as placement and writes nothing', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 4, reserved: 1 }, DISK_GB: { total: 100, stepSize: 10, maxUnit: 100 } });
    const put = (resources: Record<string, number>) =>
      t.call('PUT', `/allocations/${uuid()}`, {
        body: { allocations: { [rp.uuid]: { resources } }, project_id: project, user_id: user },
        version: '1.27',
      });
    const over = await put({ VCPU: 4 });
    expect(over.status).toBe(409);
    expect((await errorOf(over)).detail).toContain(
      `Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider '${rp.uuid}'. The requested amount would exceed the capacity.`,
    );
    expect((await errorOf(await put({ DISK_GB: 15 }))).detail).toContain('would violate inventory constraints');
    expect((await errorOf(await put({ MEMORY_MB: 1 }))).detail).toContain(
      `Inventory for 'MEMORY_MB' on resource provider '${rp.uuid}' invalid.`,
    );
    const unknown = await put({ CUSTOM_NOPE: 1 });
    expect(unknown.status).toBe(400);
    expect((await errorOf(unknown)).detail).toContain('No such resource class CUSTOM_NOPE');
    const missing = await t.call('PUT', `/allocations/${uuid()}`, {
      body: { allocations: { [uuid()]: { resources: { VCPU: 1 } } }, project_id: project, user_id: user },
      version: '1.27',
    });
    expect(missing.status).toBe(400);
    expect((await errorOf(missing)).detail).toContain('that does not exist');
    expect(await usageOf(t.deps, rp.id)).toEqual({});
    expect(await providerGeneration(t.deps, rp.id)).toBe(0);
  });

  it('validates bodies per microversion, in jsonschema wording', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 4 } });
    const c = uuid();
    const zero = await t.call('PUT', `/allocations/${c}`, {
      version: '1.0',
      body: { allocations: [{ resource_provider: { uuid: rp.uuid }, resources: { VCPU: 0 } }] },
    });
    expect((await errorOf(zero)).detail).toContain(
      "JSON does not validate: 0 is less than the minimum of 1\n\nFailed validating 'minimum'",
    );
    const empty = await t.call('PUT', `/allocations/${c}`, { version: '1.0', body: { allocations: [] } });
    expect((await errorOf(empty)).detail).toContain("Failed validating 'minItems'");
    const noUser = await t.call('PUT', `/allocations/${c}`, {
      version: '1.8',
      body: { allocations: [{ resource_provider: { uuid: rp.uuid }, resources: { VCPU: 1 } }], project_id: project },
    });
    expect((await errorOf(noUser)).detail).toContain("'user_id' is a required property\n\nFailed validating 'required' in schema");
    const badKey = await t.call('PUT', `/allocations/${c}`, {
      version: '1.12',
      body: { allocations: { nope: { resources: { VCPU: 1 } } }, project_id: project, user_id: user },
    });
    expect((await errorOf(badKey)).detail).toContain("'nope' does not match any of the regexes");
    const emptyDict = await t.call('PUT', `/allocations/${c}`, {
      version: '1.12',
      body: { allocations: {}, project_id: project, user_id: user },
    });
    expect((await errorOf(emptyDict)).detail).toContain('does not have enough properties');
    const badType = await t.call('PUT', `/allocations/${c}`, {
      body: { allocations: {}, project_id: project, user_id: user, consumer_generation: null, consumer_type: 'instance' },
    });
    expect((await errorOf(badType)).detail).toContain("'instance' does not match '^[A-Z0-9_]+$'");
    const withMappings = (version: string, mappings: unknown) =>
      t.call('PUT', `/allocations/${uuid()}`, {
        version,
        body: {
          allocations: { [rp.uuid]: { resources: { VCPU: 1 } } },
          mappings,
          project_id: project,
          user_id: user,
          consumer_generation: null,
        },
      });
    expect((await withMappings('1.34', { '': [rp.uuid] })).status).toBe(204);
    expect((await errorOf(await withMappings('1.33', { '': [rp.uuid] }))).detail).toContain("'mappings' was unexpected");
    expect((await errorOf(await withMappings('1.34', { alpha: 'beta' }))).detail).toContain(
      "JSON does not validate: 'beta' is not of type 'array'",
    );
    expect((await errorOf(await withMappings('1.34', {}))).detail).toContain('JSON does not validate: {} does not have enough properties');
    const malformed = await t.call('PUT', '/allocations/not-a-uuid', {
      version: '1.0',
      body: { allocations: [{ resource_provider: { uuid: rp.uuid }, resources: { VCPU: 1 } }] },
    });
    expect((await errorOf(malformed)).detail).toContain('Malformed consumer_uuid: not-a-uuid');
  });

  it('accepts a dashless consumer uuid and stores it dashed; empty allocations delete the consumer (1.28)', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 4 } });
    const consumer = uuid();
    const base = { project_id: project, user_id: user };
    expect(
      (
        await t.call('PUT', `/allocations/${consumer.replace(/-/g, '')}`, {
          version: '1.28',
          body: { ...base, allocations: { [rp.uuid]: { resources: { VCPU: 1 } } }, consumer_generation: null },
        })
      ).status,
    ).toBe(204);
    expect(
      ((await (await t.call('GET', `/allocations/${consumer}`, { version: '1.28' })).json()) as { consumer_generation: number })
        .consumer_generation,
    ).toBe(1);
    expect(
      (await t.call('PUT', `/allocations/${consumer}`, { version: '1.28', body: { ...base, allocations: {}, consumer_generation: 1 } }))
        .status,
    ).toBe(204);
    expect(await (await t.call('GET', `/allocations/${consumer}`, { version: '1.28' })).json()).toEqual({ allocations: {} });
    // The consumer is gone, so "no consumer yet" (null) is right again.
    expect(
      (
        await t.call('PUT', `/allocations/${consumer}`, {
          version: '1.28',
          body: { ...base, allocations: { [rp.uuid]: { resources: { VCPU: 1 } } }, consumer_generation: null },
        })
      ).status,
    ).toBe(204);
  });

  it('uses the incomplete-consumer placeholders before 1.8 and hides owner fields before 1.12', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 4 } });
    const consumer = uuid();
    expect(
      (
        await t.call('PUT', `/allocations/${consumer}`, {
          version: '1.0',
          body: { allocations: [{ resource_provider: { uuid: rp.uuid }, resources: { VCPU: 1 } }] },
        })
      ).status,
    ).toBe(204);
    expect(await (await t.call('GET', `/allocations/${consumer}`, { version: '1.11' })).json()).toEqual({
      allocations: { [rp.uuid]: { generation: 1, resources: { VCPU: 1 } } },
    });
    const latest = (await (await t.call('GET', `/allocations/${consumer}`)).json()) as Record<string, unknown>;
    expect(latest).toMatchObject({
      project_id: '00000000-0000-0000-0000-000000000000',
      user_id: '00000000-0000-0000-0000-000000000000',
      consumer_type: 'unknown',
    });
  });
});

describe('DELETE /allocations/{consumer}', () => {
  it('removes everything without bumping providers, then 404s', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 4 } });
    const consumer = uuid();
    await t.call('PUT', `/allocations/${consumer}`, {
      version: '1.0',
      body: { allocations: [{ resource_provider: { uuid: rp.uuid }, resources: { VCPU: 3 } }] },
    });
    expect((await t.call('DELETE', `/allocations/${consumer}`)).status).toBe(204);
    expect(await usageOf(t.deps, rp.id)).toEqual({});
    expect(await providerGeneration(t.deps, rp.id)).toBe(1);
    const again = await t.call('DELETE', `/allocations/${consumer}`);
    expect(again.status).toBe(404);
    expect((await errorOf(again)).detail).toContain(`No allocations for consumer '${consumer}'`);
  });
});

describe('POST /allocations', () => {
  it('moves allocations between consumers atomically (migration pattern)', async () => {
    const source = await seedProvider(t.deps, { VCPU: { total: 4 } });
    const instance = uuid();
    const migration = uuid();
    await t.call('PUT', `/allocations/${instance}`, {
      version: '1.28',
      body: { allocations: { [source.uuid]: { resources: { VCPU: 4 } } }, project_id: project, user_id: user, consumer_generation: null },
    });
    // Move the instance's claim to the migration consumer: capacity allows it only because both happen together.
    const moved = await t.call('POST', '/allocations', {
      version: '1.28',
      body: {
        [instance]: { allocations: {}, project_id: project, user_id: user, consumer_generation: 1 },
        [migration]: {
          allocations: { [source.uuid]: { resources: { VCPU: 4 } } },
          project_id: project,
          user_id: user,
          consumer_generation: null,
        },
      },
    });
    expect(moved.status).toBe(204);
    expect(await (await t.call('GET', `/allocations/${instance}`)).json()).toEqual({ allocations: {} });
    expect(
      ((await (await t.call('GET', `/allocations/${migration}`)).json()) as { allocations: Record<string, unknown> }).allocations,
    ).toHaveProperty(source.uuid);
  });

  it('leaves the database exactly as before when a later consumer fails', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 4 } });
    const first = uuid();
    const res = await t.call('POST', '/allocations', {
      version: '1.13',
      body: {
        [first]: { allocations: { [rp.uuid]: { resources: { VCPU: 2 } } }, project_id: project, user_id: user },
        [uuid()]: { allocations: { [rp.uuid]: { resources: { VCPU: 3 } } }, project_id: project, user_id: user },
      },
    });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).detail).toContain('The requested amount would exceed the capacity');
    expect(await usageOf(t.deps, rp.id)).toEqual({});
    expect(await providerGeneration(t.deps, rp.id)).toBe(0);
    expect(await (await t.call('GET', `/allocations/${first}`)).json()).toEqual({ allocations: {} });
  });

  it('is 404 before 1.13 and GET /allocations is 405 with Allow: POST', async () => {
    expect((await t.call('POST', '/allocations', { version: '1.12', body: {} })).status).toBe(404);
    const get = await t.call('GET', '/allocations');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });
});

describe('GET /resource_providers/{uuid}/allocations', () => {
  it('404s for an unknown provider and omits cache headers before 1.15', async () => {
    const res = await t.call('GET', `/resource_providers/${uuid()}/allocations`);
    expect(res.status).toBe(404);
    const rp = await seedProvider(t.deps, {});
    const old = await t.call('GET', `/resource_providers/${rp.uuid}/allocations`, { version: '1.14' });
    expect(old.headers.get('last-modified')).toBeNull();
    expect(await old.json()).toEqual({ allocations: {}, resource_provider_generation: 0 });
  });
});
