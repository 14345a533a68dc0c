// The one-batch provider writes (docs/write-model.md): POST /resource_providers, PUT and
// DELETE .../inventories, PUT and DELETE .../traits are one guarded write
// batch with nothing read first; anything the ordinary path (read, decide,
// write) would answer with an error rolls that batch back, and the ordinary
// path words the answer. Here: what each costs, a fault at every statement
// of the batch, refusals, and races on the generation.
import type { InStatement } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countBatches } from './count-batches.js';
import { dumpPlacement, providerGeneration, seedProvider } from '../helpers/placement-seed.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

const dump = () => dumpPlacement(t.deps);

/** Makes the next write batch only fail at statement `index` (guards counted); returns its size once sent. */
function failFirstWriteAt(index: number): () => number {
  const { store } = t.deps;
  const write = store.writeBatch;
  let size = 0;
  store.writeBatch = (statements: InStatement[]) => {
    store.writeBatch = write;
    size = statements.length;
    return write(statements.map((s, i) => (i === index ? "SELECT json('injected failure')" : s)));
  };
  return () => size;
}

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

/** A provider holding VCPU 8 (1 allocated), DISK_GB 10 and trait HW_CPU_X86_SSE, at generation 3. */
async function busyProvider(): Promise<string> {
  const { uuid } = await seedProvider(t.deps, {});
  const inventories = { VCPU: { total: 8 }, DISK_GB: { total: 10 } };
  expect(
    (await t.call('PUT', `/resource_providers/${uuid}/inventories`, { body: { resource_provider_generation: 0, inventories } })).status,
  ).toBe(200);
  expect(
    (await t.call('PUT', `/resource_providers/${uuid}/traits`, { body: { resource_provider_generation: 1, traits: ['HW_CPU_X86_SSE'] } }))
      .status,
  ).toBe(200);
  const claim = {
    allocations: { [uuid]: { resources: { VCPU: 1 } } },
    project_id: 'p',
    user_id: 'u',
    consumer_generation: null,
    consumer_type: 'INSTANCE',
  };
  expect((await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claim })).status).toBe(204);
  return uuid;
}

interface OneBatchWrite {
  name: string;
  /** Whether the batch has guards (a fault there refuses it, and the ordinary path takes over). */
  guarded: boolean;
  /** Sets up what the write needs; returns how to send it and how to check it was granted whole. */
  prepare(): Promise<{ send: () => Promise<Response>; granted: (res: Response) => Promise<void> }>;
}

