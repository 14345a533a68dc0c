// ext_until beyond GET /allocation_candidates (docs/holds.md): headroom,
// why-no-host and gangs take the candidates' query, so a request that ends
// before a window sees the held capacity there too, and one without ext_until
// (or ending at the window's start) does not.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { claimGang, gangCandidates } from './gangs-helpers.js';
import { claim, PROJECT } from './helpers.js';

const HOUR = 3600_000;
const at = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
const HOSTS = 8;
const HELD = 3;

let t: TestApp;
let start: number;

beforeEach(async () => {
  t = await makeTestApp();
  const hosts: string[] = [];
  for (let i = 0; i < HOSTS; i++) hosts.push(await provider(t, { inventory: { PGPU: { total: 1 } } }));
  const seed = await provider(t, { inventory: { VCPU: { total: 1 } } });
  expect((await claim(t, { [seed]: { resources: { VCPU: 1 } } })).status).toBe(204);
  start = Date.now() + 2 * HOUR;
  const res = await t.call('POST', '/ext/holds', {
    body: {
      project_id: PROJECT,
      start: new Date(start).toISOString(),
      end: new Date(start + 2 * HOUR).toISOString(),
      allocations: Object.fromEntries(hosts.slice(0, HELD).map((p) => [p, { resources: { PGPU: 1 } }])),
    },
  });
  expect(res.status, await res.clone().text()).toBe(201);
});
afterEach(() => t.close());

const queries = () => ({ none: '', before: `&ext_until=${at(start - 60_000)}`, atStart: `&ext_until=${at(start)}` });

describe('ext_until on what takes the candidates query', () => {
  it('GET /ext/headroom counts held capacity only for a request that ends before the window', async () => {
    const totals: Record<string, number> = {};
    for (const [name, extra] of Object.entries(queries())) {
      const res = await t.call('GET', `/ext/headroom?resources=PGPU:1${extra}`);
      expect(res.status, await res.clone().text()).toBe(200);
      totals[name] = ((await res.json()) as { total: number }).total;
    }
    expect(totals).toEqual({ none: HOSTS - HELD, before: HOSTS, atStart: HOSTS - HELD });
  });

  it('GET /diagnostics/allocation_candidates (why no host) ends its funnel as the candidates do', async () => {
    const found: Record<string, number> = {};
    for (const [name, extra] of Object.entries(queries())) {
      const res = await t.call('GET', `/diagnostics/allocation_candidates?resources=PGPU:1&limit=100${extra}`);
      expect(res.status, await res.clone().text()).toBe(200);
      const body = (await res.json()) as { allocation_requests: number };
      found[name] = body.allocation_requests;
      const stock = await t.call('GET', `/allocation_candidates?resources=PGPU:1&limit=100${extra}`);
      expect(body.allocation_requests).toBe(((await stock.json()) as { allocation_requests: unknown[] }).allocation_requests.length);
    }
    expect(found).toEqual({ none: HOSTS - HELD, before: HOSTS, atStart: HOSTS - HELD });
  });

  it('GET /ext/gang_candidates and POST /ext/gangs: a gang of every host only when it ends before the window', async () => {
    const gang = `count=${HOSTS}&resources=PGPU:1&ext_domain=any`;
    expect((await gangCandidates(t, gang)).gangs).toEqual([]);
    expect((await gangCandidates(t, `${gang}${queries().atStart}`)).gangs).toEqual([]);
    const found = await gangCandidates(t, `${gang}${queries().before}`);
    expect(found.gangs).toHaveLength(1);
    // Claimed without an end it would hold the window's capacity: refused; with the end it asked for, granted.
    const lasting = await claimGang(t, found.gangs[0]!);
    expect(lasting.status).toBe(409);
    const res = await t.call('POST', `/ext/gangs?ext_until=${at(start - 60_000)}`, {
      body: await gangBody(found.gangs[0]!),
    });
    expect(res.status, await res.clone().text()).toBe(204);
    // Its end is enforced: every member has a lease expiring then.
    const leases = (await (await t.call('GET', '/ext/leases')).json()) as { leases: { expires_at: string }[] };
    expect(leases.leases.map((l) => l.expires_at)).toEqual(Array(HOSTS).fill(new Date(start - 60_000).toISOString()));
  });
});

async function gangBody(gang: Parameters<typeof claimGang>[1]): Promise<Record<string, unknown>> {
  const members: Record<string, unknown> = {};
  for (const request of gang.allocation_requests) {
    members[crypto.randomUUID()] = {
      allocations: request.allocations,
      project_id: PROJECT,
      user_id: PROJECT,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
  }
  return { domain: gang.domain, members };
}

describe('a hold from an allocation-candidates query with count', () => {
  const post = (body: Record<string, unknown>) =>
    t.call('POST', '/ext/holds', {
      body: { project_id: PROJECT, start: new Date(start).toISOString(), end: new Date(start + HOUR).toISOString(), ...body },
    });

  it('pins the providers placement picks, as a gang search would, and refuses what does not fit', async () => {
    // HELD hosts are held over the window already: HOSTS - HELD are left.
    const res = await post({ query: `resources=PGPU:1&count=${HOSTS - HELD}&ext_domain=any` });
    expect(res.status, await res.clone().text()).toBe(201);
    const body = (await res.json()) as { allocations: Record<string, { resources: Record<string, number> }> };
    expect(Object.keys(body.allocations)).toHaveLength(HOSTS - HELD);
    for (const a of Object.values(body.allocations)) expect(a.resources).toEqual({ PGPU: 1 });
    // Nothing is left for another in the window.
    const none = await post({ query: 'resources=PGPU:1&count=1&ext_domain=any' });
    expect(none.status).toBe(409);
    expect(await none.json()).toMatchObject({ errors: [{ code: 'placement.ext.hold_unsatisfiable' }] });
    // One form only.
    const both = await post({ query: 'resources=PGPU:1&count=1', allocations: body.allocations });
    expect(both.status).toBe(400);
  });
});
