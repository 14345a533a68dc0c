// Faults and races injected at the database edge of the write model (one
// read batch, one guarded write batch): between the read and the write, and
// inside the write batch at every statement. The database must be exactly
// as before a failed write, and a write that lost a race must be decided
// again on what the winner left.
import type { InStatement, ResultSet } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_WRITE_ATTEMPTS } from '../../src/db/write-batch.js';
import { dumpPlacement, seedProvider, usageOf } from '../helpers/placement-seed.js';
import { failEachWriteStatement, onceBeforeWrite } from '../helpers/store-faults.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

const owner = { project_id: 'p-safety', user_id: 'u-safety' };

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

const dump = () => dumpPlacement(t.deps);

/** Runs `hook` after each read batch of the store, before the write that follows it. */
function afterEachRead(hook: (attempt: number) => Promise<void>): () => number {
  const { store } = t.deps;
  const read = store.readBatch.bind(store);
  let attempts = 0;
  store.readBatch = async (statements: InStatement[]): Promise<ResultSet[]> => {
    const results = await read(statements);
    attempts += 1;
    await hook(attempts);
    return results;
  };
  return () => attempts;
}

const claimBody = (rp: string, vcpu: number, generation: number | null, extra: Record<string, unknown> = {}) => ({
  allocations: { [rp]: { resources: { VCPU: vcpu } } },
  ...owner,
  consumer_generation: generation,
  consumer_type: 'INSTANCE',
  ...extra,
});

/**
 * A consumer that already holds 1 VCPU on a provider of its own (generation
 * 1). A claim of a new consumer is one write batch with nothing read first
 * (no window to race in); a claim for this one reads, decides and writes.
 */
async function existingConsumer(): Promise<string> {
  const home = await seedProvider(t.deps, { VCPU: { total: 8 } });
  const uuid = crypto.randomUUID();
  expect((await t.call('PUT', `/allocations/${uuid}`, { body: claimBody(home.uuid, 1, null) })).status).toBe(204);
  return uuid;
}

