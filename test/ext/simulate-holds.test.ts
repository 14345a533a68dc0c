// Holds and gangs as what-if changes (docs/simulate.md): a simulated hold or
// gang changes later queries exactly as the real POST /ext/holds or POST
// /ext/gangs does (headroom of stock requests, of ext_until backfill, of
// gangs), a hold's query is pinned to the providers the real request pins,
// bad input gets the real request's status, code and words, and nothing is
// written. On the real clock: the holds' read hook judges at it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { at, claim, HOUR, PROJECT, USER } from './helpers.js';
import { type OpenApiDoc, openApiChecker } from '../helpers/openapi-check.js';
import { everyRow } from './simulate-helpers.js';

const AGG = '0a0a0a0a-0000-4000-8000-00000000000a';

let t: TestApp;
let hosts: string[];
beforeEach(async () => {
  t = await makeTestApp();
  hosts = [];
  for (let i = 0; i < 3; i++) hosts.push(await provider(t, { inventory: { VCPU: { total: 8 } }, aggregates: i < 2 ? [AGG] : [] }));
  // The project becomes known through a consumer of it.
  expect((await claim(t, { [hosts[2]!]: { resources: { VCPU: 2 } } })).status).toBe(204);
});
afterEach(() => t.close());

const QUERIES = [
  'resources=VCPU:1',
  'resources=VCPU:1&ext_until=1800',
  'resources=VCPU:2&count=2',
  'resources=VCPU:4&count=2&ext_domain=any',
].map((query, i) => ({ name: `q${i}`, query }));

interface Answer {
  changes: { op: string; hold?: { uuid: string; allocations: unknown }; gang?: { consumers: string[]; expires_at?: string } }[];
  queries: { name: string; before: { total: number; domains?: unknown }; after: { total: number; domains?: unknown } }[];
}

async function simulate(changes: unknown[]): Promise<Response> {
  return t.call('POST', '/ext/simulate', { body: { changes, queries: QUERIES } });
}