const WRITES: OneBatchWrite[] = [
  {
    name: 'POST /resource_providers (a root)',
    guarded: false,
    async prepare() {
      const uuid = crypto.randomUUID();
      return {
        send: () => t.call('POST', '/resource_providers', { body: { name: `root-${uuid}`, uuid } }),
        async granted(res) {
          expect(res.status).toBe(200);
          expect(await json(await t.call('GET', `/resource_providers/${uuid}`))).toMatchObject({
            uuid,
            generation: 0,
            root_provider_uuid: uuid,
            parent_provider_uuid: null,
          });
        },
      };
    },
  },
  {
    name: 'POST /resource_providers (a child)',
    guarded: true,
    async prepare() {
      const root = await seedProvider(t.deps, {});
      const parent = await seedProvider(t.deps, {}, { parentUuid: root.uuid });
      const uuid = crypto.randomUUID();
      return {
        send: () => t.call('POST', '/resource_providers', { body: { name: `child-${uuid}`, uuid, parent_provider_uuid: parent.uuid } }),
        async granted(res) {
          expect(res.status).toBe(200);
          expect(await json(await t.call('GET', `/resource_providers/${uuid}`))).toMatchObject({
            root_provider_uuid: root.uuid,
            parent_provider_uuid: parent.uuid,
          });
        },
      };
    },
  },
  {
    name: 'PUT .../inventories (one class kept and resized, one removed, one added)',
    guarded: true,
    async prepare() {
      const uuid = await busyProvider();
      const inventories = { VCPU: { total: 16, reserved: 1 }, MEMORY_MB: { total: 1024, max_unit: 512 } };
      return {
        send: () => t.call('PUT', `/resource_providers/${uuid}/inventories`, { body: { resource_provider_generation: 3, inventories } }),
        async granted(res) {
          expect(res.status).toBe(200);
          const stored = await json(await t.call('GET', `/resource_providers/${uuid}/inventories`));
          expect(stored.resource_provider_generation).toBe(4);
          expect(Object.keys(stored.inventories as object).sort()).toEqual(['MEMORY_MB', 'VCPU']);
          expect(stored.inventories).toMatchObject({ VCPU: { total: 16, reserved: 1 }, MEMORY_MB: { total: 1024, max_unit: 512 } });
        },
      };
    },
  },
  {
    name: 'DELETE .../inventories',
    guarded: true,
    async prepare() {
      const { uuid } = await seedProvider(t.deps, { VCPU: { total: 8 }, DISK_GB: { total: 10 } });
      return {
        send: () => t.call('DELETE', `/resource_providers/${uuid}/inventories`),
        async granted(res) {
          expect(res.status).toBe(204);
          expect(await json(await t.call('GET', `/resource_providers/${uuid}/inventories`))).toEqual({
            inventories: {},
            resource_provider_generation: 1,
          });
        },
      };
    },
  },
  {
    name: 'PUT .../traits',
    guarded: true,
    async prepare() {
      const uuid = await busyProvider();
      return {
        send: () =>
          t.call('PUT', `/resource_providers/${uuid}/traits`, {
            body: { resource_provider_generation: 3, traits: ['HW_CPU_X86_SSE2', 'HW_CPU_X86_AVX2'] },
          }),
        async granted(res) {
          expect(res.status).toBe(200);
          expect(await json(await t.call('GET', `/resource_providers/${uuid}/traits`))).toEqual({
            traits: ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2'],
            resource_provider_generation: 4,
          });
        },
      };
    },
  },
  {
    name: 'DELETE .../traits',
    guarded: true,
    async prepare() {
      const uuid = await busyProvider();
      return {
        send: () => t.call('DELETE', `/resource_providers/${uuid}/traits`),
        async granted(res) {
          expect(res.status).toBe(204);
          expect(await json(await t.call('GET', `/resource_providers/${uuid}/traits`))).toEqual({
            traits: [],
            resource_provider_generation: 4,
          });
        },
      };
    },
  },
];

describe('a one-batch provider write', () => {
  it.each(WRITES)('$name: one write batch, nothing read', async (write) => {
    const { send, granted } = await write.prepare();
    const counts = countBatches(t.deps.store);
    const res = await send();
    expect(counts).toEqual({ reads: 0, writes: 1 });
    await granted(res);
  });

  it.each(
    WRITES,
  )('$name: a fault at any statement of the batch leaves the database as before, or the ordinary path grants it whole', async (write) => {
    let size = 1;
    const outcomes = { failed: 0, decidedAgain: 0 };
    for (let index = 0; index < size; index += 1) {
      const { send, granted } = await write.prepare();
      const before = await dump();
      const counts = countBatches(t.deps.store);
      const sizeOf = failFirstWriteAt(index);
      const res = await send();
      size = sizeOf();
      if (res.status === 500) {
        outcomes.failed += 1;
        expect(await dump(), `failing statement ${index} of ${size}`).toEqual(before);
      } else {
        // A failed guard refuses the batch: the ordinary path (read, decide, write) takes over.
        outcomes.decidedAgain += 1;
        expect(counts, `failing statement ${index} of ${size}`).toEqual({ reads: 1, writes: 2 });
        await granted(res);
      }
    }
    expect(size).toBeGreaterThanOrEqual(3);
    expect(outcomes.failed).toBeGreaterThan(0);
    expect(outcomes.decidedAgain > 0).toBe(write.guarded);
  });
});

