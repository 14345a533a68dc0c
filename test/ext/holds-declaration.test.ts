// What holds bound is declared once (ext/holds/declaration.ts, a capacity
// set aside: placement/capacity.ts) and every path takes it from there. Here
// one change to it changes every path, on one database: the one-batch claim's
// condition, the ordinary claim's decision (the model over what the guard
// reads), the candidates' rule, the audit and, for a change of what a hold
// sets aside, a hold's admission. Two changes: the bound (each held pair may
// be overbooked by 4) and the amount (a hold sets aside twice what it holds),
// the latter reaching the model through the amounts it reads, stored or being
// admitted. The last part, on a host of its own, asks every path at once of
// the three apps (as declared, overbooked, doubled): the candidates,
// availability, the time line, the gauges, the simulation, the preemption
// search, a site's slice and the claim.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { HELD_CAPACITY } from '../../src/ext/holds/declaration.js';
import { holds, holdsExtension } from '../../src/ext/holds/extension.js';
import { INVENTORY_KEYS, type SetAsideConstraint, setAsideHoldsSql } from '../../src/placement/capacity.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';
import { provider } from '../helpers/providers.js';
import { type App, adminRequest, siblingApp } from '../helpers/sibling-app.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const PROJECT = 'aaaaaaaa-0000-4000-8000-00000000000b';
const OTHER = 'aaaaaaaa-0000-4000-8000-00000000000c';

/** One change: every held pair's capacity counts 4 more than its inventory's. */
const OVERBOOKED: SetAsideConstraint = {
  ...HELD_CAPACITY,
  keys: { ...INVENTORY_KEYS, bound: (key) => `(${INVENTORY_KEYS.bound(key)} + 4)` },
};

/** Another: a hold sets aside twice the amount it holds. */
const DOUBLED: SetAsideConstraint = {
  ...HELD_CAPACITY,
  setAside: { ...HELD_CAPACITY.setAside, amount: (ha) => `2 * ${HELD_CAPACITY.setAside.amount(ha)}` },
};

let t: TestApp;
let overbooked: App;
let doubled: App;
let host: string;
const holder = randomUUID();

const call = (app: App, method: string, path: string, body?: unknown) => adminRequest(app, method, path, body);

/** The one-batch claim's condition of `declaration` for `consumer`'s allocations, as of now (1: holds). */
async function fits(declaration: SetAsideConstraint, consumer: string): Promise<number> {
  const [result] = await t.deps.store.readBatch([{ sql: `SELECT (${setAsideHoldsSql(declaration, '?')}) AS ok`, args: [consumer] }]);
  return Number(result!.rows[0]!.ok);
}

/** Whether `app`'s candidates for one VCPU include `provider`. */
const offers = async (app: App, provider: string) =>
  provider in
  ((await (await call(app, 'GET', '/allocation_candidates?resources=VCPU:1')).json()) as { provider_summaries: object }).provider_summaries;

const claim = (vcpu: number, generation: number | null, on = host) => ({
  allocations: { [on]: { resources: { VCPU: vcpu } } },
  project_id: PROJECT,
  user_id: 'u',
  consumer_generation: generation,
});

