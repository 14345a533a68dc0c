// Over-capacity relief (upstream bug 2104040): after an operator shrinks an
// inventory under existing usage (lower total, higher reserved, lower
// allocation_ratio), a claim that does not increase usage of the
// over-capacity (provider, class) is accepted; any increase there is still
// the usual 409. Same rule for PUT and POST /allocations and the reshaper.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider, type InventorySpec } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
beforeAll(async () => {
  app = await makeTestApp();
});
afterAll(() => app.close());

const project = crypto.randomUUID();
const user = crypto.randomUUID();
type Resources = Record<string, Record<string, number>>;

const allocationsBody = (resources: Resources, generation: number | null) => ({
  allocations: Object.fromEntries(Object.entries(resources).map(([rp, r]) => [rp, { resources: r }])),
  project_id: project,
  user_id: user,
  consumer_generation: generation,
  consumer_type: 'INSTANCE',
});

async function put(consumer: string, resources: Resources, generation: number | null): Promise<Response> {
  return app.call('PUT', `/allocations/${consumer}`, { body: allocationsBody(resources, generation) });
}

async function generationOf(path: string): Promise<number> {
  const body = (await (await app.call('GET', path)).json()) as { consumer_generation?: number; resource_provider_generation?: number };
  return body.consumer_generation ?? body.resource_provider_generation!;
}

async function usages(rp: string): Promise<Record<string, number>> {
  return ((await (await app.call('GET', `/resource_providers/${rp}/usages`)).json()) as { usages: Record<string, number> }).usages;
}

/** The operator's change: the provider's whole inventory replaced under its usage. */
async function shrink(rp: string, inventories: InventorySpec): Promise<void> {
  const res = await app.call('PUT', `/resource_providers/${rp}/inventories`, {
    body: { resource_provider_generation: await generationOf(`/resource_providers/${rp}/inventories`), inventories },
  });
  expect(res.status).toBe(200);
}

async function expectCapacity409(res: Response, rp: string): Promise<void> {
  expect(res.status).toBe(409);
  expect((await errorOf(res)).detail).toContain(
    `Unable to create allocation for 'VCPU' on resource provider '${rp}'. The requested amount would exceed the capacity.`,
  );
}

describe('PUT /allocations/{consumer} after total was lowered', () => {
  it('accepts rewriting the same amounts and shrinking, refuses any increase', async () => {
    const rp = await provider(app, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } } });
    const consumer = crypto.randomUUID();
    expect((await put(consumer, { [rp]: { VCPU: 6, MEMORY_MB: 256 } }, null)).status).toBe(204);
    await shrink(rp, { VCPU: { total: 4 }, MEMORY_MB: { total: 1024 } });

    // Same VCPU, more memory (which has room): VCPU usage does not grow.
    expect((await put(consumer, { [rp]: { VCPU: 6, MEMORY_MB: 512 } }, 1)).status).toBe(204);
    expect((await put(consumer, { [rp]: { VCPU: 5, MEMORY_MB: 512 } }, 2)).status).toBe(204);
    expect(await usages(rp)).toEqual({ VCPU: 5, MEMORY_MB: 512 });

    // Back up to 6 is an increase while still over capacity.
    await expectCapacity409(await put(consumer, { [rp]: { VCPU: 6, MEMORY_MB: 512 } }, 3), rp);
    // So is any claim by another consumer.
    await expectCapacity409(await put(crypto.randomUUID(), { [rp]: { VCPU: 1 } }, null), rp);
    expect(await usages(rp)).toEqual({ VCPU: 5, MEMORY_MB: 512 });
  });

  it('still applies min_unit, max_unit and step_size to each allocation', async () => {
    const rp = await provider(app, { inventory: { VCPU: { total: 8 } } });
    const consumer = crypto.randomUUID();
    expect((await put(consumer, { [rp]: { VCPU: 6 } }, null)).status).toBe(204);
    await shrink(rp, { VCPU: { total: 4, step_size: 4 } });
    const res = await put(consumer, { [rp]: { VCPU: 6 } }, 1);
    expect(res.status).toBe(409);
    expect((await errorOf(res)).detail).toContain('The requested amount would violate inventory constraints.');
  });
});

