// POST /ext/preemptions: one write batch that leases the victims for their
// grace and nominates what they free to the preemptor (a hold of its
// project); 16 concurrent preemptions over the same victims: one wins;
// no third party takes nominated capacity; bad input changes nothing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { endsOf, PREEMPTOR_PROJECT, preemptionBody, preemptionHelpers } from './helpers.js';
import { random as seeded } from '../helpers/random.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

const { claimAs, victimOn } = preemptionHelpers(() => t);

async function count(table: string): Promise<number> {
  const [r] = await t.deps.store.readBatch([{ sql: `SELECT COUNT(*) AS n FROM ${table}`, args: [] }]);
  return Number(r!.rows[0]!.n);
}

const body = preemptionBody;

interface Preemption {
  id: string;
  hold_uuid: string;
  victims: { consumer_uuid: string; priority: number; frees: Record<string, { resources: Record<string, number> }> }[];
  victims_leased_until: string;
}

describe('POST /ext/preemptions', () => {
  it('leases the victims, nominates the capacity, and the preemptor claims it once they are gone', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const a = await victimOn(host, 4, 1);
    const b = await victimOn(host, 4, 2);
    const preemptor = crypto.randomUUID();
    const res = await t.call('POST', '/ext/preemptions', { body: body(host, [a, b], 8, 10, preemptor) });
    expect(res.status, await res.clone().text()).toBe(201);
    const made = (await res.json()) as Preemption;
    expect(made.victims.map((v) => v.consumer_uuid).sort()).toEqual([a, b].sort());
    expect(made.victims.find((v) => v.consumer_uuid === a)!.frees).toEqual({ [host]: { resources: { VCPU: 4 } } });
    expect(await (await t.call('GET', `/ext/preemptions/${made.id}`)).json()).toEqual(made);
    // Each victim leased until now + grace.
    expect(await endsOf(t, [a, b])).toEqual({ [a]: made.victims_leased_until, [b]: made.victims_leased_until });
    // The reaper deletes the victims; a third party cannot take what they freed.
    for (const v of [a, b]) expect((await t.call('DELETE', `/allocations/${v}`)).status).toBe(204);
    const outsider = await claimAs(crypto.randomUUID(), { [host]: { resources: { VCPU: 1 } } });
    expect(outsider.status).toBe(409);
    // Nor does the candidates search offer it.
    const offered = (await (await t.call('GET', '/allocation_candidates?resources=VCPU:1')).json()) as { allocation_requests: unknown[] };
    expect(offered.allocation_requests).toEqual([]);
    // The preemptor claims with its nomination.
    const claimed = await claimAs(preemptor, { [host]: { resources: { VCPU: 8 } } }, PREEMPTOR_PROJECT, `?ext_hold=${made.hold_uuid}`);
    expect(claimed.status, await claimed.clone().text()).toBe(204);
  });

  it('16 concurrent preemptions over the same victims: one 201, fifteen 409, nobody evicted twice', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const victims = [await victimOn(host, 4, 1), await victimOn(host, 4, 1)];
    const answers = await Promise.all(Array.from({ length: 16 }, () => t.call('POST', '/ext/preemptions', { body: body(host, victims) })));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([201, ...Array(15).fill(409)]);
    for (const r of answers.filter((x) => x.status === 409)) expect((await errorOf(r)).code).toBe('placement.ext.preemption_conflict');
    expect(await count('ext_preemptions')).toBe(1);
    expect(await count('ext_preemption_victims')).toBe(2);
    expect(await count('ext_holds')).toBe(1);
    expect(await count('ext_leases')).toBe(2);
  });

  it('a second preemption over a victim of the first loses with 409', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const a = await victimOn(host, 4, 1);
    const b = await victimOn(host, 4, 1);
    expect((await t.call('POST', '/ext/preemptions', { body: body(host, [a], 4) })).status).toBe(201);
    const second = await t.call('POST', '/ext/preemptions', { body: body(host, [a, b]) });
    expect(second.status).toBe(409);
    expect((await errorOf(second)).code).toBe('placement.ext.preemption_conflict');
    expect(await count('ext_preemption_victims')).toBe(1);
  });

  it('counts an earlier nomination: a second preemptor with other victims does not get the same room', async () => {
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    await victimOn(host, 4, null);
    const a = await victimOn(host, 2, 1);
    const b = await victimOn(host, 2, 1);
    expect((await t.call('POST', '/ext/preemptions', { body: body(host, [a], 2) })).status).toBe(201);
    // b frees 2, but a's 2 are nominated already: 4 does not fit.
    const second = await t.call('POST', '/ext/preemptions', { body: body(host, [b], 4) });
    expect(second.status).toBe(400);
    expect((await errorOf(second)).detail).toContain('does not fit');
    expect((await t.call('POST', '/ext/preemptions', { body: body(host, [b], 2) })).status).toBe(201);
  });

  describe('refuses bad input and writes nothing', () => {
    let host: string;
    let low: string;
    let high: string;
    let none: string;
    beforeEach(async () => {
      host = await provider(t, { inventory: { VCPU: { total: 12 } } });
      low = await victimOn(host, 4, 1);
      high = await victimOn(host, 4, 10);
      none = await victimOn(host, 4, null);
    });

    it.each([
      ['an unknown victim', () => body(host, [crypto.randomUUID()], 4), 404, 'No consumer'],
      ['a victim without priority', () => body(host, [none], 4), 400, 'not preemptible'],
      ['a victim at the preemptor priority', () => body(host, [high], 4), 400, 'not below'],
      ['a preemptor that does not fit even with its victims', () => body(host, [low], 8), 400, 'does not fit'],
      ['a preemptor without priority', () => body(host, [low], 4, null), 400, 'no priority'],
      ['an out of range priority', () => body(host, [low], 4, -1), 400, 'JSON does not validate'],
      ['no victims', () => body(host, [], 4), 400, 'JSON does not validate'],
      ['an unknown provider', () => body(crypto.randomUUID(), [low], 4), 400, 'no inventory'],
    ])('%s', async (_, make, status, detail) => {
      const res = await t.call('POST', '/ext/preemptions', { body: make() });
      expect(res.status, await res.clone().text()).toBe(status);
      expect((await errorOf(res)).detail).toContain(detail);
      for (const table of ['ext_preemptions', 'ext_preemption_victims', 'ext_holds', 'ext_leases']) expect(await count(table)).toBe(0);
    });
  });

  it('is admin only', async () => {
    const res = await t.call('POST', '/ext/preemptions', {
      body: {},
      headers: { 'x-roles': 'member', 'x-auth-token': 'user' },
    });
    expect(res.status).toBe(403);
  });
});

