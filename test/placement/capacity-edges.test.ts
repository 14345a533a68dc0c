// Capacity's rule at its edges, as each reader of it answers: (total -
// reserved) * allocation_ratio floored, units of step_size between min_unit
// and max_unit, the capacity held within +-(2^53 - 1). GET /resource_providers
// ?resources= (filtered in SQL), GET /allocation_candidates (the candidate
// engine) and a claim (the write path) must agree to the unit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

const claim = (rp: string, amount: number) =>
  t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
    body: {
      allocations: { [rp]: { resources: { VCPU: amount } } },
      project_id: crypto.randomUUID(),
      user_id: crypto.randomUUID(),
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });

/** Whether `amount` more VCPU is offered on `rp` by the providers filter and by the candidates. */
async function offered(rp: string, amount: number): Promise<{ listed: boolean; candidate: boolean }> {
  const listed = (await (await t.call('GET', `/resource_providers?resources=VCPU:${amount}&in_tree=${rp}`)).json()) as {
    resource_providers: { uuid: string }[];
  };
  const candidates = (await (await t.call('GET', `/allocation_candidates?resources=VCPU:${amount}&in_tree=${rp}`)).json()) as {
    allocation_requests: unknown[];
  };
  return { listed: listed.resource_providers.some((p) => p.uuid === rp), candidate: candidates.allocation_requests.length > 0 };
}

async function summary(rp: string): Promise<{ capacity: number; used: number }> {
  const body = (await (await t.call('GET', `/allocation_candidates?resources=VCPU:1&in_tree=${rp}`)).json()) as {
    provider_summaries: Record<string, { resources: { VCPU: { capacity: number; used: number } } }>;
  };
  return body.provider_summaries[rp]!.resources.VCPU;
}

describe('capacity at its edges, the same for the providers filter, the candidates and a claim', () => {
  it('floors a fractional capacity: 6.5 offers 6 and refuses 7, with reserved', async () => {
    // (20 - 4) * 0.40625 = 6.5
    const rp = await provider(t, { inventory: { VCPU: { total: 20, reserved: 4, allocation_ratio: 0.40625 } } });
    expect(await summary(rp)).toEqual({ capacity: 6, used: 0 });
    expect(await offered(rp, 6)).toEqual({ listed: true, candidate: true });
    expect(await offered(rp, 7)).toEqual({ listed: false, candidate: false });
    expect((await claim(rp, 7)).status).toBe(409);
    expect((await claim(rp, 4)).status).toBe(204);
    // 2 left of 6: offered at 2, not at 3.
    expect(await summary(rp)).toEqual({ capacity: 6, used: 4 });
    expect(await offered(rp, 2)).toEqual({ listed: true, candidate: true });
    expect(await offered(rp, 3)).toEqual({ listed: false, candidate: false });
    expect((await claim(rp, 3)).status).toBe(409);
    expect((await claim(rp, 2)).status).toBe(204);
    expect(await offered(rp, 1)).toEqual({ listed: false, candidate: false });
  });

  it('offers only amounts in units of step_size between min_unit and max_unit', async () => {
    const rp = await provider(t, { inventory: { VCPU: { total: 16, min_unit: 2, max_unit: 8, step_size: 2 } } });
    for (const [amount, ok] of [
      [1, false], // below min_unit
      [2, true],
      [3, false], // not a step
      [8, true],
      [9, false],
      [10, false], // above max_unit
    ] as const) {
      expect((await offered(rp, amount)).candidate, `VCPU:${amount}`).toBe(ok);
    }
  });

  it('holds the capacity of a huge allocation_ratio at 2^53 - 1', async () => {
    const rp = await provider(t, { inventory: { VCPU: { total: 10, reserved: 1, allocation_ratio: 3.4e38 } } });
    expect(await summary(rp)).toEqual({ capacity: Number.MAX_SAFE_INTEGER, used: 0 });
    expect(await offered(rp, 2_147_483_647)).toEqual({ listed: true, candidate: true });
    expect((await claim(rp, 2_147_483_647)).status).toBe(204);
  });
});