describe('a write that loses a race between its read and its write batch', () => {
  it('is decided again on what the winner left: capacity is never exceeded', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 2 } });
    const [slow, fast] = [await existingConsumer(), crypto.randomUUID()];
    let interfered = false;
    const reads = afterEachRead(async () => {
      if (interfered) return;
      interfered = true;
      // Another writer takes one VCPU after `slow` read the usage (0) and decided 2 fit.
      const res = await t.call('PUT', `/allocations/${fast}`, { body: claimBody(rp.uuid, 1, null) });
      expect(res.status).toBe(204);
    });
    const res = await t.call('PUT', `/allocations/${slow}`, { body: claimBody(rp.uuid, 2, 1) });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).detail).toContain('would exceed the capacity');
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 1 });
    expect(reads()).toBe(2); // slow, slow again (fast, a new consumer, reads nothing)
  });

  it('sees a consumer created meanwhile: 409 with its generation, as if it had come later', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const consumer = crypto.randomUUID();
    // The other writer gets in just before this claim's write batch.
    onceBeforeWrite(t.deps.store, async () => {
      expect((await t.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp.uuid, 1, null) })).status).toBe(204);
    });
    const res = await t.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp.uuid, 3, null) });
    expect(res.status).toBe(409);
    expect(await errorOf(res)).toMatchObject({
      code: 'placement.concurrent_update',
      detail: expect.stringContaining('expected 1 but got null'),
    });
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 1 });
  });

  it('sees the consumer moved meanwhile to another provider: 409 with its generation, the other move kept', async () => {
    const consumer = await existingConsumer();
    const [a, b] = [await seedProvider(t.deps, { VCPU: { total: 8 } }), await seedProvider(t.deps, { VCPU: { total: 8 } })];
    let interfered = false;
    afterEachRead(async () => {
      if (interfered) return;
      interfered = true;
      // Another writer moves the consumer (generation 1) to provider a after this claim read it.
      expect((await t.call('PUT', `/allocations/${consumer}`, { body: claimBody(a.uuid, 1, 1) })).status).toBe(204);
    });
    // No provider both claims write to: only the consumer's own generation tells them apart.
    const res = await t.call('PUT', `/allocations/${consumer}`, { body: claimBody(b.uuid, 2, 1) });
    expect(res.status).toBe(409);
    expect(await errorOf(res)).toMatchObject({
      code: 'placement.concurrent_update',
      detail: expect.stringContaining('expected 2 but got 1'),
    });
    expect(await usageOf(t.deps, a.id)).toEqual({ VCPU: 1 });
    expect(await usageOf(t.deps, b.id)).toEqual({});
  });

  it('gives up after a bounded number of lost races with 409 concurrent_update, writing nothing', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 64 } });
    const target = await existingConsumer();
    const held = await (await t.call('GET', `/allocations/${target}`)).json();
    let depth = 0;
    const reads = afterEachRead(async () => {
      if (depth > 0) return; // the interfering claims' own reads
      depth += 1;
      try {
        expect((await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claimBody(rp.uuid, 1, null) })).status).toBe(204);
      } finally {
        depth -= 1;
      }
    });
    const res = await t.call('PUT', `/allocations/${target}`, { body: claimBody(rp.uuid, 1, 1) });
    expect(res.status).toBe(409);
    expect(await errorOf(res)).toMatchObject({
      code: 'placement.concurrent_update',
      detail: expect.stringContaining('Another thread concurrently updated the data. Please retry your update'),
    });
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: MAX_WRITE_ATTEMPTS });
    expect(await (await t.call('GET', `/allocations/${target}`)).json()).toEqual(held);
    expect(reads()).toBe(MAX_WRITE_ATTEMPTS); // the interfering claims are new consumers: no reads
  });

  it('leaves the database as before when the process fails between read and write', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const consumer = await existingConsumer();
    const before = await dump();
    afterEachRead(async () => {
      throw new Error('injected crash between read and write');
    });
    const res = await t.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp.uuid, 1, 1) });
    expect(res.status).toBe(500);
    expect(await dump()).toEqual(before);
  });
});