describe('nominated capacity, random runs', () => {
  it('no third party ever takes it: outsiders race the victims going, and the preemptor always claims at the end', async () => {
    for (let seed = 1; seed <= 40; seed += 1) {
      const r = seeded(seed);
      const total = 8 + r.below(17);
      const host = await provider(t, { inventory: { VCPU: { total } } });
      let used = 0;
      const victims: { uuid: string; vcpu: number }[] = [];
      for (let i = 0; i < 1 + r.below(5) && used < total; i += 1) {
        const vcpu = Math.min(1 + r.below(4), total - used);
        victims.push({ uuid: await victimOn(host, vcpu, r.below(5)), vcpu });
        used += vcpu;
      }
      if (used < total && r.chance(0.5)) {
        const vcpu = 1 + r.below(total - used);
        await victimOn(host, vcpu, null);
        used += vcpu;
      }
      const chosen = victims.filter(() => r.chance(0.7));
      if (!chosen.length) chosen.push(victims[0]!);
      const freed = chosen.reduce((s, v) => s + v.vcpu, 0);
      const want = Math.max(1, total - used + freed - r.below(2));
      const preemptor = crypto.randomUUID();
      const made = await t.call('POST', '/ext/preemptions', {
        body: body(
          host,
          chosen.map((v) => v.uuid),
          want,
          10,
          preemptor,
        ),
      });
      expect(made.status, `seed ${seed}: ${await made.clone().text()}`).toBe(201);
      const { hold_uuid } = (await made.json()) as Preemption;
      // Outsiders claim while the victims go, all at once.
      await Promise.all([
        ...chosen.map((v) => t.call('DELETE', `/allocations/${v.uuid}`)),
        ...Array.from({ length: 1 + r.below(6) }, () => claimAs(crypto.randomUUID(), { [host]: { resources: { VCPU: 1 + r.below(4) } } })),
      ]);
      const claimed = await claimAs(preemptor, { [host]: { resources: { VCPU: want } } }, PREEMPTOR_PROJECT, `?ext_hold=${hold_uuid}`);
      expect(claimed.status, `seed ${seed}: ${await claimed.clone().text()}`).toBe(204);
    }
  });
});
