// GET /ext/preemption_candidates over HTTP: victims, their cost and order;
// on random clouds, each request's victims equal a brute-force optimum over
// what the API shows (inventories, allocations, priorities), never a victim
// at or above P, victim-free requests first, every tree that could fit with
// evictions present; bad queries answered 400; stock answers untouched.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { PROJECT, USER } from './helpers.js';
import { random as seeded } from '../helpers/random.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

interface Victim {
  consumer_uuid: string;
  project_id: string;
  priority: number;
  frees: Record<string, { resources: Record<string, number> }>;
}
interface Cost {
  highest_priority: number;
  priority_sum: number;
  victims: number;
  left_over: number;
}
interface Body {
  allocation_requests: {
    allocations: Record<string, { resources: Record<string, number> }>;
    victims: Victim[];
    cost: Cost;
    method: string;
  }[];
  provider_summaries: Record<string, unknown>;
  preemption: { priority: number; methods: string[] };
}

async function search(query: string): Promise<Body> {
  const res = await t.call('GET', `/ext/preemption_candidates?${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Body;
}

async function consumerOn(host: string, resources: Record<string, number>, priority: number | null, project = PROJECT): Promise<string> {
  const consumer = crypto.randomUUID();
  const res = await t.call('PUT', `/allocations/${consumer}`, {
    body: {
      allocations: { [host]: { resources } },
      project_id: project,
      user_id: USER,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });
  expect(res.status, await res.clone().text()).toBe(204);
  if (priority !== null) expect((await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority } })).status).toBe(200);
  return consumer;
}

describe('GET /ext/preemption_candidates', () => {
  it('answers a free host with no victims first, then the cheapest evictions', async () => {
    const full = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const cheap = await consumerOn(full, { VCPU: 4 }, 1);
    await consumerOn(full, { VCPU: 4 }, 5);
    const other = await provider(t, { inventory: { VCPU: { total: 8 } } });
    await consumerOn(other, { VCPU: 8 }, 2);
    const free = await provider(t, { inventory: { VCPU: { total: 8 } } });
    await consumerOn(free, { VCPU: 2 }, null);
    const body = await search('resources=VCPU:4&ext_priority=10');
    expect(body.allocation_requests.map((r) => Object.keys(r.allocations)[0])).toEqual([free, full, other]);
    expect(body.allocation_requests[0]!.victims).toEqual([]);
    expect(body.allocation_requests[1]!.victims.map((v) => [v.consumer_uuid, v.priority, v.project_id])).toEqual([[cheap, 1, PROJECT]]);
    expect(body.allocation_requests[1]!.victims[0]!.frees).toEqual({ [full]: { resources: { VCPU: 4 } } });
    expect(body.allocation_requests[1]!.cost).toEqual({ highest_priority: 1, priority_sum: 1, victims: 1, left_over: 0 });
    expect(body.allocation_requests[2]!.cost).toMatchObject({ highest_priority: 2, victims: 1, left_over: 4 });
    expect(body.allocation_requests[1]!.method).toBe('exact');
    // The summaries show usage as it is now.
    expect(body.provider_summaries[full]).toMatchObject({ resources: { VCPU: { capacity: 8, used: 8 } } });
    // limit keeps the best.
    expect((await search('resources=VCPU:4&ext_priority=10&limit=2')).allocation_requests).toHaveLength(2);
    // limit=1: the victim-free host alone (the stock search fills it).
    const one = await search('resources=VCPU:4&ext_priority=10&limit=1');
    expect(one.allocation_requests.map((r) => [Object.keys(r.allocations)[0], r.victims, r.cost.victims])).toEqual([[free, [], 0]]);
    expect(Object.keys(one.provider_summaries)).toEqual([free]);
  });

  it('never evicts at or above P, nor a consumer without a priority', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    await consumerOn(host, { VCPU: 4 }, 3);
    await consumerOn(host, { VCPU: 4 }, null);
    expect((await search('resources=VCPU:4&ext_priority=3')).allocation_requests).toEqual([]);
    expect((await search('resources=VCPU:4&ext_priority=4')).allocation_requests).toHaveLength(1);
    // Needs both: one is not preemptible.
    expect((await search('resources=VCPU:8&ext_priority=100')).allocation_requests).toEqual([]);
  });

  it('counts what an earlier preemption nominated, and does not offer its victims again', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const a = await consumerOn(host, { VCPU: 4 }, 1);
    const b = await consumerOn(host, { VCPU: 4 }, 2);
    const made = await t.call('POST', '/ext/preemptions', {
      body: {
        preemptor: {
          consumer_uuid: crypto.randomUUID(),
          project_id: PROJECT,
          priority: 10,
          allocations: { [host]: { resources: { VCPU: 4 } } },
        },
        victims: [a],
        grace_seconds: 60,
      },
    });
    expect(made.status).toBe(201);
    const body = await search('resources=VCPU:4&ext_priority=10');
    expect(body.allocation_requests.map((r) => r.victims.map((v) => v.consumer_uuid))).toEqual([[b]]);
    // Once a is gone its room is still nominated: no victim-free request.
    expect((await t.call('DELETE', `/allocations/${a}`)).status).toBe(204);
    expect((await search('resources=VCPU:4&ext_priority=10')).allocation_requests.map((r) => r.victims.length)).toEqual([1]);
  });

  it('above 16 evictable consumers in a tree goes greedy, says so, and still evicts a minimal set', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 40 } } });
    const held = new Map<string, number>();
    for (let i = 0; i < 20; i += 1) held.set(await consumerOn(host, { VCPU: 2 }, i % 3), 2);
    const body = await search('resources=VCPU:5&ext_priority=10');
    const [only] = body.allocation_requests;
    expect(only!.method).toBe('greedy');
    expect(body.preemption.methods).toEqual(['greedy']);
    // 5 VCPU need three of the 2-VCPU consumers, all of the lowest priority.
    expect(only!.victims.map((v) => v.priority)).toEqual([0, 0, 0]);
    expect(only!.cost).toEqual({ highest_priority: 0, priority_sum: 0, victims: 3, left_over: 1 });
  });

  it('takes a project default', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 4 } } });
    const spot = '6b4e8a0c-0000-4000-8000-0000000000aa';
    const victim = await consumerOn(host, { VCPU: 4 }, null, spot);
    expect((await search('resources=VCPU:1&ext_priority=1')).allocation_requests).toEqual([]);
    await t.call('PUT', `/ext/priorities/${spot}`, { body: { priority: 0 } });
    const body = await search('resources=VCPU:1&ext_priority=1');
    expect(body.allocation_requests[0]!.victims.map((v) => [v.consumer_uuid, v.project_id, v.priority])).toEqual([[victim, spot, 0]]);
  });

  it.each([
    ['resources=VCPU:1', "'ext_priority' is required"],
    ['resources=VCPU:1&ext_priority=-1', "'ext_priority' must be an integer"],
    ['resources=VCPU:1&ext_priority=x', "'ext_priority' must be an integer"],
    ['resources=VCPU:1&ext_priority=1&ext_priority=2', "'ext_priority' is required, once"],
  ])('refuses %s with 400', async (query, detail) => {
    const res = await t.call('GET', `/ext/preemption_candidates?${query}`);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain(detail);
  });

  it('refuses what /allocation_candidates refuses, as it does', async () => {
    const res = await t.call('GET', '/ext/preemption_candidates?resources=NOPE:1&ext_priority=1');
    expect(res.status).toBe(400);
    const stock = await t.call('GET', '/allocation_candidates?resources=NOPE:1');
    expect((await errorOf(res)).detail).toBe((await errorOf(stock)).detail);
    expect((await t.call('GET', '/allocation_candidates?resources=VCPU:1&ext_priority=1')).status).toBe(400);
  });

  it('is admin only', async () => {
    const res = await t.call('GET', '/ext/preemption_candidates?resources=VCPU:1&ext_priority=1', {
      headers: { 'x-roles': 'member', 'x-auth-token': 'user' },
    });
    expect(res.status).toBe(403);
  });
});

interface Held {
  consumer: string;
  host: string;
  vcpu: number;
  mem: number;
  /** null: not preemptible. */
  priority: number | null;
}

const costKey = (c: Cost) => [c.highest_priority, c.priority_sum, c.victims, c.left_over];
const lexLess = (a: number[], b: number[]) => {
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
};

/** The best cost of evicting some of `held` (all below P) so that vcpu/mem fit on a host: brute force over every subset. */
function bruteForce(
  held: Held[],
  capacity: { vcpu: number; mem: number },
  want: { vcpu: number; mem: number },
  P: number,
): number[] | null {
  const usedV = held.reduce((s, h) => s + h.vcpu, 0);
  const usedM = held.reduce((s, h) => s + h.mem, 0);
  const needV = usedV + want.vcpu - capacity.vcpu;
  const needM = usedM + want.mem - capacity.mem;
  const pool = held.filter((h) => h.priority !== null && h.priority < P);
  let best: number[] | null = null;
  for (let mask = 0; mask < 1 << pool.length; mask += 1) {
    const set = pool.filter((_, i) => mask & (1 << i));
    const fv = set.reduce((s, h) => s + h.vcpu, 0);
    const fm = set.reduce((s, h) => s + h.mem, 0);
    if (fv < needV || fm < needM) continue;
    const leftOver = (needV > 0 ? fv - needV : 0) + (needM > 0 ? fm - needM : 0);
    const cost = [
      set.length ? Math.max(...set.map((h) => h.priority!)) : -1,
      set.reduce((s, h) => s + h.priority!, 0),
      set.length,
      leftOver,
    ];
    if (!best || lexLess(cost, best)) best = cost;
  }
  return best;
}

describe('GET /ext/preemption_candidates on random clouds', () => {
  it('equals brute force per host, never evicts at or above P, and puts victim-free hosts first', async () => {
    let withVictims = 0;
    for (let seed = 1; seed <= 30; seed += 1) {
      const r = seeded(seed);
      const hosts: { uuid: string; vcpu: number; mem: number }[] = [];
      const held: Held[] = [];
      for (let h = 0; h < 2 + r.below(3); h += 1) {
        const cap = { vcpu: 8 + r.below(9), mem: 1024 * (4 + r.below(5)) };
        const uuid = await provider(t, { inventory: { VCPU: { total: cap.vcpu }, MEMORY_MB: { total: cap.mem } } });
        hosts.push({ uuid, ...cap });
        let usedV = 0;
        let usedM = 0;
        for (let c = 0; c < 1 + r.below(8); c += 1) {
          const vcpu = Math.min(1 + r.below(4), cap.vcpu - usedV);
          const mem = Math.min(512 * (1 + r.below(4)), cap.mem - usedM);
          if (vcpu <= 0 || mem <= 0) break;
          const priority = r.chance(0.15) ? null : r.below(8);
          held.push({ consumer: await consumerOn(uuid, { VCPU: vcpu, MEMORY_MB: mem }, priority), host: uuid, vcpu, mem, priority });
          usedV += vcpu;
          usedM += mem;
        }
      }
      const P = 1 + r.below(8);
      const want = { vcpu: 1 + r.below(8), mem: 512 * (1 + r.below(8)) };
      const body = await search(`resources=VCPU:${want.vcpu},MEMORY_MB:${want.mem}&ext_priority=${P}`);
      const answered = new Map(body.allocation_requests.map((r) => [Object.keys(r.allocations)[0]!, r]));
      for (const host of hosts) {
        const expected = bruteForce(
          held.filter((h) => h.host === host.uuid),
          host,
          want,
          P,
        );
        const got = answered.get(host.uuid);
        if (!expected) {
          expect(got, `seed ${seed} host ${host.uuid}`).toBeUndefined();
          continue;
        }
        expect(got, `seed ${seed}`).toBeDefined();
        expect(costKey(got!.cost), `seed ${seed}`).toEqual(expected);
        for (const v of got!.victims) {
          expect(v.priority).toBeLessThan(P);
          expect(held.find((h) => h.consumer === v.consumer_uuid)?.host).toBe(host.uuid);
        }
        if (got!.victims.length) withVictims += 1;
      }
      // Order: victim-free first, then by cost.
      const keys = body.allocation_requests.map((r) => costKey(r.cost));
      for (let i = 1; i < keys.length; i += 1) expect(lexLess(keys[i]!, keys[i - 1]!), `seed ${seed}`).toBe(false);
      for (const id of held.map((h) => h.consumer)) await t.call('DELETE', `/allocations/${id}`);
      for (const host of hosts) await t.call('DELETE', `/resource_providers/${host.uuid}`);
    }
    expect(withVictims).toBeGreaterThan(10);
  });
});