describe('a failure inside the write batch', () => {
  /** A failed statement is a 500; a failed guard reads as a lost race, retried until 409 concurrent_update. */
  const leavesNothing = (before: unknown) => async (res: Response, index: number, size: number) => {
    if (res.status === 409) expect(await errorOf(res)).toMatchObject({ code: 'placement.concurrent_update' });
    else expect(res.status, `failing statement ${index}`).toBe(500);
    expect(await dump(), `failing statement ${index} of ${size}`).toEqual(before);
  };

  it('leaves the database exactly as before, whichever statement fails', async () => {
    const [a, b] = [
      await seedProvider(t.deps, { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } }),
      await seedProvider(t.deps, { VCPU: { total: 8 } }),
    ];
    const moving = crypto.randomUUID();
    const leaving = crypto.randomUUID();
    const arriving = crypto.randomUUID();
    expect((await t.call('PUT', `/allocations/${moving}`, { body: claimBody(a.uuid, 2, null) })).status).toBe(204);
    expect((await t.call('PUT', `/allocations/${leaving}`, { body: claimBody(a.uuid, 1, null) })).status).toBe(204);
    // One POST touching everything: a move (existing consumer), a new consumer, an emptied consumer.
    const move = () =>
      t.call('POST', '/allocations', {
        body: {
          [moving]: {
            ...claimBody(b.uuid, 2, 1),
            allocations: { [b.uuid]: { resources: { VCPU: 2 } }, [a.uuid]: { resources: { MEMORY_MB: 64 } } },
          },
          [arriving]: { ...claimBody(a.uuid, 1, null), consumer_type: 'MIGRATION' },
          [leaving]: { ...claimBody(a.uuid, 1, 1), allocations: {} },
        },
      });
    const size = await failEachWriteStatement(t.deps.store, move, leavesNothing(await dump()));
    expect(size).toBeGreaterThan(10);
    // Without a fault, the same request goes through.
    expect((await move()).status).toBe(204);
    expect(await usageOf(t.deps, b.id)).toEqual({ VCPU: 2 });
    expect(await usageOf(t.deps, a.id)).toEqual({ VCPU: 1, MEMORY_MB: 64 });
  });

  it("a new consumer's one-batch claim: any failing statement leaves the database as before, or the ordinary path grants it whole", async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const claim = (consumer: string) => t.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp.uuid, 3, null) });
    const before = await dump();
    const claimNew = async () => {
      const consumer = crypto.randomUUID();
      return { consumer, res: await claim(consumer) };
    };
    const size = await failEachWriteStatement(t.deps.store, claimNew, async ({ consumer, res }, index, size) => {
      if (res.status === 204) {
        // The one-batch claim failed at a guard and the ordinary path (whose batch the fault missed) granted it.
        expect(await usageOf(t.deps, rp.id), `failing statement ${index}`).toEqual({ VCPU: 3 });
        expect((await t.call('DELETE', `/allocations/${consumer}`)).status).toBe(204);
        return;
      }
      expect([409, 500], `failing statement ${index}`).toContain(res.status);
      expect(await dump(), `failing statement ${index} of ${size}`).toEqual(before);
    });
    expect(size).toBeGreaterThan(5);
    // A claim that does not fit is refused with the ordinary path's words, and writes nothing.
    expect((await claim(crypto.randomUUID())).status).toBe(204);
    const refused = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claimBody(rp.uuid, 6, null) });
    expect(refused.status).toBe(409);
    expect((await errorOf(refused)).detail).toContain('would exceed the capacity');
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 3 });
  });

  it('leaves the database exactly as before when a provider move or delete fails at any statement', async () => {
    const [root, other] = [await seedProvider(t.deps, {}), await seedProvider(t.deps, { VCPU: { total: 8 } })];
    const mid = await seedProvider(t.deps, {}, { parentUuid: root.uuid });
    await seedProvider(t.deps, {}, { parentUuid: mid.uuid });
    expect(
      (
        await t.call('PUT', `/resource_providers/${other.uuid}/traits`, {
          body: { resource_provider_generation: 0, traits: ['HW_CPU_X86_AVX2'] },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await t.call('PUT', `/resource_providers/${other.uuid}/aggregates`, {
          body: { resource_provider_generation: 1, aggregates: [crypto.randomUUID()] },
        })
      ).status,
    ).toBe(200);
    const requests = [
      () => t.call('PUT', `/resource_providers/${mid.uuid}`, { body: { name: 'moved', parent_provider_uuid: other.uuid } }),
      () => t.call('PUT', `/resource_providers/${mid.uuid}`, { body: { name: 'moved', parent_provider_uuid: null } }),
      () => t.call('DELETE', `/resource_providers/${other.uuid}`),
    ];
    for (const send of requests) {
      const size = await failEachWriteStatement(t.deps.store, send, leavesNothing(await dump()));
      expect(size).toBeGreaterThan(2);
    }
    // Without a fault, the same requests go through.
    expect((await requests[0]!()).status).toBe(200);
    expect((await requests[2]!()).status).toBe(409); // now a parent
    expect((await requests[1]!()).status).toBe(200);
    expect((await requests[2]!()).status).toBe(204);
  });
});

/** Runs `interfere` once, after the first read batch of the write under test (not after its own reads). */
function onceAfterFirstRead(interfere: () => Promise<void>): () => number {
  let done = false;
  return afterEachRead(async () => {
    if (done) return;
    done = true;
    await interfere();
  });
}

