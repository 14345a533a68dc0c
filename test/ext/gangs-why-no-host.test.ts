// GET /diagnostics/allocation_candidates?count=N (why no host for a gang):
// when no domain holds N hosts that take a member together, the answer names
// the best domain (most hosts that fit a member), how many hosts it is short
// and, for its hosts that fit no member, the first constraint each fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GangAwareDiagnosis } from '../../src/ext/gangs/diagnosis.js';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { claim } from './helpers.js';
import { gangCandidates } from './gangs-helpers.js';

let t: TestApp;
const [RACK_A, RACK_B, POOLED] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()].sort();
const a: Record<string, string> = {};
let b1 = '';
let pool = '';
const AVX = { inventory: { VCPU: { total: 4 } }, traits: ['HW_CPU_X86_AVX2'] };
const QUERY = 'resources=VCPU:2&required=HW_CPU_X86_AVX2';

beforeAll(async () => {
  t = await makeTestApp();
  // Rack A: two hosts fit a member, one is too full, one lacks the trait. Rack B: one host fits.
  a.fits1 = await provider(t, { ...AVX, aggregates: [RACK_A!] });
  a.fits2 = await provider(t, { ...AVX, aggregates: [RACK_A!] });
  a.full = await provider(t, { ...AVX, aggregates: [RACK_A!] });
  a.noAvx = await provider(t, { inventory: { VCPU: { total: 4 } }, aggregates: [RACK_A!] });
  b1 = await provider(t, { ...AVX, aggregates: [RACK_B!] });
  expect((await claim(t, { [a.full]: { resources: { VCPU: 3 } } })).status).toBe(204);
  // Pooled: two hosts, each fits 30 GB of the shared 50 alone, not together.
  for (let i = 0; i < 2; i += 1) await provider(t, { inventory: { MEMORY_MB: { total: 1024 } }, aggregates: [POOLED!] });
  pool = await provider(t, { inventory: { DISK_GB: { total: 50 } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [POOLED!] });
});
afterAll(() => t.close());

async function diagnose(query: string, version = 'latest'): Promise<GangAwareDiagnosis> {
  const res = await t.call('GET', `/diagnostics/allocation_candidates?${query}`, { version });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as GangAwareDiagnosis;
}

describe('why no host for a gang', () => {
  it('names the best domain, the hosts it is short and why each of its other hosts fits no member', async () => {
    expect((await gangCandidates(t, `count=3&${QUERY}`)).gangs).toEqual([]);
    const body = await diagnose(`count=3&${QUERY}&host=rp-${b1}`);
    const gang = body.gang!;
    expect(gang).toMatchObject({ count: 3, domain: 'aggregate', domains_that_fit: 0 });
    expect(gang.best_domain).toMatchObject({ domain: RACK_A, hosts: 4, hosts_that_fit: 2, hosts_short: 1 });
    expect(gang.best_domain!.lacks).toContain('1 host short');
    expect(gang.reason).toContain(`aggregate ${RACK_A}`);
    const why = Object.fromEntries(gang.best_domain!.hosts_that_do_not_fit.map((v) => [v.host, v.failed_at]));
    expect(Object.keys(why).sort()).toEqual([a.full, a.noAvx].sort());
    expect(why[a.full!]).toMatchObject({ constraint: 'resources', reason: `VCPU: needs 2, free 1 on ${a.full}` });
    expect(why[a.noAvx!]).toMatchObject({ constraint: 'required' });
    expect(why[a.noAvx!]!.reason).toContain('HW_CPU_X86_AVX2');
    // The hosts asked for keep their own verdicts; the funnel is the one member's.
    expect(body.hosts).toEqual([expect.objectContaining({ host: `rp-${b1}`, fits: true })]);
    expect(body.allocation_requests).toBe(3);
  });

  it('says a gang fits, and where none is a domain, or the members fit alone but not together', async () => {
    const fits = await diagnose(`count=2&${QUERY}`);
    expect(fits.gang).toMatchObject({ domains_that_fit: 1 });
    expect(fits.gang!.best_domain).toBeUndefined();
    const nowhere = await diagnose(`count=2&${QUERY}&ext_domain_member_of=in:${crypto.randomUUID()}`);
    expect(nowhere.gang!.best_domain).toBeUndefined();
    expect(nowhere.gang!.reason).toContain('has a host');
    // Each pooled host takes 30 GB alone; two members need 60 of the pool's 50. The pool is no host.
    const shared = await diagnose('count=2&resources=MEMORY_MB:1,DISK_GB:30');
    expect(shared.gang!.best_domain).toMatchObject({
      domain: POOLED,
      hosts: 2,
      hosts_that_fit: 2,
      hosts_short: 0,
      hosts_that_do_not_fit: [],
    });
    expect(shared.gang!.best_domain!.lacks).toContain('not 2 members together');
    expect(JSON.stringify(shared)).not.toContain(`"host":"${pool}"`);
    // ext_domain=any: the whole cloud is the one domain.
    const any = await diagnose(`count=9&${QUERY}&ext_domain=any`);
    expect(any.gang!.best_domain).toMatchObject({ domain: null, hosts_that_fit: 3, hosts_short: 6 });
  });

  it('answers plain requests as before and refuses a gang below 1.25 or with bad gang parameters', async () => {
    expect((await diagnose(QUERY)).gang).toBeUndefined();
    const old = await t.call('GET', `/diagnostics/allocation_candidates?count=2&${QUERY}`, { version: '1.24' });
    expect(old.status).toBe(400);
    expect((await errorOf(old)).detail).toContain('1.25');
    const bad = await t.call('GET', `/diagnostics/allocation_candidates?count=0&${QUERY}`);
    expect(bad.status).toBe(400);
    expect((await errorOf(bad)).detail).toContain("'count'");
  });
});
