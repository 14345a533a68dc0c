// GET /ext/gang_candidates against a brute-force reference over small random
// clouds: for every aggregate, every subset of its hosts of the gang's size
// is tried (each host must fit the request, the members' disk on a shared
// pool must add up within it); the API must agree on whether a gang fits in
// each domain and on the order (tightest domain first: fewest hosts where a
// member fits left after the gang, then the aggregate's uuid), and every gang
// it answers must be valid in the reference model. Many clouds live in one
// database; each query names its cloud's aggregates (ext_domain_member_of),
// so no other cloud's hosts can be in a domain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { provider } from '../helpers/providers.js';
import { claim } from './helpers.js';
import { type GangAnswer, gangCandidates } from './gangs-helpers.js';
import { random, type Random } from '../helpers/random.js';

interface Host {
  uuid: string;
  aggs: string[];
  vcpu: number;
  vcpuUsed: number;
  mem: number;
  memUsed: number;
  fast: boolean;
}
interface Pool {
  uuid: string;
  agg: string;
  disk: number;
  used: number;
}
interface Cloud {
  aggs: string[];
  hosts: Host[];
  pool: Pool | null;
}
interface Ask {
  count: number;
  vcpu: number;
  mem: number;
  disk: number;
  fast: boolean;
}

const CLOUDS = 40;
const QUERIES_PER_CLOUD = 50;

let t: TestApp;
const clouds: Cloud[] = [];