describe('providers, classes and traits changed between the read and the write batch', () => {
  it('a provider delete that a claim overtakes is decided again: 409 in use, the allocation stays on a live provider', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const consumer = crypto.randomUUID();
    const reads = onceAfterFirstRead(async () => {
      expect((await t.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp.uuid, 1, null) })).status).toBe(204);
    });
    const res = await t.call('DELETE', `/resource_providers/${rp.uuid}`);
    expect(res.status).toBe(409);
    expect(await errorOf(res)).toMatchObject({ code: 'placement.resource_provider.inuse' });
    expect(reads()).toBe(2); // the delete, the delete again (the claim, a new consumer, reads nothing)
    expect((await t.call('GET', `/resource_providers/${rp.uuid}`)).status).toBe(200);
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 1 });
  });

  it('a claim that a provider delete overtakes is decided again: refused, no allocation on a deleted provider', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const consumer = await existingConsumer();
    onceAfterFirstRead(async () => {
      expect((await t.call('DELETE', `/resource_providers/${rp.uuid}`)).status).toBe(204);
    });
    const res = await t.call('PUT', `/allocations/${consumer}`, { body: claimBody(rp.uuid, 1, 1) });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain(`Allocation for resource provider '${rp.uuid}' that does not exist.`);
    const { rows } = await t.deps.store.client.execute({
      sql: 'SELECT count(*) AS n FROM allocations WHERE resource_provider_id = ?',
      args: [rp.id],
    });
    expect(Number(rows[0]!.n)).toBe(0);
  });

  it('a provider delete overtaken by a new child is refused: 409 cannot_delete_parent', async () => {
    const parent = await seedProvider(t.deps, {});
    const child = crypto.randomUUID();
    onceAfterFirstRead(async () => {
      const res = await t.call('POST', '/resource_providers', {
        body: { name: 'late-child', uuid: child, parent_provider_uuid: parent.uuid },
      });
      expect(res.status).toBe(200);
    });
    const res = await t.call('DELETE', `/resource_providers/${parent.uuid}`);
    expect(res.status).toBe(409);
    expect(await errorOf(res)).toMatchObject({ code: 'placement.resource_provider.cannot_delete_parent' });
    expect((await json(await t.call('GET', `/resource_providers/${child}`))).root_provider_uuid).toBe(parent.uuid);
  });

  it('two providers moved under each other at once: the second move is refused as a loop, the tree stays a tree', async () => {
    const [a, b] = [await seedProvider(t.deps, {}), await seedProvider(t.deps, {})];
    onceAfterFirstRead(async () => {
      const res = await t.call('PUT', `/resource_providers/${b.uuid}`, { body: { name: 'b', parent_provider_uuid: a.uuid } });
      expect(res.status).toBe(200);
    });
    const res = await t.call('PUT', `/resource_providers/${a.uuid}`, { body: { name: 'a', parent_provider_uuid: b.uuid } });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain('creating loop in the provider tree is not allowed.');
    expect(await json(await t.call('GET', `/resource_providers/${a.uuid}`))).toMatchObject({
      parent_provider_uuid: null,
      name: `rp-${a.uuid}`,
    });
    expect(await json(await t.call('GET', `/resource_providers/${b.uuid}`))).toMatchObject({
      parent_provider_uuid: a.uuid,
      root_provider_uuid: a.uuid,
    });
  });

  it('a move under a parent deleted meanwhile is decided again: 400 parent does not exist', async () => {
    const [moving, parent] = [await seedProvider(t.deps, {}), await seedProvider(t.deps, {})];
    onceAfterFirstRead(async () => {
      expect((await t.call('DELETE', `/resource_providers/${parent.uuid}`)).status).toBe(204);
    });
    const res = await t.call('PUT', `/resource_providers/${moving.uuid}`, { body: { name: 'moving', parent_provider_uuid: parent.uuid } });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain('parent provider UUID does not exist.');
    expect(await json(await t.call('GET', `/resource_providers/${moving.uuid}`))).toMatchObject({ parent_provider_uuid: null });
  });

  it('a child created under a subtree while it moves gets the new root', async () => {
    const [root, other] = [await seedProvider(t.deps, {}), await seedProvider(t.deps, {})];
    const mid = await seedProvider(t.deps, {}, { parentUuid: root.uuid });
    const late = crypto.randomUUID();
    onceAfterFirstRead(async () => {
      const body = { name: 'late', uuid: late, parent_provider_uuid: mid.uuid };
      expect((await t.call('POST', '/resource_providers', { body })).status).toBe(200);
    });
    const res = await t.call('PUT', `/resource_providers/${mid.uuid}`, { body: { name: 'mid', parent_provider_uuid: other.uuid } });
    expect(res.status).toBe(200);
    expect((await json(await t.call('GET', `/resource_providers/${late}`))).root_provider_uuid).toBe(other.uuid);
  });

  it('an inventory of a class deleted meanwhile is refused: no inventory of a class that is gone', async () => {
    const rp = await seedProvider(t.deps, {});
    expect((await t.call('PUT', '/resource_classes/CUSTOM_GONE')).status).toBe(201);
    onceAfterFirstRead(async () => {
      expect((await t.call('DELETE', '/resource_classes/CUSTOM_GONE')).status).toBe(204);
    });
    const res = await t.call('POST', `/resource_providers/${rp.uuid}/inventories`, {
      body: { resource_provider_generation: 0, resource_class: 'CUSTOM_GONE', total: 4 },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain('No such resource class CUSTOM_GONE');
    expect((await dump()).inventories).toEqual([]);
  });

  it('a provider trait deleted before the one-batch write is refused: no link to a trait that is gone', async () => {
    const rp = await seedProvider(t.deps, {});
    expect((await t.call('PUT', '/traits/CUSTOM_GONE')).status).toBe(201);
    onceBeforeWrite(t.deps.store, async () => {
      expect((await t.call('DELETE', '/traits/CUSTOM_GONE')).status).toBe(204);
    });
    const res = await t.call('PUT', `/resource_providers/${rp.uuid}/traits`, {
      body: { resource_provider_generation: 0, traits: ['CUSTOM_GONE', 'HW_CPU_X86_AVX2'] },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain('No such trait(s): CUSTOM_GONE');
    expect((await dump()).providerTraits).toEqual([]);
  });

  it('a provider trait deleted between the read and the write of the ordinary path is refused', async () => {
    // The one-batch write is refused (the trait does not exist yet), the trait is created before the
    // ordinary path reads it and deleted again before its write batch: decided again, 400.
    const rp = await seedProvider(t.deps, {});
    const { store } = t.deps;
    const write = store.writeBatch;
    let writes = 0;
    store.writeBatch = async (statements: InStatement[]) => {
      writes += 1;
      try {
        return await write(statements);
      } finally {
        if (writes === 1) expect((await t.call('PUT', '/traits/CUSTOM_GONE')).status).toBe(201);
      }
    };
    const reads = onceAfterFirstRead(async () => {
      expect((await t.call('DELETE', '/traits/CUSTOM_GONE')).status).toBe(204);
    });
    const res = await t.call('PUT', `/resource_providers/${rp.uuid}/traits`, {
      body: { resource_provider_generation: 0, traits: ['CUSTOM_GONE', 'HW_CPU_X86_AVX2'] },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain('No such trait(s): CUSTOM_GONE');
    expect(reads()).toBe(2); // read (the trait there), the write refused by its guard, read again (gone)
    expect((await dump()).providerTraits).toEqual([]);
  });

  it('leaves the database as before when the process fails between the read and the write of a provider update or delete', async () => {
    const [root, other] = [await seedProvider(t.deps, {}), await seedProvider(t.deps, { VCPU: { total: 8 } })];
    const child = await seedProvider(t.deps, {}, { parentUuid: root.uuid });
    const before = await dump();
    afterEachRead(async () => {
      throw new Error('injected crash between read and write');
    });
    const move = await t.call('PUT', `/resource_providers/${child.uuid}`, { body: { name: 'moved', parent_provider_uuid: other.uuid } });
    expect(move.status).toBe(500);
    expect((await t.call('DELETE', `/resource_providers/${other.uuid}`)).status).toBe(500);
    expect(await dump()).toEqual(before);
  });
});

async function json(res: Response): Promise<Record<string, unknown>> {
  return (await res.json()) as Record<string, unknown>;
}