beforeAll(async () => {
  t = await makeTestApp();
  overbooked = (await siblingApp(t, (e) => (e === holds ? holdsExtension(OVERBOOKED) : e))).app;
  doubled = (await siblingApp(t, (e) => (e === holds ? holdsExtension(DOUBLED) : e))).app;
  host = randomUUID();
  expect((await t.call('POST', '/resource_providers', { body: { name: 'host', uuid: host } })).status).toBe(200);
  const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } };
  expect((await t.call('PUT', `/resource_providers/${host}/inventories`, { body: inventory })).status).toBe(200);
  // A hold of 6 of the 8 VCPU, in its window now, for another project (placement knows it by a consumer elsewhere).
  const elsewhere = randomUUID();
  expect((await t.call('POST', '/resource_providers', { body: { name: 'elsewhere', uuid: elsewhere } })).status).toBe(200);
  expect((await t.call('PUT', `/resource_providers/${elsewhere}/inventories`, { body: inventory })).status).toBe(200);
  const known = { allocations: { [elsewhere]: { resources: { VCPU: 1 } } }, project_id: OTHER, user_id: 'u', consumer_generation: null };
  expect((await call(t.app, 'PUT', `/allocations/${randomUUID()}`, known)).status).toBe(204);
  const now = Date.now();
  const hold = await t.call('POST', '/ext/holds', {
    body: {
      project_id: OTHER,
      start: new Date(now - 1000).toISOString(),
      end: new Date(now + 3_600_000).toISOString(),
      allocations: { [host]: { resources: { VCPU: 6 } } },
    },
  });
  expect(hold.status, await hold.clone().text()).toBe(201);
  // 3 lasting VCPU beside the 6 held: over the 8, within 8 + 4; granted where overbooked.
  expect((await call(t.app, 'PUT', `/allocations/${holder}`, claim(3, null))).status).toBe(409);
  expect((await call(overbooked, 'PUT', `/allocations/${holder}`, claim(3, null))).status).toBe(204);
});
afterAll(() => t.close());

describe("one change to the holds declaration's bound", () => {
  it("changes the one-batch claim's condition (SQL, as of the write)", async () => {
    expect(await fits(HELD_CAPACITY, holder)).toBe(0);
    expect(await fits(OVERBOOKED, holder)).toBe(1);
  });

  it("changes the candidates' rule", async () => {
    expect(await offers(t.app, host)).toBe(false);
    expect(await offers(overbooked, host)).toBe(true);
  });

  it("changes the audit's answer", async () => {
    const violations = async (app: App) =>
      ((await (await call(app, 'GET', '/diagnostics/audit')).json()) as { extensions: { holds: { violation_count: number } } }).extensions
        .holds.violation_count;
    expect(await violations(t.app)).toBe(1);
    expect(await violations(overbooked)).toBe(0);
  });

  it("changes the ordinary claim's decision (a consumer that grows)", async () => {
    const refused = await call(t.app, 'PUT', `/allocations/${holder}`, claim(4, 1));
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('placement.ext.capacity_held');
    expect((await call(overbooked, 'PUT', `/allocations/${holder}`, claim(4, 1))).status).toBe(204);
    const beyond = await call(overbooked, 'PUT', `/allocations/${holder}`, claim(7, 2));
    expect(beyond.status).toBe(409);
    expect(await beyond.text()).toContain('(13 held and allocated of 12)');
  });
});