async function buildCloud(r: Random): Promise<Cloud> {
  const aggs = Array.from({ length: r.int(1, 3) }, () => crypto.randomUUID());
  const hosts: Host[] = [];
  for (let i = r.int(2, 7); i > 0; i -= 1) {
    const inAggs = aggs.filter(() => r.chance(0.6));
    const vcpu = r.int(1, 8);
    const mem = 1024 * r.int(1, 4);
    const fast = r.chance(0.5);
    const uuid = await provider(t, {
      inventory: { VCPU: { total: vcpu }, MEMORY_MB: { total: mem } },
      aggregates: inAggs,
      ...(fast ? { traits: ['CUSTOM_FAST'] } : {}),
    });
    const vcpuUsed = r.chance(0.5) ? r.int(0, vcpu) : 0;
    const memUsed = r.chance(0.5) ? 512 * r.int(0, mem / 512) : 0;
    if (vcpuUsed || memUsed) {
      const resources: Record<string, number> = {};
      if (vcpuUsed) resources.VCPU = vcpuUsed;
      if (memUsed) resources.MEMORY_MB = memUsed;
      expect((await claim(t, { [uuid]: { resources } })).status).toBe(204);
    }
    hosts.push({ uuid, aggs: inAggs, vcpu, vcpuUsed, mem, memUsed, fast });
  }
  let pool: Pool | null = null;
  if (r.chance(0.5)) {
    const agg = aggs[r.int(0, aggs.length - 1)]!;
    const disk = 10 * r.int(1, 8);
    const uuid = await provider(t, { inventory: { DISK_GB: { total: disk } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [agg] });
    const used = r.chance(0.5) ? 10 * r.int(0, disk / 10) : 0;
    if (used) expect((await claim(t, { [uuid]: { resources: { DISK_GB: used } } })).status).toBe(204);
    pool = { uuid, agg, disk, used };
  }
  return { aggs, hosts, pool };
}

/** Whether `host` alone takes one member of `ask` (its disk from the cloud's pool, when asked). */
function fitsAlone(cloud: Cloud, host: Host, ask: Ask): boolean {
  if (host.vcpu - host.vcpuUsed < ask.vcpu || host.mem - host.memUsed < ask.mem) return false;
  if (ask.fast && !host.fast) return false;
  if (ask.disk === 0) return true;
  const { pool } = cloud;
  return pool !== null && host.aggs.includes(pool.agg) && pool.disk - pool.used >= ask.disk;
}

/** Every subset of the domain's hosts of size `count`: does one take the whole gang? */
function someSubsetFits(cloud: Cloud, domain: Host[], ask: Ask): boolean {
  const n = domain.length;
  for (let mask = 0; mask < 1 << n; mask += 1) {
    let size = 0;
    for (let i = 0; i < n; i += 1) if (mask & (1 << i)) size += 1;
    if (size !== ask.count) continue;
    let ok = true;
    let disk = 0;
    for (let i = 0; i < n && ok; i += 1) {
      if (!(mask & (1 << i))) continue;
      ok = fitsAlone(cloud, domain[i]!, ask);
      disk += ask.disk;
    }
    if (ok && ask.disk > 0) ok = cloud.pool !== null && cloud.pool.used + disk <= cloud.pool.disk;
    if (ok) return true;
  }
  return false;
}

/** The domains a gang fits in, tightest first, as the reference sees them. */
function referenceDomains(cloud: Cloud, ask: Ask): string[] {
  const fitting: { agg: string; freeAfter: number }[] = [];
  for (const agg of cloud.aggs) {
    const domain = cloud.hosts.filter((h) => h.aggs.includes(agg));
    if (!someSubsetFits(cloud, domain, ask)) continue;
    fitting.push({ agg, freeAfter: domain.filter((h) => fitsAlone(cloud, h, ask)).length - ask.count });
  }
  fitting.sort((a, b) => a.freeAfter - b.freeAfter || a.agg.localeCompare(b.agg));
  return fitting.map((f) => f.agg);
}

function queryOf(cloud: Cloud, ask: Ask): string {
  const resources = [`VCPU:${ask.vcpu}`, ...(ask.mem ? [`MEMORY_MB:${ask.mem}`] : []), ...(ask.disk ? [`DISK_GB:${ask.disk}`] : [])];
  return `count=${ask.count}&resources=${resources.join(',')}${ask.fast ? '&required=CUSTOM_FAST' : ''}&ext_domain_member_of=in:${cloud.aggs.join(',')}`;
}

/** Each gang the API answers is valid in the reference model. */
function checkGang(cloud: Cloud, ask: Ask, gang: GangAnswer['gangs'][number]): void {
  const byUuid = new Map(cloud.hosts.map((h) => [h.uuid, h]));
  const hosts = new Set<string>();
  let disk = 0;
  for (const { allocations } of gang.allocation_requests) {
    const host = Object.keys(allocations)
      .map((rp) => byUuid.get(rp))
      .find((h) => h !== undefined);
    expect(host, 'every member on a host of the cloud').toBeDefined();
    expect(host!.aggs).toContain(gang.domain);
    expect(fitsAlone(cloud, host!, ask)).toBe(true);
    hosts.add(host!.uuid);
    if (ask.disk) disk += allocations[cloud.pool!.uuid]!.resources.DISK_GB!;
  }
  expect(hosts.size).toBe(ask.count);
  if (ask.disk) expect(cloud.pool!.used + disk).toBeLessThanOrEqual(cloud.pool!.disk);
}

beforeAll(async () => {
  t = await makeTestApp();
  const r = random(36);
  for (let i = 0; i < CLOUDS; i += 1) clouds.push(await buildCloud(r));
}, 60_000);
afterAll(() => t.close());

describe('gang_candidates against every subset of hosts', () => {
  it(`agrees on ${CLOUDS * QUERIES_PER_CLOUD} random gangs over ${CLOUDS} random clouds`, async () => {
    const r = random(3636);
    let fitting = 0;
    let cases = 0;
    for (const [c, cloud] of clouds.entries()) {
      for (let q = 0; q < QUERIES_PER_CLOUD; q += 1) {
        const ask: Ask = {
          count: r.int(1, 4),
          vcpu: r.int(1, 4),
          mem: [0, 512, 1024, 2048][r.int(0, 3)]!,
          disk: cloud.pool && r.chance(0.5) ? 10 * r.int(1, 3) : 0,
          fast: r.chance(0.3),
        };
        const query = queryOf(cloud, ask);
        const answer = await gangCandidates(t, query);
        const expected = referenceDomains(cloud, ask);
        expect(
          answer.gangs.map((g) => g.domain),
          `cloud ${c} query ${q}: ${query}`,
        ).toEqual(expected);
        expect(answer.incomplete).toBeUndefined();
        for (const gang of answer.gangs) checkGang(cloud, ask, gang);
        if (expected.length) fitting += 1;
        cases += 1;
      }
    }
    // The random cases are not all one-sided.
    expect(fitting).toBeGreaterThan(cases / 5);
    expect(fitting).toBeLessThan(cases - cases / 5);
  }, 60_000);
});
