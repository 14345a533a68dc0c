// GET /ext/defrag: the volcano case (three 8-GPU hosts, one-GPU consumers, a
// 4-GPU query: 7/6/7 used takes two moves, 7/5/7 one), leases kept in place,
// and each plan applied move by move with real POST /allocations.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { candidates, claim } from './helpers.js';
import { applyPlan, defrag } from './simulate-helpers.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

/** Three hosts of 8 VGPU with `used[i]` one-VGPU consumers each; returns the hosts and the consumers per host. */
async function volcano(used: number[]): Promise<{ hosts: string[]; consumers: string[][] }> {
  const hosts: string[] = [];
  const consumers: string[][] = [];
  for (const n of used) {
    const host = await provider(t, { inventory: { VGPU: { total: 8 } } });
    hosts.push(host);
    const mine: string[] = [];
    for (let i = 0; i < n; i += 1) {
      const consumer = crypto.randomUUID();
      expect((await claim(t, { [host]: { resources: { VGPU: 1 } } }, consumer)).status).toBe(204);
      mine.push(consumer);
    }
    consumers.push(mine);
  }
  return { hosts, consumers };
}

describe('GET /ext/defrag', () => {
  it('7, 6, 7 of 8 GPUs used: a 4-GPU job needs two moves off the middle host', async () => {
    const { hosts } = await volcano([7, 6, 7]);
    expect(await candidates(t, 'resources=VGPU:4')).toEqual([]);
    const plan = await defrag(t, 'resources=VGPU:4&count=1&max_moves=3');
    expect(plan).toMatchObject({ feasible: true, candidates_before: 0, candidates_after: 1, resources_moved: { VGPU: 2 } });
    expect(plan.moves).toHaveLength(2);
    for (const move of plan.moves) {
      expect(Object.keys(move.from)).toEqual([hosts[1]]);
      expect([hosts[0], hosts[2]]).toContain(Object.keys(move.to)[0]);
    }
    await applyPlan(t, plan);
    expect((await candidates(t, 'resources=VGPU:4')).map((a) => Object.keys(a))).toEqual([[hosts[1]]]);
  });

  it('7, 5, 7: one move', async () => {
    await volcano([7, 5, 7]);
    const plan = await defrag(t, 'resources=VGPU:4&max_moves=3');
    expect(plan.feasible).toBe(true);
    expect(plan.moves).toHaveLength(1);
    await applyPlan(t, plan);
    expect(await candidates(t, 'resources=VGPU:4')).toHaveLength(1);
  });

  it('answers no plan when max_moves is too small, and nothing to do when the query already fits', async () => {
    await volcano([7, 6, 7]);
    expect(await defrag(t, 'resources=VGPU:4&max_moves=1')).toMatchObject({ feasible: false, moves: [] });
    expect(await defrag(t, 'resources=VGPU:2')).toMatchObject({ feasible: true, moves: [], candidates_before: 1 });
  });

  it('leaves consumers with a lease where they are unless move_leased=true', async () => {
    const { consumers } = await volcano([7, 5, 7]);
    for (const c of consumers.flat()) expect((await t.call('PUT', `/ext/leases/${c}`, { body: { seconds: 600 } })).status).toBe(200);
    expect(await defrag(t, 'resources=VGPU:4')).toMatchObject({ feasible: false, moves: [] });
    const plan = await defrag(t, 'resources=VGPU:4&move_leased=true');
    expect(plan.moves).toHaveLength(1);
  });

  // Known gap, kept executable: the planner only evicts from target hosts to destinations outside
  // them, so it misses plans that first move a small consumer INTO a target to make room elsewhere
  // for a large one. Optimum here (brute force): 3 moves, 2 VGPU host-1 -> host-0, 1 VGPU host-0 ->
  // host-1, 2 VGPU host-1 -> host-0; the planner answers no plan. Found by the random test once its
  // draws changed; when the planner learns this, `it.fails` fails and this becomes a plain `it`.
  it.fails('finds a plan that moves a consumer into the host it frees (known gap: it does not)', async () => {
    const sizes = [5, 8, 8, 5];
    const hosts: string[] = [];
    for (const total of sizes) hosts.push(await provider(t, { inventory: { VGPU: { total } } }));
    const placed: [number, number, boolean][] = [
      [3, 1, false],
      [1, 2, false],
      [0, 1, false],
      [1, 2, false],
      [3, 2, true],
      [2, 2, false],
      [3, 2, true],
      [1, 1, true],
      [0, 1, false],
    ];
    for (const [host, gpus, leased] of placed) {
      const consumer = crypto.randomUUID();
      expect((await claim(t, { [hosts[host]!]: { resources: { VGPU: gpus } } }, consumer)).status).toBe(204);
      if (leased) expect((await t.call('PUT', `/ext/leases/${consumer}`, { body: { seconds: 600 } })).status).toBe(200);
    }
    const plan = await defrag(t, 'resources=VGPU:6&count=2&max_moves=3');
    expect(plan.feasible).toBe(true);
    expect(plan.moves.length).toBeLessThanOrEqual(3);
  });

  it('refuses what /allocation_candidates refuses, with the same answer', async () => {
    await volcano([1]);
    for (const query of ['resources=NOPE:1', 'resources=VGPU:x', 'required=FOO&resources=VGPU:1', 'bogus=1']) {
      const real = await t.call('GET', `/allocation_candidates?${query}`);
      const planned = await t.call('GET', `/ext/defrag?${query}`);
      expect(planned.status).toBe(real.status);
      const strip = (b: unknown) => (b as { errors: { request_id?: string }[] }).errors.map(({ request_id: _, ...e }) => e);
      expect(strip(await planned.json())).toEqual(strip(await real.json()));
    }
    expect((await t.call('GET', '/ext/defrag?resources=VGPU:1&max_moves=x')).status).toBe(400);
  });
});