describe("one change to what a hold sets aside (the declaration's amount)", () => {
  // Its own host: 8 VCPU, a hold of 3 now for OTHER (6 where doubled), and a lasting claim of 3 beside it,
  // granted where holds count as stored (3 + 3 of 8), over where doubled (3 + 6).
  let host2: string;
  let hold: string;
  const claimant = randomUUID();
  const window = () => ({ start: new Date(Date.now() - 1000).toISOString(), end: new Date(Date.now() + 3_600_000).toISOString() });

  beforeAll(async () => {
    host2 = randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: 'host2', uuid: host2 } })).status).toBe(200);
    const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } };
    expect((await t.call('PUT', `/resource_providers/${host2}/inventories`, { body: inventory })).status).toBe(200);
    const created = await call(t.app, 'POST', '/ext/holds', {
      project_id: OTHER,
      ...window(),
      allocations: { [host2]: { resources: { VCPU: 3 } } },
    });
    expect(created.status, await created.clone().text()).toBe(201);
    hold = ((await created.json()) as { uuid: string }).uuid;
    expect((await call(t.app, 'PUT', `/allocations/${claimant}`, claim(3, null, host2))).status).toBe(204);
  });

  it("changes the one-batch claim's condition (SQL, as of the write)", async () => {
    expect(await fits(HELD_CAPACITY, claimant)).toBe(1);
    expect(await fits(DOUBLED, claimant)).toBe(0);
    // Through each app: a new consumer's claim of 1 is granted as sent where the condition holds (3 + 3 + 1 of 8), and
    // where doubled (3 + 6 + 1) the condition fails and the ordinary path refuses it; a condition of the built-in
    // declaration would have let it through as sent.
    const newcomer = randomUUID();
    // Gone again whatever the answers, so a failure here is not also one of the paths below.
    onTestFinished(async () => void (await call(t.app, 'DELETE', `/allocations/${newcomer}`)));
    const refused = await call(doubled, 'PUT', `/allocations/${newcomer}`, claim(1, null, host2));
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('(10 held and allocated of 8)');
    expect((await call(t.app, 'PUT', `/allocations/${newcomer}`, claim(1, null, host2))).status).toBe(204);
  });

  it("changes the candidates' rule", async () => {
    expect(await offers(t.app, host2)).toBe(true);
    expect(await offers(doubled, host2)).toBe(false);
  });

  it("changes the audit's answer", async () => {
    const onHost2 = async (app: App) =>
      (
        (await (await call(app, 'GET', '/diagnostics/audit')).json()) as {
          extensions: { holds: { violations: { resource_provider_uuid: string; load: number; capacity: number; holds: string[] }[] } };
        }
      ).extensions.holds.violations.filter((v) => v.resource_provider_uuid === host2);
    expect(await onHost2(t.app)).toEqual([]);
    const found = await onHost2(doubled);
    expect(found.length).toBeGreaterThan(0);
    expect(found[0]).toMatchObject({ load: 9, capacity: 8, holds: [hold] });
  });

  it("changes a hold's admission, the stored holds and the one admitted counted alike", async () => {
    const another = { project_id: OTHER, allocations: { [host2]: { resources: { VCPU: 1 } } } };
    // Doubled: 3 allocated + 2 * 3 held + 2 * 1 asked = 11 of 8 (counting the new one as sent would say 10).
    const refused = await call(doubled, 'POST', '/ext/holds', { ...another, ...window() });
    if (refused.status === 201) {
      const { uuid } = (await refused.clone().json()) as { uuid: string };
      onTestFinished(async () => void (await call(t.app, 'DELETE', `/ext/holds/${uuid}`)));
    }
    expect(refused.status).toBe(409);
    const text = await refused.text();
    expect(text).toContain('placement.ext.hold_unsatisfiable');
    expect(text).toContain('(11 held and allocated of 8)');
    // As stored: 3 + 3 + 1 = 7 of 8, admitted (and removed again, so the paths below see the cloud above).
    const admitted = await call(t.app, 'POST', '/ext/holds', { ...another, ...window() });
    expect(admitted.status, await admitted.clone().text()).toBe(201);
    const { uuid } = (await admitted.json()) as { uuid: string };
    expect((await call(t.app, 'DELETE', `/ext/holds/${uuid}`)).status).toBe(204);
    // What no amount can fit is refused before the rule: 5 of 8 counts 10 where doubled, and is admitted as stored.
    const oversized = { project_id: OTHER, ...window(), allocations: { [host2]: { resources: { VCPU: 5 } } } };
    const tooBig = await call(doubled, 'POST', '/ext/holds', oversized);
    expect(tooBig.status).toBe(400);
    expect(await tooBig.text()).toContain('bigger than its capacity (8)');
  });

  it("changes the ordinary claim's decision (a consumer that grows)", async () => {
    const refused = await call(doubled, 'PUT', `/allocations/${claimant}`, claim(4, 1, host2));
    expect(refused.status).toBe(409);
    const text = await refused.text();
    expect(text).toContain('placement.ext.capacity_held');
    expect(text).toContain('(10 held and allocated of 8)');
    expect((await call(t.app, 'PUT', `/allocations/${claimant}`, claim(4, 1, host2))).status).toBe(204);
  });

  it('changes what a lease may become beside a hold to come (confirming a backfill claim)', async () => {
    // Its own host: a hold of 2 of 8 from an hour on, and a claim of 5 until half an hour from now. Confirmed, the
    // claim lasts into the window: 5 + 2 of 8 as stored, 5 + 4 where doubled.
    const host3 = randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: 'host3', uuid: host3 } })).status).toBe(200);
    const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } };
    expect((await t.call('PUT', `/resource_providers/${host3}/inventories`, { body: inventory })).status).toBe(200);
    const start = Date.now() + 3_600_000;
    const later = { start: new Date(start).toISOString(), end: new Date(start + 3_600_000).toISOString() };
    const held = await call(t.app, 'POST', '/ext/holds', {
      project_id: OTHER,
      ...later,
      allocations: { [host3]: { resources: { VCPU: 2 } } },
    });
    expect(held.status, await held.clone().text()).toBe(201);
    const backfill = randomUUID();
    expect((await call(t.app, 'PUT', `/allocations/${backfill}?ext_until=1800`, claim(5, null, host3))).status).toBe(204);
    const refused = await call(doubled, 'DELETE', `/ext/leases/${backfill}`);
    expect(refused.status).toBe(409);
    const text = await refused.text();
    expect(text).toContain('placement.ext.capacity_held');
    expect(text).toContain('(9 held and allocated of 8)');
    expect((await call(t.app, 'DELETE', `/ext/leases/${backfill}`)).status).toBe(204);
  });
});

