// GET /ext/defrag over random GPU clouds: every feasible plan, applied move by
// move with real POST /allocations, is granted at every step and leaves the
// query at least `count` candidates; on flat hosts (small enough to search
// every sequence of moves) the plan is within one move of the optimum, and
// there is a plan wherever the optimum fits max_moves.
import { afterEach, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { random } from '../helpers/random.js';
import { candidates, claim } from './helpers.js';
import { applyPlan, defrag, everyRow } from './simulate-helpers.js';

const CASES = Number(process.env.DEFRAG_CASES ?? 200);

let t: TestApp | null = null;
afterEach(() => {
  t?.close();
  t = null;
});

interface Flat {
  size: number[];
  /** Per consumer: its host index, GPUs, whether it holds a lease. */
  consumers: { host: number; gpus: number; leased: boolean }[];
}

/** The fewest moves after which `count` hosts have `need` free GPUs (moves of unleased consumers to hosts with room), up to `max`; null beyond. */
function optimum(cloud: Flat, need: number, count: number, max: number): number | null {
  const fits = (hostOf: number[]) => {
    const used = cloud.size.map(() => 0);
    cloud.consumers.forEach((c, i) => {
      used[hostOf[i]!]! += c.gpus;
    });
    return { used, ok: used.filter((u, h) => cloud.size[h]! - u >= need).length >= count };
  };
  let frontier = [cloud.consumers.map((c) => c.host)];
  const seen = new Set(frontier.map((s) => s.join()));
  for (let moves = 0; moves <= max; moves += 1) {
    const next: number[][] = [];
    for (const state of frontier) {
      const { used, ok } = fits(state);
      if (ok) return moves;
      cloud.consumers.forEach((c, i) => {
        if (c.leased) return;
        for (let h = 0; h < cloud.size.length; h += 1) {
          if (h === state[i] || cloud.size[h]! - used[h]! < c.gpus) continue;
          const moved = [...state];
          moved[i] = h;
          const key = moved.join();
          if (!seen.has(key)) {
            seen.add(key);
            next.push(moved);
          }
        }
      });
    }
    frontier = next;
  }
  return null;
}

describe('GET /ext/defrag over random clouds', () => {
  it(`plans that work, near the optimum (${CASES} flat clouds, ${Math.floor(CASES / 3)} nested)`, async () => {
    let feasible = 0;
    let optimal = 0;
    let offByOne = 0;
    let moved = 0;
    for (let seed = 1; seed <= CASES + Math.floor(CASES / 3); seed += 1) {
      const r = random(seed * 7919);
      const nested = seed > CASES;
      // No search time budget: the candidates a plan is checked against are never cut short by load.
      t = await makeTestApp({ PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS: '0' });
      const app = t;
      const cloud: Flat = { size: [], consumers: [] };
      const hosts: string[] = [];
      const gpusOf: string[][] = [];
      const hostCount = r.int(2, 4);
      for (let h = 0; h < hostCount; h += 1) {
        if (nested) {
          const root = await provider(app);
          const children = [
            await provider(app, { parent: root, inventory: { VGPU: { total: 4 } } }),
            await provider(app, { parent: root, inventory: { VGPU: { total: 4 } } }),
          ];
          hosts.push(root);
          gpusOf.push(children);
        } else {
          const size = r.int(4, 8);
          cloud.size.push(size);
          const host = await provider(app, { inventory: { VGPU: { total: size } } });
          hosts.push(host);
          gpusOf.push([host]);
        }
      }
      const consumers = r.int(4, 10);
      for (let i = 0; i < consumers; i += 1) {
        const h = r.int(0, hostCount - 1);
        const gpus = r.chance(0.7) ? 1 : 2;
        const target = gpusOf[h]![r.int(0, gpusOf[h]!.length - 1)]!;
        const uuid = r.uuid();
        if ((await claim(app, { [target]: { resources: { VGPU: gpus } } }, uuid)).status !== 204) continue;
        const leased = r.chance(0.15);
        if (leased) expect((await app.call('PUT', `/ext/leases/${uuid}`, { body: { seconds: 600 } })).status).toBe(200);
        cloud.consumers.push({ host: h, gpus, leased });
      }
      // Mostly a size no host has free now, so that a plan needs moves.
      const used = cloud.size.map((_, h) => cloud.consumers.filter((c) => c.host === h).reduce((sum, c) => sum + c.gpus, 0));
      const mostFree = Math.max(0, ...cloud.size.map((size, h) => size - used[h]!));
      const need = nested ? r.int(2, 4) : Math.max(1, Math.min(8, mostFree + r.int(0, 2)));
      const count = r.int(1, 2);
      const maxMoves = r.int(1, 3);
      const query = `resources=VGPU:${need}&count=${count}&max_moves=${maxMoves}`;
      const rows = await everyRow(app.deps.store.client);
      const plan = await defrag(app, query);
      expect(await everyRow(app.deps.store.client)).toEqual(rows);
      const context = `seed ${seed} ${query} ${JSON.stringify(cloud)}`;
      expect(plan.moves.length, context).toBeLessThanOrEqual(maxMoves);
      if (plan.feasible) {
        feasible += 1;
        if (plan.moves.length) moved += 1;
        await applyPlan(app, plan);
        expect((await candidates(app, `resources=VGPU:${need}`)).length, context).toBeGreaterThanOrEqual(count);
      }
      if (!nested) {
        const best = optimum(cloud, need, count, maxMoves);
        if (best !== null) expect(plan.feasible, context).toBe(true);
        if (plan.feasible) {
          expect(best, context).not.toBeNull();
          expect(plan.moves.length, context).toBeLessThanOrEqual(best! + 1);
          if (plan.moves.length === best) optimal += 1;
          else offByOne += 1;
        }
      }
      t.close();
      t = null;
    }
    console.info(
      `defrag random: ${feasible} feasible plans applied (${moved} with moves), ${optimal} at the optimum, ${offByOne} one move over`,
    );
    expect(moved).toBeGreaterThan(CASES / 8);
  }, 1_800_000);
});