describe('racing claims on an over-capacity provider', () => {
  it('let the ones that do not grow usage through and refuse every increase, whatever the order', async () => {
    const rp = await provider(app, { inventory: { VCPU: { total: 8 } } });
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    expect((await put(a, { [rp]: { VCPU: 3 } }, null)).status).toBe(204);
    expect((await put(b, { [rp]: { VCPU: 3 } }, null)).status).toBe(204);
    await shrink(rp, { VCPU: { total: 4 } });
    const outcomes = await Promise.all([
      put(a, { [rp]: { VCPU: 3 } }, 1),
      put(b, { [rp]: { VCPU: 2 } }, 1),
      put(crypto.randomUUID(), { [rp]: { VCPU: 1 } }, null),
      put(crypto.randomUUID(), { [rp]: { VCPU: 1 } }, null),
    ]);
    expect(outcomes.map((r) => r.status)).toEqual([204, 204, 409, 409]);
    expect(await usages(rp)).toEqual({ VCPU: 5 });
  });
});

describe('POST /allocations after allocation_ratio was lowered', () => {
  it('accepts moving a consumer off an over-committed provider, refuses adding to it', async () => {
    const source = await provider(app, { inventory: { VCPU: { total: 8, allocation_ratio: 2 } } });
    const target = await provider(app, { inventory: { VCPU: { total: 8 } } });
    const instance = crypto.randomUUID();
    const migration = crypto.randomUUID();
    expect((await put(instance, { [source]: { VCPU: 12 } }, null)).status).toBe(204);
    await shrink(source, { VCPU: { total: 8, allocation_ratio: 1 } });

    // A migration in Nova's shape: the instance's claim moves to the target,
    // the migration record takes over the same amount on the over-committed source.
    const refused = await app.call('POST', '/allocations', {
      body: { [instance]: allocationsBody({ [target]: { VCPU: 4 } }, 1), [migration]: allocationsBody({ [source]: { VCPU: 13 } }, null) },
    });
    await expectCapacity409(refused, source);
    const moved = await app.call('POST', '/allocations', {
      body: { [instance]: allocationsBody({ [target]: { VCPU: 4 } }, 1), [migration]: allocationsBody({ [source]: { VCPU: 12 } }, null) },
    });
    expect(moved.status).toBe(204);
    expect(await usages(source)).toEqual({ VCPU: 12 });
    expect(await usages(target)).toEqual({ VCPU: 4 });
  });
});

describe('POST /reshaper after reserved was raised', () => {
  it('accepts allocations that keep the over-capacity usage, refuses an increase and writes nothing', async () => {
    const rp = await provider(app, { inventory: { VCPU: { total: 8 }, DISK_GB: { total: 100 } } });
    const child = await provider(app, { parent: rp });
    const consumer = crypto.randomUUID();
    expect((await put(consumer, { [rp]: { VCPU: 6, DISK_GB: 10 } }, null)).status).toBe(204);
    await shrink(rp, { VCPU: { total: 8, reserved: 4 }, DISK_GB: { total: 100 } });

    // Moves DISK_GB to the child; VCPU stays over capacity on the root at 6, then at 7.
    const reshape = async (vcpu: number) =>
      app.call('POST', '/reshaper', {
        body: {
          inventories: {
            [rp]: {
              resource_provider_generation: await generationOf(`/resource_providers/${rp}/inventories`),
              inventories: { VCPU: { total: 8, reserved: 4 } },
            },
            [child]: {
              resource_provider_generation: await generationOf(`/resource_providers/${child}/inventories`),
              inventories: { DISK_GB: { total: 100 } },
            },
          },
          allocations: {
            [consumer]: {
              ...allocationsBody({ [rp]: { VCPU: vcpu }, [child]: { DISK_GB: 10 } }, await generationOf(`/allocations/${consumer}`)),
            },
          },
        },
      });
    await expectCapacity409(await reshape(7), rp);
    expect(await usages(rp)).toEqual({ VCPU: 6, DISK_GB: 10 });
    expect((await reshape(6)).status).toBe(204);
    expect(await usages(rp)).toEqual({ VCPU: 6 });
    expect(await usages(child)).toEqual({ DISK_GB: 10 });
  });
});