/** What GET /ext/headroom answers now for each query, as the simulation shapes it. */
async function measured(): Promise<{ total: number; domains?: unknown }[]> {
  const out: { total: number; domains?: unknown }[] = [];
  for (const { query } of QUERIES) {
    const res = await t.call('GET', `/ext/headroom?${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    const h = (await res.json()) as { total: number; domains?: unknown };
    out.push(h.domains ? { total: h.total, domains: h.domains } : { total: h.total });
  }
  return out;
}

const shape = (m: { total: number; domains?: unknown }) => (m.domains ? { total: m.total, domains: m.domains } : { total: m.total });

/** The error envelope without its request id. */
async function problem(res: Response): Promise<{ status: number; errors: unknown[] }> {
  const body = (await res.json()) as { errors: { request_id?: string }[] };
  return { status: res.status, errors: body.errors.map(({ request_id: _, ...e }) => e) };
}

const gangBody = (members: { host: string; vcpu: number }[], extra: Record<string, unknown> = {}) => ({
  members: Object.fromEntries(
    members.map((m) => [
      crypto.randomUUID(),
      {
        allocations: { [m.host]: { resources: { VCPU: m.vcpu } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    ]),
  ),
  ...extra,
});

describe('holds and gangs as what-if changes', () => {
  it('a hold, by allocations or by query, then a gang: the simulated answer equals the real requests, and nothing is written', async () => {
    const now = Date.now();
    const hold = {
      project_id: PROJECT,
      start: at(now + HOUR),
      end: at(now + 3 * HOUR),
      allocations: { [hosts[0]!]: { resources: { VCPU: 8 } } },
    };
    const byQuery = {
      project_id: PROJECT,
      start: at(now - HOUR),
      end: at(now + 2 * HOUR),
      query: 'resources=VCPU:3&count=2&ext_domain=any',
    };
    const gang = gangBody(
      [
        { host: hosts[1]!, vcpu: 2 },
        { host: hosts[2]!, vcpu: 2 },
      ],
      { lease_seconds: 600 },
    );
    const changes = [
      { op: 'add_hold', hold },
      { op: 'add_hold', hold: byQuery },
      { op: 'add_gang', gang },
    ];
    const rows = await everyRow(t.deps.store.client);
    const res = await simulate(changes);
    expect(res.status, await res.clone().text()).toBe(200);
    // The answer as GET /openapi.json documents it (changes[].hold and changes[].gang included).
    const doc = (await (await t.app.request('/openapi.json')).json()) as OpenApiDoc;
    const answer = (await openApiChecker(doc).documented(res, 'post', '/ext/simulate')) as Answer;
    expect(answer.changes.map((c) => Object.keys(c.hold ?? c.gang ?? {}).sort())).toEqual([
      ['allocations', 'uuid'],
      ['allocations', 'uuid'],
      ['consumers', 'expires_at'],
    ]);
    expect(await everyRow(t.deps.store.client)).toEqual(rows);
    expect(answer.queries.map((q) => shape(q.before))).toEqual(await measured());

    // For real, in order.
    const real1 = await t.call('POST', '/ext/holds', { body: hold });
    expect(real1.status, await real1.clone().text()).toBe(201);
    const real2 = await t.call('POST', '/ext/holds', { body: byQuery });
    expect(real2.status, await real2.clone().text()).toBe(201);
    // The query's pick is pinned to the same providers and amounts.
    expect(answer.changes[1]!.hold!.allocations).toEqual(((await real2.json()) as { allocations: unknown }).allocations);
    const real3 = await t.call('POST', '/ext/gangs', { body: gang });
    expect(real3.status, await real3.clone().text()).toBe(200);
    expect(answer.changes[2]!.gang!.consumers).toEqual(((await real3.json()) as { consumers: string[] }).consumers);
    const after = await measured();
    expect(answer.queries.map((q) => shape(q.after))).toEqual(after);
    // The held capacity is taken: stock requests lose host 0 (held whole from the next hour), backfill ending before the window keeps it.
    expect(after[0]!.total + 8).toBe(after[1]!.total);
  });

  it("refuses bad holds and gangs with the real request's status, code and words", async () => {
    const now = Date.now();
    const missing = crypto.randomUUID();
    // A FOREVER allocation on host 0 takes 5 of 8: a hold of 6 from the next hour cannot be admitted.
    expect((await claim(t, { [hosts[0]!]: { resources: { VCPU: 5 } } })).status).toBe(204);
    const holds: Record<string, unknown>[] = [
      { project_id: PROJECT, start: at(now + HOUR), end: at(now + 2 * HOUR), allocations: { [missing]: { resources: { VCPU: 1 } } } },
      { project_id: PROJECT, start: at(now + 2 * HOUR), end: at(now + HOUR), allocations: { [hosts[0]!]: { resources: { VCPU: 1 } } } },
      { project_id: 'nobody', start: at(now + HOUR), end: at(now + 2 * HOUR), allocations: { [hosts[0]!]: { resources: { VCPU: 1 } } } },
      { project_id: PROJECT, start: at(now + HOUR), end: at(now + 2 * HOUR), allocations: { [hosts[0]!]: { resources: { VCPU: 9 } } } },
      { project_id: PROJECT, start: at(now + HOUR), end: at(now + 2 * HOUR), allocations: { [hosts[0]!]: { resources: { DISK_GB: 1 } } } },
      { project_id: PROJECT, start: at(now + HOUR), end: at(now + 2 * HOUR), allocations: { [hosts[0]!]: { resources: { VCPU: 6 } } } },
      { project_id: PROJECT, start: at(now + HOUR), end: at(now + 2 * HOUR), query: 'resources=VCPU:7&count=3' },
    ];
    for (const hold of holds) {
      const simulated = await problem(await simulate([{ op: 'add_hold', hold }]));
      const real = await problem(await t.call('POST', '/ext/holds', { body: hold }));
      expect(simulated.status, JSON.stringify(hold)).toBeGreaterThanOrEqual(400);
      expect(simulated, JSON.stringify(hold)).toEqual(real);
    }
    const gangs = [
      gangBody([
        { host: hosts[0]!, vcpu: 4 },
        { host: hosts[1]!, vcpu: 1 },
      ]),
      gangBody(
        [
          { host: hosts[1]!, vcpu: 1 },
          { host: hosts[2]!, vcpu: 1 },
        ],
        { domain: AGG },
      ),
      gangBody([{ host: missing, vcpu: 1 }]),
    ];
    for (const gang of gangs) {
      const simulated = await problem(await simulate([{ op: 'add_gang', gang }]));
      const real = await problem(await t.call('POST', '/ext/gangs', { body: gang }));
      expect(simulated.status, JSON.stringify(gang)).toBeGreaterThanOrEqual(400);
      expect(simulated, JSON.stringify(gang)).toEqual(real);
    }
    // A claim on held capacity: refused by the holds' guard, in its words.
    const held = {
      project_id: PROJECT,
      start: at(now + HOUR),
      end: at(now + 2 * HOUR),
      allocations: { [hosts[1]!]: { resources: { VCPU: 8 } } },
    };
    const onHeld = gangBody([{ host: hosts[1]!, vcpu: 1 }]);
    const simulated = await problem(
      await simulate([
        { op: 'add_hold', hold: held },
        { op: 'add_gang', gang: onHeld },
      ]),
    );
    expect((await t.call('POST', '/ext/holds', { body: held })).status).toBe(201);
    const real = await problem(await t.call('POST', '/ext/gangs', { body: onHeld }));
    expect(real.status).toBe(409);
    expect(simulated).toEqual(real);
  });
});