describe('refusals: the batch rolls back, the ordinary path words the answer', () => {
  async function refused(send: () => Promise<Response>): Promise<Response> {
    const before = await dump();
    const counts = countBatches(t.deps.store);
    const res = await send();
    expect(counts).toEqual({ reads: 1, writes: 1 });
    expect(await dump()).toEqual(before);
    return res;
  }

  it('PUT .../inventories: stale generation, unknown provider, unknown class, a class in use removed', async () => {
    const uuid = await busyProvider();
    const put = (target: string, generation: number, inventories: Record<string, unknown>) => () =>
      t.call('PUT', `/resource_providers/${target}/inventories`, { body: { resource_provider_generation: generation, inventories } });
    const stale = await refused(put(uuid, 2, { VCPU: { total: 8 } }));
    expect(stale.status).toBe(409);
    expect(await errorOf(stale)).toMatchObject({
      code: 'placement.concurrent_update',
      detail: expect.stringContaining('resource provider generation conflict'),
    });
    const missing = crypto.randomUUID();
    const unknownProvider = await refused(put(missing, 0, {}));
    expect(unknownProvider.status).toBe(404);
    expect((await errorOf(unknownProvider)).detail).toContain(`No resource provider with uuid ${missing} found`);
    const unknownClass = await refused(put(uuid, 3, { VCPU: { total: 8 }, CUSTOM_NOPE: { total: 1 } }));
    expect(unknownClass.status).toBe(400);
    expect((await errorOf(unknownClass)).detail).toContain(
      `Unknown resource class in inventory for resource provider ${uuid}: No such resource class CUSTOM_NOPE.`,
    );
    const inUse = await refused(put(uuid, 3, { DISK_GB: { total: 10 } }));
    expect(inUse.status).toBe(409);
    expect(await errorOf(inUse)).toMatchObject({
      code: 'placement.inventory.inuse',
      detail: expect.stringContaining(`update conflict: Inventory for 'VCPU' on resource provider '${uuid}' in use.`),
    });
    expect(await providerGeneration(t.deps, (await seedIdOf(uuid))!)).toBe(3);
  });

  it('PUT .../inventories shrunk below its usage is granted in one batch, as the ordinary path grants it, with the warning', async () => {
    const uuid = await busyProvider();
    const claim = {
      allocations: { [uuid]: { resources: { VCPU: 6 } } },
      project_id: 'p',
      user_id: 'u',
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
    expect((await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claim })).status).toBe(204);
    const warnings: unknown[] = [];
    t.deps.log.warn = (message: string, fields?: Record<string, unknown>) => warnings.push({ message, ...fields });
    const counts = countBatches(t.deps.store);
    const res = await t.call('PUT', `/resource_providers/${uuid}/inventories`, {
      body: { resource_provider_generation: 4, inventories: { VCPU: { total: 4 }, DISK_GB: { total: 1 } } },
    });
    expect(res.status).toBe(200);
    expect(counts).toEqual({ reads: 0, writes: 1 });
    expect(warnings).toEqual([{ message: 'resource provider is now over-capacity', provider: uuid, resource_class: 'VCPU' }]);
  });

  it('PUT .../traits: stale generation, unknown provider, unknown traits', async () => {
    const uuid = await busyProvider();
    const put = (target: string, generation: number, traits: string[]) => () =>
      t.call('PUT', `/resource_providers/${target}/traits`, { body: { resource_provider_generation: generation, traits } });
    const stale = await refused(put(uuid, 2, []));
    expect(stale.status).toBe(409);
    expect(await errorOf(stale)).toMatchObject({
      code: 'placement.concurrent_update',
      detail: expect.stringContaining("Resource provider's generation already changed."),
    });
    expect((await refused(put(crypto.randomUUID(), 0, []))).status).toBe(404);
    const unknown = await refused(put(uuid, 3, ['CUSTOM_NOPE', 'HW_CPU_X86_AVX2', 'CUSTOM_NOPE_TOO']));
    expect(unknown.status).toBe(400);
    expect((await errorOf(unknown)).detail).toContain('No such trait(s): CUSTOM_NOPE, CUSTOM_NOPE_TOO');
  });

  it('POST /resource_providers: a uuid or name taken, a parent missing', async () => {
    const taken = await seedProvider(t.deps, {});
    const post = (body: Record<string, unknown>) => () => t.call('POST', '/resource_providers', { body });
    const byName = await refused(post({ name: `rp-${taken.uuid}`, uuid: crypto.randomUUID() }));
    expect(byName.status).toBe(409);
    expect(await errorOf(byName)).toMatchObject({
      code: 'placement.duplicate_name',
      detail: expect.stringContaining(`Conflicting resource provider name: rp-${taken.uuid} already exists.`),
    });
    const byUuid = await refused(post({ name: 'fresh', uuid: taken.uuid }));
    expect(byUuid.status).toBe(409);
    expect((await errorOf(byUuid)).detail).toContain(`Conflicting resource provider uuid: ${taken.uuid} already exists.`);
    const orphan = crypto.randomUUID();
    const noParent = await refused(post({ name: 'orphan', uuid: orphan, parent_provider_uuid: crypto.randomUUID() }));
    expect(noParent.status).toBe(400);
    expect((await errorOf(noParent)).detail).toContain('parent provider UUID does not exist.');
  });
});

