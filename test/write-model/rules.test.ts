import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countBatches } from './count-batches.js';
import { writeHooks, type ClaimRule } from '../../src/placement/writes/kernel.js';
import { brokenRule, brokenSql, CLAIM_RULES, stillInUse, stillInUseSql } from '../../src/placement/writes/rules.js';
import { seedProvider, usageOf } from '../helpers/placement-seed.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
let rp: { id: number; uuid: string };
beforeEach(async () => {
  t = await makeTestApp();
  rp = await seedProvider(t.deps, { VCPU: { total: 16, maxUnit: 4 } });
});
afterEach(() => t.close());

/** Claims `vcpu` for a new consumer: `oneBatch` at 1.28 (consumer_generation null), else at 1.27 (the ordinary path). */
async function claim(vcpu: number, oneBatch: boolean): Promise<{ status: number; reads: number; writes: number; detail?: string }> {
  const counts = countBatches(t.deps.store);
  const body: Record<string, unknown> = {
    allocations: { [rp.uuid]: { resources: { VCPU: vcpu } } },
    project_id: randomUUID(),
    user_id: randomUUID(),
  };
  if (oneBatch) body.consumer_generation = null;
  const res = await t.call('PUT', `/allocations/${randomUUID()}`, { body, version: oneBatch ? '1.28' : '1.27' });
  const detail = res.status === 204 ? undefined : (await errorOf(res)).detail;
  return { status: res.status, reads: counts.reads, writes: counts.writes, detail };
}

/** The app's claim rules replaced by `rules` (the extensions kept). */
const useRules = (rules: readonly ClaimRule[]) => {
  t.deps.writeHooks = writeHooks(t.deps.extensions.writes(), rules);
};

const isMaxUnit = (rule: ClaimRule) => rule.left === 'amount' && rule.right === 'maxUnit';

describe('a claim rule, declared once', () => {
  it('as declared: max_unit refuses 5 VCPU on both paths, in their usual round trips', async () => {
    expect(await claim(5, true)).toMatchObject({ status: 409, writes: 1, reads: 1 });
    expect(await claim(5, false)).toMatchObject({ status: 409, writes: 0, reads: 1 });
    const granted = await claim(4, true);
    expect(granted).toMatchObject({ status: 204, writes: 1, reads: 0 });
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 4 });
  });

  it('dropped in its one place: both the SQL guard (one batch, nothing read) and the decision grant 5 VCPU', async () => {
    useRules(CLAIM_RULES.filter((rule) => !isMaxUnit(rule)));
    expect(await claim(5, true)).toMatchObject({ status: 204, writes: 1, reads: 0 });
    expect(await claim(5, false)).toMatchObject({ status: 204, writes: 1, reads: 1 });
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 10 });
  });

  it("tightened in its one place (at most 2 units): both paths refuse 3 VCPU with the rule's own wording", async () => {
    useRules(CLAIM_RULES.map((rule) => (isMaxUnit(rule) ? { ...rule, right: 2 } : rule)));
    const oneBatch = await claim(3, true);
    // The guard refused the batch (nothing written), then the ordinary path read and worded it.
    expect(oneBatch).toMatchObject({ status: 409, writes: 1, reads: 1 });
    expect(oneBatch.detail).toContain('would violate inventory constraints');
    const ordinary = await claim(3, false);
    expect(ordinary).toMatchObject({ status: 409, writes: 0, reads: 1 });
    expect(ordinary.detail).toBe(oneBatch.detail);
    expect(await usageOf(t.deps, rp.id)).toEqual({});
    expect((await claim(2, true)).status).toBe(204);
  });

  it('a capacity rule changed (usage within half the capacity) moves both paths alike', async () => {
    useRules(CLAIM_RULES.map((rule) => (rule.refusal === 'capacity' ? { ...rule, right: 8 } : rule)));
    expect(await claim(4, true)).toMatchObject({ status: 204, writes: 1, reads: 0 });
    expect(await claim(4, false)).toMatchObject({ status: 204, writes: 1, reads: 1 });
    for (const oneBatch of [true, false]) {
      const refused = await claim(1, oneBatch);
      expect(refused.status).toBe(409);
      expect(refused.detail).toContain('would exceed the capacity');
    }
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 8 });
  });
});

describe('a rule list with nothing in it', () => {
  it('refuses nothing on either path: 20 VCPU on an inventory of 16 with max_unit 4 are granted', async () => {
    useRules([]);
    expect(await claim(20, true)).toMatchObject({ status: 204, writes: 1, reads: 0 });
    expect(await claim(20, false)).toMatchObject({ status: 204, writes: 1, reads: 1 });
    expect(await usageOf(t.deps, rp.id)).toEqual({ VCPU: 40 });
  });
});

describe('a rule that names a value the check was not given', () => {
  it('fails loudly, naming the operand, in TypeScript and in SQL', () => {
    expect(() => brokenRule(CLAIM_RULES, { amount: 1, usage: 1 })).toThrow('rule operand minUnit needs an inventory');
    expect(() => brokenSql(CLAIM_RULES, { inventory: 'i' })).toThrow('rule operand amount has no SQL here');
  });
});

describe('the declaration to both paths', () => {
  it('states each comparison in TypeScript and SQL alike', async () => {
    const inventory = { total: 16, reserved: 0, minUnit: 2, maxUnit: 8, stepSize: 2, allocationRatio: 1 };
    const rows = { total: 16, reserved: 0, min_unit: 2, max_unit: 8, step_size: 2, allocation_ratio: 1 };
    for (const amount of [0, 1, 2, 3, 8, 9, 10]) {
      for (const used of [0, 6, 7, 16, 17]) {
        const ts = brokenRule(CLAIM_RULES, { amount, usage: used, inventory });
        const condition = brokenSql(CLAIM_RULES, { amount: String(amount), usage: String(used), inventory: 'i' });
        const sql = `SELECT (${condition}) AS broken FROM (SELECT ${Object.entries(rows)
          .map(([c, v]) => `${v} AS ${c}`)
          .join(', ')}) i`;
        const [row] = (await t.deps.store.client.execute(sql)).rows;
        expect(Number(row!.broken) === 1, `amount ${amount}, usage ${used}`).toBe(ts !== undefined);
      }
    }
  });
});

describe('the removal rule (a class still in use is not removed)', () => {
  it("decides alike in TypeScript (inventory writes, reshaper) and in the one-batch replace's SQL guard", async () => {
    for (const used of [0, 1, 5]) {
      await t.deps.store.client.execute('DELETE FROM allocations');
      if (used > 0) {
        await t.deps.store.client.execute({
          sql: `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
            SELECT ?, ?, id, ? FROM resource_classes WHERE name = 'VCPU'`,
          args: [rp.id, randomUUID(), used],
        });
      }
      const [row] = (
        await t.deps.store.client.execute({
          sql: `SELECT (${stillInUseSql('i')}) AS in_use FROM inventories i WHERE i.resource_provider_id = ?`,
          args: [rp.id],
        })
      ).rows;
      expect(Number(row!.in_use) === 1, `used ${used}`).toBe(stillInUse(used));
      expect(stillInUse(used)).toBe(used > 0);
    }
  });
});