describe('one change to the declaration reaches availability, the timeline and the simulation with the candidates and the claim', () => {
  // Its own host: 8 VCPU and a hold of 4 of them for OTHER, now for an hour. As declared: 4 set aside of 8;
  // overbooked: 4 of 12 (placement's own 8 still bounds what is allocated); doubled: 8 of 8.
  let host4: string;
  let holdEnd: number;
  const apps = () => ({ declared: t.app, overbooked, doubled });
  type Figures = Record<'declared' | 'overbooked' | 'doubled', unknown>;

  beforeAll(async () => {
    host4 = randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: 'host4', uuid: host4 } })).status).toBe(200);
    const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } };
    expect((await t.call('PUT', `/resource_providers/${host4}/inventories`, { body: inventory })).status).toBe(200);
    holdEnd = Date.now() + 3_600_000;
    const created = await call(t.app, 'POST', '/ext/holds', {
      project_id: OTHER,
      start: new Date(Date.now() - 1000).toISOString(),
      end: new Date(holdEnd).toISOString(),
      allocations: { [host4]: { resources: { VCPU: 4 } } },
    });
    expect(created.status, await created.clone().text()).toBe(201);
  });

  /** The same question to each app. */
  async function each(ask: (app: App) => Promise<unknown>): Promise<Figures> {
    const out: Record<string, unknown> = {};
    for (const [name, app] of Object.entries(apps())) out[name] = await ask(app);
    return out as Figures;
  }

  const inTree = (vcpu: number) => `resources=VCPU:${vcpu}&in_tree=${host4}`;

  it("changes the candidates' rule", async () => {
    const offered = (vcpu: number) => async (app: App) =>
      host4 in
      ((await (await call(app, 'GET', `/allocation_candidates?${inTree(vcpu)}`)).json()) as { provider_summaries: object })
        .provider_summaries;
    expect(await each(offered(5))).toEqual({ declared: false, overbooked: true, doubled: false });
    expect(await each(offered(1))).toEqual({ declared: true, overbooked: true, doubled: false });
  });

  it('changes GET /ext/holds/availability: the earliest start, now or at the hold’s end', async () => {
    const start = (vcpu: number) => async (app: App) => {
      const res = await call(app, 'GET', `/ext/holds/availability?${inTree(vcpu)}&duration=60`);
      expect(res.status, await res.clone().text()).toBe(200);
      const { start } = (await res.json()) as { start: string | null };
      return start === null ? 'never' : Date.parse(start) >= holdEnd ? 'at the end' : 'now';
    };
    expect(await each(start(5))).toEqual({ declared: 'at the end', overbooked: 'now', doubled: 'at the end' });
    expect(await each(start(1))).toEqual({ declared: 'now', overbooked: 'now', doubled: 'at the end' });
  });

  it('changes GET /ext/holds/timeline: what is held', async () => {
    const held = async (app: App) => {
      const res = await call(app, 'GET', '/ext/holds/timeline');
      expect(res.status).toBe(200);
      const body = (await res.json()) as {
        groups: { providers: { uuid: string; holds: { resources: Record<string, { held: number; drawn: number }> }[] }[] }[];
      };
      return body.groups.flatMap((g) => g.providers).find((p) => p.uuid === host4)?.holds[0]?.resources.VCPU;
    };
    expect(await each(held)).toEqual({
      declared: { held: 4, drawn: 0 },
      overbooked: { held: 4, drawn: 0 },
      doubled: { held: 8, drawn: 0 },
    });
  });

  it('changes the gauges in GET /metrics: what holds in their window hold', async () => {
    const active = async (app: App) =>
      sampleValue(parseSamples(await (await app.request('/metrics')).text()), 'placement_ext_held', {
        resourcetype: 'VCPU',
        window: 'active',
      });
    const figures = (await each(active)) as Record<string, number>;
    expect(figures.declared).toBeGreaterThan(0);
    expect(figures).toEqual({ declared: figures.declared, overbooked: figures.declared, doubled: 2 * figures.declared! });
  });

  it('changes POST /ext/simulate: headroom before and after, and a hold added in the simulation', async () => {
    const simulated = async (app: App) => {
      const body = {
        changes: [
          {
            op: 'add_hold',
            hold: {
              project_id: OTHER,
              start: new Date(Date.now() - 1000).toISOString(),
              end: new Date(holdEnd).toISOString(),
              allocations: { [host4]: { resources: { VCPU: 2 } } },
            },
          },
        ],
        queries: [{ name: 'one', query: inTree(1) }],
      };
      const res = await adminRequest(app, 'POST', '/ext/simulate', body, { bodyVersion: '1.38' });
      if (res.status !== 200) return res.status;
      const answer = (await res.json()) as { queries: { before: { total: number }; after: { total: number } }[] };
      return [answer.queries[0]!.before.total, answer.queries[0]!.after.total];
    };
    // Doubled, the second hold (4 more of 8 already set aside) does not fit: the real POST's 409.
    expect(await each(simulated)).toEqual({ declared: [4, 2], overbooked: [8, 6], doubled: 409 });
  });

  it('changes GET /ext/preemption_candidates: what holds take from the victim-free search', async () => {
    const found = async (app: App) => {
      const res = await call(app, 'GET', `/ext/preemption_candidates?${inTree(1)}&ext_priority=10`);
      expect(res.status, await res.clone().text()).toBe(200);
      return ((await res.json()) as { allocation_requests: unknown[] }).allocation_requests.length > 0;
    };
    expect(await each(found)).toEqual({ declared: true, overbooked: true, doubled: false });
  });

  it("changes a site's capacity slice's admission (sites take the app's holds declaration)", async () => {
    // Its own host in an aggregate: a slice of 5 of its 8 VCPU counts 10 where doubled, bigger than the capacity.
    const aggregate = randomUUID();
    const edge = await provider(t, { inventory: { VCPU: { total: 8 } }, aggregates: [aggregate] });
    const slice = { aggregate, capacity: { [edge]: { resources: { VCPU: 5 } } } };
    const refused = await adminRequest(doubled, 'PUT', '/ext/sites/edge-doubled', slice, { bodyVersion: '1.38' });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('bigger than its capacity (8)');
    const admitted = await adminRequest(t.app, 'PUT', '/ext/sites/edge-declared', slice, { bodyVersion: '1.38' });
    expect(admitted.status, await admitted.clone().text()).toBe(200);
  });

  it("changes the claim's decision", async () => {
    const claimed = async (app: App) => {
      const consumer = randomUUID();
      const res = await call(app, 'PUT', `/allocations/${consumer}`, claim(5, null, host4));
      if (res.status === 204) expect((await call(t.app, 'DELETE', `/allocations/${consumer}`)).status).toBe(204);
      return res.status;
    };
    expect(await each(claimed)).toEqual({ declared: 409, overbooked: 204, doubled: 409 });
  });
});