async function seedIdOf(uuid: string): Promise<number | undefined> {
  const { rows } = await t.deps.store.client.execute({ sql: 'SELECT id FROM resource_providers WHERE uuid = ?', args: [uuid] });
  return rows[0] ? Number(rows[0].id) : undefined;
}

describe('races on the provider generation', () => {
  it('16 PUTs of inventories or traits with the same generation: exactly one wins, the generation moves once', async () => {
    const uuid = await busyProvider();
    const outcomes = await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        i % 2 === 0
          ? t.call('PUT', `/resource_providers/${uuid}/inventories`, {
              body: { resource_provider_generation: 3, inventories: { VCPU: { total: 8 + i }, DISK_GB: { total: 10 } } },
            })
          : t.call('PUT', `/resource_providers/${uuid}/traits`, { body: { resource_provider_generation: 3, traits: ['HW_CPU_X86_AVX2'] } }),
      ),
    );
    expect(outcomes.filter((r) => r.status === 200)).toHaveLength(1);
    for (const lost of outcomes.filter((r) => r.status !== 200)) {
      expect(lost.status).toBe(409);
      expect(await errorOf(lost)).toMatchObject({ code: 'placement.concurrent_update' });
    }
    expect(await providerGeneration(t.deps, (await seedIdOf(uuid))!)).toBe(4);
  });

  it('clients that re-read the generation on 409 and try again: every grant moves the generation by exactly one', async () => {
    const uuid = await busyProvider();
    let granted = 0;
    const client = async (id: number) => {
      for (let round = 0; round < 6; round += 1) {
        for (;;) {
          const { resource_provider_generation: generation } = await json(await t.call('GET', `/resource_providers/${uuid}/traits`));
          const res =
            (id + round) % 2 === 0
              ? await t.call('PUT', `/resource_providers/${uuid}/traits`, {
                  body: { resource_provider_generation: generation, traits: [round % 2 ? 'HW_CPU_X86_AVX2' : 'HW_CPU_X86_SSE2'] },
                })
              : await t.call('PUT', `/resource_providers/${uuid}/inventories`, {
                  body: { resource_provider_generation: generation, inventories: { VCPU: { total: 8 + round } } },
                });
          if (res.status === 200) {
            granted += 1;
            break;
          }
          expect(res.status).toBe(409);
        }
      }
    };
    await Promise.all([0, 1, 2, 3].map(client));
    expect(granted).toBe(24);
    expect(await providerGeneration(t.deps, (await seedIdOf(uuid))!)).toBe(3 + 24);
  });

  it('8 POSTs of one name: one provider, seven 409 duplicate_name', async () => {
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => t.call('POST', '/resource_providers', { body: { name: 'contended', uuid: crypto.randomUUID() } })),
    );
    expect(outcomes.filter((r) => r.status === 200)).toHaveLength(1);
    for (const lost of outcomes.filter((r) => r.status !== 200)) {
      expect(await errorOf(lost)).toMatchObject({ status: 409, code: 'placement.duplicate_name' });
    }
    const { rows } = await t.deps.store.client.execute("SELECT count(*) AS n FROM resource_providers WHERE name = 'contended'");
    expect(Number(rows[0]!.n)).toBe(1);
  });

  it('children created while their parent is deleted: never a child without its parent', async () => {
    const parent = await seedProvider(t.deps, {});
    const children = Array.from({ length: 6 }, () => crypto.randomUUID());
    const outcomes = await Promise.all([
      ...children.map((uuid) =>
        t.call('POST', '/resource_providers', { body: { name: `c-${uuid}`, uuid, parent_provider_uuid: parent.uuid } }),
      ),
      t.call('DELETE', `/resource_providers/${parent.uuid}`),
    ]);
    const deletion = outcomes.at(-1)!;
    const childOutcomes = outcomes.slice(0, -1);
    const created = childOutcomes.filter((r) => r.status === 200).length;
    if (deletion.status === 204) expect(created).toBe(0);
    else {
      expect(await errorOf(deletion)).toMatchObject({ status: 409, code: 'placement.resource_provider.cannot_delete_parent' });
      expect(created).toBeGreaterThan(0);
    }
    for (const refused of childOutcomes.filter((r) => r.status !== 200)) {
      expect(refused.status).toBe(400);
      expect((await errorOf(refused)).detail).toContain('parent provider UUID does not exist.');
    }
    const { rows } = await t.deps.store.client.execute(
      'SELECT count(*) AS n FROM resource_providers c WHERE c.parent_provider_id IS NOT NULL AND c.parent_provider_id NOT IN (SELECT id FROM resource_providers)',
    );
    expect(Number(rows[0]!.n)).toBe(0);
  });
});

