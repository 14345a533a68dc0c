// GET /ext/gang_candidates and POST /ext/gangs through the API: members on
// distinct hosts of one aggregate, tightest domain first, the whole query
// obeyed per member, sharing providers added up, all-or-none claims.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { claim, endsOf, PROJECT, USER } from './helpers.js';
import { claimGang, gangCandidates, hostsOf } from './gangs-helpers.js';
import { countBatches } from '../write-model/count-batches.js';

let t: TestApp;
beforeEach(async () => {
  t = await makeTestApp();
});
afterEach(() => t.close());

const uuids = (n: number) => Array.from({ length: n }, () => crypto.randomUUID()).sort();

/** `sizes[i]` hosts of 4 VCPU in rack i. */
async function racks(sizes: number[], inventory = { VCPU: { total: 4 } }): Promise<{ aggs: string[]; hosts: string[][] }> {
  const aggs = uuids(sizes.length);
  const hosts: string[][] = [];
  for (const [i, size] of sizes.entries()) {
    hosts.push([]);
    for (let h = 0; h < size; h += 1) hosts[i]!.push(await provider(t, { inventory, aggregates: [aggs[i]!] }));
  }
  return { aggs, hosts };
}

describe('GET /ext/gang_candidates', () => {
  it('answers one gang per domain that fits, on distinct hosts of it, tightest domain first', async () => {
    const { aggs, hosts } = await racks([4, 2, 3, 1]);
    const body = await gangCandidates(t, 'count=2&resources=VCPU:2');
    // Rack 3 (1 host) cannot hold 2. Free after: rack1 0, rack2 1, rack0 2.
    expect(body.gangs.map((g) => g.domain)).toEqual([aggs[1], aggs[2], aggs[0]]);
    expect(body.incomplete).toBeUndefined();
    for (const [i, gang] of body.gangs.entries()) {
      const members = hostsOf(gang);
      expect(members).toHaveLength(2);
      expect(new Set(members).size).toBe(2);
      const rack = hosts[aggs.indexOf(gang.domain!)]!;
      for (const host of members) expect(rack).toContain(host);
      if (i === 0) expect(new Set(members)).toEqual(new Set(hosts[1]));
    }
    expect((await gangCandidates(t, 'count=2&resources=VCPU:2&limit=1')).gangs).toHaveLength(1);
    expect((await gangCandidates(t, 'count=5&resources=VCPU:2')).gangs).toEqual([]);
    // ext_domain=any: all 10 hosts are candidates.
    const any = await gangCandidates(t, 'count=10&resources=VCPU:2&ext_domain=any');
    expect(any.gangs).toHaveLength(1);
    expect(any.gangs[0]!.domain).toBeNull();
    expect(new Set(hostsOf(any.gangs[0]!)).size).toBe(10);
    // ext_domain_member_of restricts the domains.
    const only = await gangCandidates(t, `count=2&resources=VCPU:2&ext_domain_member_of=in:${aggs[0]},${aggs[3]}`);
    expect(only.gangs.map((g) => g.domain)).toEqual([aggs[0]]);
  });

  it('counts only hosts where the whole query fits now: usage, traits, granular groups, taints', async () => {
    const [agg] = uuids(1);
    const a = await provider(t, { inventory: { VCPU: { total: 4 } }, traits: ['HW_CPU_X86_AVX2'], aggregates: [agg!] });
    const b = await provider(t, { inventory: { VCPU: { total: 4 } }, traits: ['HW_CPU_X86_AVX2'], aggregates: [agg!] });
    const c = await provider(t, { inventory: { VCPU: { total: 4 } }, aggregates: [agg!] });
    expect((await gangCandidates(t, 'count=3&resources=VCPU:1')).gangs).toHaveLength(1);
    expect((await gangCandidates(t, 'count=3&resources=VCPU:1&required=HW_CPU_X86_AVX2')).gangs).toEqual([]);
    expect(hostsOf((await gangCandidates(t, 'count=2&resources1=VCPU:1&required1=HW_CPU_X86_AVX2')).gangs[0]!).sort()).toEqual(
      [a, b].sort(),
    );
    expect((await claim(t, { [b]: { resources: { VCPU: 3 } } })).status).toBe(204);
    expect((await gangCandidates(t, 'count=2&resources=VCPU:2&required=HW_CPU_X86_AVX2')).gangs).toEqual([]);
    expect(new Set(hostsOf((await gangCandidates(t, 'count=2&resources=VCPU:2')).gangs[0]!))).toEqual(new Set([a, c]));
    // A NoSchedule taint takes c out unless tolerated.
    const taint = await t.call('PUT', `/ext/resource_providers/${c}/taints`, {
      body: { resource_provider_generation: 2, taints: [{ key: 'maintenance', value: '', effect: 'NoSchedule', reason: 'test' }] },
    });
    expect(taint.status, await taint.clone().text()).toBe(200);
    expect((await gangCandidates(t, 'count=2&resources=VCPU:2')).gangs).toEqual([]);
    expect((await gangCandidates(t, 'count=2&resources=VCPU:2&ext_tolerate=maintenance')).gangs).toHaveLength(1);
  });

  it('adds up the members on a sharing provider: the gang fits only as far as the shared pool does', async () => {
    const [agg] = uuids(1);
    for (let i = 0; i < 4; i += 1) await provider(t, { inventory: { VCPU: { total: 4 } }, aggregates: [agg!] });
    const pool = await provider(t, { inventory: { DISK_GB: { total: 100 } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [agg!] });
    const three = await gangCandidates(t, 'count=3&resources=VCPU:1,DISK_GB:30');
    expect(three.gangs).toHaveLength(1);
    for (const r of three.gangs[0]!.allocation_requests) expect(r.allocations[pool]).toEqual({ resources: { DISK_GB: 30 } });
    expect(three.gangs[0]!.provider_summaries[pool]!.resources.DISK_GB).toEqual({ capacity: 100, used: 0 });
    // Each host alone fits 30 GB, but four members need 120 of 100.
    expect((await gangCandidates(t, 'count=4&resources=VCPU:1,DISK_GB:30')).gangs).toEqual([]);
    expect((await claimGang(t, three.gangs[0]!)).status).toBe(204);
    expect((await gangCandidates(t, 'count=1&resources=VCPU:1,DISK_GB:30')).gangs).toEqual([]);
  });

  it('places members on GPU children of distinct hosts (nested trees, 1.29 summaries)', async () => {
    const [agg] = uuids(1);
    const roots: string[] = [];
    for (let h = 0; h < 3; h += 1) {
      const root = await provider(t, { inventory: { VCPU: { total: 8 } }, aggregates: [agg!] });
      roots.push(root);
      for (let g = 0; g < 2; g += 1) await provider(t, { parent: root, inventory: { PGPU: { total: 1 } } });
    }
    const body = await gangCandidates(t, 'count=3&resources=VCPU:1&resources_G=PGPU:1');
    expect(body.gangs).toHaveLength(1);
    expect(new Set(hostsOf(body.gangs[0]!))).toEqual(new Set(roots));
    expect((await claimGang(t, body.gangs[0]!)).status).toBe(204);
    expect((await claimGang(t, (await gangCandidates(t, 'count=3&resources=VCPU:1&resources_G=PGPU:1')).gangs[0]!)).status).toBe(204);
    expect((await gangCandidates(t, 'count=1&resources=VCPU:1&resources_G=PGPU:1')).gangs).toEqual([]);
  });

  it('answers bad input with placement 400 envelope, and 404 below 1.25', async () => {
    for (const query of [
      'resources=VCPU:1',
      'count=0&resources=VCPU:1',
      'count=x&resources=VCPU:1',
      'count=2&ext_domain=rack&resources=VCPU:1',
      'count=2&resources=VCPU:1&ext_domain_member_of=in:nope',
      'count=2&resources=VCPU:1&bogus=1',
      'count=2&resources=VCPU:x',
    ]) {
      const res = await t.call('GET', `/ext/gang_candidates?${query}`);
      expect(res.status, query).toBe(400);
      expect((await errorOf(res)).detail, query).toBeTruthy();
    }
    expect((await t.call('GET', '/ext/gang_candidates?count=2&resources=VCPU:1', { version: '1.24' })).status).toBe(404);
  });
});

describe('POST /ext/gangs', () => {
  it('claims every member or none: a member that no longer fits is a 409 naming it, and nothing is written', async () => {
    const { hosts } = await racks([3]);
    const gang = (await gangCandidates(t, 'count=3&resources=VCPU:3')).gangs[0]!;
    // Someone takes 2 VCPU on the third member's host meanwhile.
    const late = Object.keys(gang.allocation_requests[2]!.allocations)[0]!;
    expect((await claim(t, { [late]: { resources: { VCPU: 2 } } })).status).toBe(204);
    const consumers = uuids(3);
    const res = await claimGang(t, gang, {}, consumers);
    expect(res.status).toBe(409);
    const detail = (await errorOf(res)).detail;
    expect(detail).toContain(consumers[2]);
    expect(detail).not.toContain(consumers[0]);
    for (const consumer of consumers) {
      const allocs = (await (await t.call('GET', `/allocations/${consumer}`)).json()) as { allocations: object };
      expect(allocs.allocations).toEqual({});
    }
    for (const host of hosts[0]!) {
      const usages = (await (await t.call('GET', `/resource_providers/${host}/usages`)).json()) as { usages: { VCPU: number } };
      expect(usages.usages.VCPU).toBe(host === late ? 2 : 0);
    }
  });

  it('refuses a gang whose members are not all inside the domain it names, before writing anything', async () => {
    const { aggs, hosts } = await racks([2, 1]);
    const gang = (await gangCandidates(t, `count=2&resources=VCPU:1&ext_domain_member_of=in:${aggs[0]}`)).gangs[0]!;
    const outsider = { allocations: { [hosts[1]![0]!]: { resources: { VCPU: 1 } } } };
    const split = { ...gang, allocation_requests: [gang.allocation_requests[0]!, outsider] };
    const consumers = uuids(2);
    const res = await claimGang(t, split, {}, consumers);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain(consumers[1]);
    for (const consumer of consumers) {
      const allocs = (await (await t.call('GET', `/allocations/${consumer}`)).json()) as { allocations: object };
      expect(allocs.allocations).toEqual({});
    }
    expect((await claimGang(t, gang)).status).toBe(204);
  });

  it('refuses a member with a stale consumer generation, names it, and writes nothing', async () => {
    await racks([2]);
    const gang = (await gangCandidates(t, 'count=2&resources=VCPU:1')).gangs[0]!;
    const [first, second] = uuids(2);
    expect((await claim(t, gang.allocation_requests[1]!.allocations, second)).status).toBe(204);
    const res = await claimGang(t, gang, {}, [first!, second!]);
    expect(res.status).toBe(409);
    // The write kernel says which entry broke the claim: the member whose generation is stale, not every member that sent the same one.
    const detail = (await errorOf(res)).detail;
    expect(detail).toContain(`member ${second}:`);
    expect(detail).not.toContain(first);
    const allocs = (await (await t.call('GET', `/allocations/${first}`)).json()) as { allocations: object };
    expect(allocs.allocations).toEqual({});
  });

  it('puts one lease on the whole gang, and the sweep releases it whole', async () => {
    await racks([3]);
    const gang = (await gangCandidates(t, 'count=3&resources=VCPU:1')).gangs[0]!;
    const consumers = uuids(3);
    const res = await claimGang(t, gang, { lease_seconds: 60 }, consumers);
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { expires_at: string };
    const ends = await endsOf(t, consumers);
    expect(Object.keys(ends).sort()).toEqual(consumers);
    expect(new Set(Object.values(ends))).toEqual(new Set([body.expires_at]));
    const { sweepExpiredLeases } = await import('../../src/ext/allocation-ends.js');
    const swept = await sweepExpiredLeases(t.deps.store, Date.parse(body.expires_at) + 1);
    expect(swept.released.sort()).toEqual(consumers);
    expect((await gangCandidates(t, 'count=3&resources=VCPU:4')).gangs).toHaveLength(1);
  });

  it("writes the lease in the claim's own batch: a lease that cannot be written leaves no member claimed", async () => {
    await racks([2]);
    const gang = (await gangCandidates(t, 'count=2&resources=VCPU:1')).gangs[0]!;
    const leased = uuids(2);
    const writes = countBatches(t.deps.store);
    expect((await claimGang(t, gang, { lease_seconds: 60 }, leased)).status).toBe(200);
    expect(writes.writes).toBe(1);
    // A crash between the claim and its lease, as the store sees it: the lease's write fails.
    await t.deps.store.writeBatch(
      ['INSERT', 'UPDATE'].map(
        (op) => `CREATE TRIGGER no_lease_${op} BEFORE ${op} ON ext_leases BEGIN SELECT RAISE(ABORT, 'lease refused'); END`,
      ),
    );
    const usedBy = async (consumer: string) =>
      ((await (await t.call('GET', `/allocations/${consumer}`)).json()) as { allocations: Record<string, { resources: { VCPU: number } }> })
        .allocations;
    // New members (the one-batch claim).
    const consumers = uuids(2);
    expect((await claimGang(t, gang, { lease_seconds: 60 }, consumers)).status).toBe(500);
    for (const consumer of consumers) expect(await usedBy(consumer)).toEqual({});
    // Members rewritten (the ordinary path: read, decide, write).
    const members = Object.fromEntries(
      leased.map((uuid, i) => {
        const host = Object.keys(gang.allocation_requests[i]!.allocations)[0]!;
        return [
          uuid,
          {
            allocations: { [host]: { resources: { VCPU: 2 } } },
            project_id: PROJECT,
            user_id: USER,
            consumer_generation: 1,
            consumer_type: 'INSTANCE',
          },
        ];
      }),
    );
    expect((await t.call('POST', '/ext/gangs', { body: { members, lease_seconds: 60 } })).status).toBe(500);
    for (const consumer of leased) expect(Object.values(await usedBy(consumer)).map((a) => a.resources.VCPU)).toEqual([1]);
  });

  it('racing gang claims on the same hosts never overcommit: exactly one wins', async () => {
    await racks([4]);
    const gang = (await gangCandidates(t, 'count=4&resources=VCPU:3')).gangs[0]!;
    const results = await Promise.all(Array.from({ length: 6 }, () => claimGang(t, gang)));
    expect(results.map((r) => r.status).sort()).toEqual([204, 409, 409, 409, 409, 409]);
    expect((await gangCandidates(t, 'count=1&resources=VCPU:2')).gangs).toEqual([]);
  });
});

describe('GET /ext/headroom?count=N', () => {
  it('counts per domain how many more gangs of N distinct hosts fit, proved by claiming them', async () => {
    // Rack 0: 3 hosts taking 2 members each -> 3 gangs of 2; rack 1: 2 hosts taking 1 -> 1 gang; rack 2: 1 host -> none.
    const aggs = uuids(3);
    const hosts: string[][] = [[], [], []];
    for (let h = 0; h < 3; h += 1) hosts[0]!.push(await provider(t, { inventory: { VCPU: { total: 4 } }, aggregates: [aggs[0]!] }));
    for (let h = 0; h < 2; h += 1) hosts[1]!.push(await provider(t, { inventory: { VCPU: { total: 3 } }, aggregates: [aggs[1]!] }));
    hosts[2]!.push(await provider(t, { inventory: { VCPU: { total: 8 } }, aggregates: [aggs[2]!] }));
    const res = await t.call('GET', '/ext/headroom?count=2&resources=VCPU:2');
    expect(res.status, await res.clone().text()).toBe(200);
    const body = (await res.json()) as { count: number; domains: { domain: string; gangs: number }[]; total: number };
    expect(body.count).toBe(2);
    expect(body.total).toBe(3 * 2 + 2 * 1 + 4);
    expect(body.domains).toEqual([
      { domain: aggs[0], gangs: 3 },
      { domain: aggs[1], gangs: 1 },
    ]);
    for (const [i, expected] of [3, 1].entries()) {
      let claimed = 0;
      for (;;) {
        const found = await gangCandidates(t, `count=2&resources=VCPU:2&ext_domain_member_of=in:${aggs[i]}`);
        if (!found.gangs.length) break;
        expect((await claimGang(t, found.gangs[0]!)).status).toBe(204);
        claimed += 1;
      }
      expect(claimed).toBe(expected);
    }
    const after = (await (await t.call('GET', '/ext/headroom?count=2&resources=VCPU:2')).json()) as { domains: unknown[] };
    expect(after.domains).toEqual([]);
    expect((await t.call('GET', '/ext/headroom?count=0&resources=VCPU:2')).status).toBe(400);
  });

  it('gangsThatFit: k gangs need k x N slots, at most k on one host', async () => {
    const { gangsThatFit } = await import('../../src/ext/headroom/gangs.js');
    expect(gangsThatFit([1, 1, 2], 2)).toBe(2);
    expect(gangsThatFit([5, 0, 1], 2)).toBe(1);
    expect(gangsThatFit([3, 3, 3, 3], 4)).toBe(3);
    expect(gangsThatFit([9], 1)).toBe(9);
    expect(gangsThatFit([9], 2)).toBe(0);
    expect(gangsThatFit([], 2)).toBe(0);
  });
});
