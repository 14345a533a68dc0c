// Faults and races injected at the database edge of the write model (one
// read batch, one guarded write batch): between the read and the write, and
// inside the write batch at every statement. The database must be exactly
// as before a failed write, and a write that lost a race must be decided
// again on what the winner left.
import type { InStatement, ResultSet } from '@libsql/client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_WRITE_ATTEMPTS } from '../../src/db/write-batch.js';
import { seedProvider, usageOf } from '../helpers/placement-seed.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

const owner = { project_id: 'p-safety', user_id: 'u-safety' };

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

async function dump(): Promise<Record<string, unknown[]>> {
  const q = async (sql: string) => (await t.deps.store.client.execute(sql)).rows.map((r) => ({ ...r }));
  return {
    providers: await q('SELECT * FROM resource_providers ORDER BY id'),
    inventories: await q('SELECT * FROM inventories ORDER BY id'),
    allocations: await q('SELECT * FROM allocations ORDER BY id'),
    consumers: await q('SELECT * FROM consumers ORDER BY id'),
    projects: await q('SELECT * FROM projects ORDER BY id'),
    users: await q('SELECT * FROM users ORDER BY id'),
    consumerTypes: await q('SELECT * FROM consumer_types ORDER BY id'),
  };
}

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

describe('a write that loses a race between its read and its write batch', () => {
  it('is decided again on what the winner left: capacity is never exceeded', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 2 } });
    const [slow, fast] = [crypto.randomUUID(), crypto.randomUUID()];
    let interfered = false;
    const reads = afterEachRead(async () => {
      if (interfered) return;
      interfered = true;
      // Another writer takes one VCPU after `slow` read the usage (0) and decided 2 fit.
      const res = await t.call('PUT', `/allocations/${fast}`, { body: claimBody(rp.uuid, 1, null) });
      expect(res.status).toBe(204);
    });
    const res = await t.call('PUT', `/allocations/${slow}`, { body: claimBody(rp.uuid, 2, null) });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).detail).toContain('would exceed the capacity');
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 1 });
    expect(reads()).toBe(3); // slow, fast, slow again
  });

  it('sees a consumer created meanwhile: 409 with its generation, as if it had come later', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const consumer = crypto.randomUUID();
    let interfered = false;
    afterEachRead(async () => {
      if (interfered) return;
      interfered = true;
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

  it('gives up after a bounded number of lost races with 409 concurrent_update, writing nothing', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 64 } });
    const target = crypto.randomUUID();
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
    const res = await t.call('PUT', `/allocations/${target}`, { body: claimBody(rp.uuid, 1, null) });
    expect(res.status).toBe(409);
    expect(await errorOf(res)).toMatchObject({ code: 'placement.concurrent_update' });
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: MAX_WRITE_ATTEMPTS });
    expect(await (await t.call('GET', `/allocations/${target}`)).json()).toEqual({ allocations: {} });
    expect(reads()).toBe(2 * MAX_WRITE_ATTEMPTS);
  });

  it('leaves the database as before when the process fails between read and write', async () => {
    const rp = await seedProvider(t.deps, { VCPU: { total: 8 } });
    const before = await dump();
    afterEachRead(async () => {
      throw new Error('injected crash between read and write');
    });
    const res = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: claimBody(rp.uuid, 1, null) });
    expect(res.status).toBe(500);
    expect(await dump()).toEqual(before);
  });
});

describe('a failure inside the write batch', () => {
  /** Makes every write batch fail at statement `index` (guards counted) until restored. */
  function failWritesAt(index: number): { sizes: number[]; restore: () => void } {
    const { store } = t.deps;
    const write = store.writeBatch;
    const sizes: number[] = [];
    store.writeBatch = async (statements: InStatement[]) => {
      sizes.push(statements.length);
      return write(statements.map((s, i) => (i === index ? "SELECT json('injected failure')" : s)));
    };
    return {
      sizes,
      restore: () => {
        store.writeBatch = write;
      },
    };
  }

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
    const before = await dump();
    let size = 1;
    for (let index = 0; index < size; index += 1) {
      const fault = failWritesAt(index);
      const res = await move();
      fault.restore();
      size = fault.sizes[0]!;
      // A failed statement is a 500; a failed guard reads as a lost race, retried until 409 concurrent_update.
      if (res.status === 409) expect(await errorOf(res)).toMatchObject({ code: 'placement.concurrent_update' });
      else expect(res.status, `failing statement ${index}`).toBe(500);
      expect(await dump(), `failing statement ${index} of ${size}`).toEqual(before);
    }
    expect(size).toBeGreaterThan(10);
    // Without a fault, the same request goes through.
    expect((await move()).status).toBe(204);
    expect(await usageOf(t.deps, b.id)).toEqual({ VCPU: 2 });
    expect(await usageOf(t.deps, a.id)).toEqual({ VCPU: 1, MEMORY_MB: 64 });
  });
});