describe('claims at every microversion stay within 2 round trips', () => {
  it('before 1.28 (no consumer generation): replacing what a consumer holds is one read and one write', async () => {
    const uuid = await busyProvider();
    const consumer = crypto.randomUUID();
    const claim = (vcpu: number) =>
      t.call('PUT', `/allocations/${consumer}`, {
        body: { allocations: { [uuid]: { resources: { VCPU: vcpu } } }, project_id: 'p', user_id: 'u' },
        version: '1.27',
      });
    let counts = countBatches(t.deps.store);
    expect((await claim(1)).status).toBe(204);
    expect(counts).toEqual({ reads: 1, writes: 1 });
    counts = countBatches(t.deps.store);
    expect((await claim(2)).status).toBe(204);
    expect(counts).toEqual({ reads: 1, writes: 1 });
    const held = await json(await t.call('GET', `/allocations/${consumer}`));
    expect(held.allocations).toMatchObject({ [uuid]: { resources: { VCPU: 2 } } });
  });

  it('from 1.28, a new consumer (consumer_generation null) is one write batch', async () => {
    const uuid = await busyProvider();
    const counts = countBatches(t.deps.store);
    const res = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [uuid]: { resources: { VCPU: 1 } } },
        project_id: 'p',
        user_id: 'u',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(res.status).toBe(204);
    expect(counts).toEqual({ reads: 0, writes: 1 });
  });
});

describe('a one-batch claim of a project and user removed behind the API', () => {
  it('a project and user removed behind the API since: the claim is granted, both made again, as the first time', async () => {
    const uuid = await busyProvider();
    const first = crypto.randomUUID();
    const claim = (consumer: string) =>
      t.call('PUT', `/allocations/${consumer}`, {
        body: {
          allocations: { [uuid]: { resources: { VCPU: 1 } } },
          project_id: 'project-gone',
          user_id: 'user-gone',
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
      });
    expect((await claim(first)).status).toBe(204);
    expect((await t.call('DELETE', `/allocations/${first}`)).status).toBe(204);
    await t.deps.store.client.batch(
      ["DELETE FROM projects WHERE external_id = 'project-gone'", "DELETE FROM users WHERE external_id = 'user-gone'"],
      'write',
    );
    const second = crypto.randomUUID();
    expect((await claim(second)).status).toBe(204);
    expect(await json(await t.call('GET', `/allocations/${second}`))).toMatchObject({
      allocations: { [uuid]: { resources: { VCPU: 1 } } },
      project_id: 'project-gone',
      user_id: 'user-gone',
    });
    const owners = await t.deps.store.client.execute(
      "SELECT (SELECT count(*) FROM projects WHERE external_id = 'project-gone') AS projects, (SELECT count(*) FROM users WHERE external_id = 'user-gone') AS users",
    );
    expect({ ...owners.rows[0] }).toEqual({ projects: 1, users: 1 });
  });
});
