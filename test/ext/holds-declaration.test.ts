// What holds bound is declared once (ext/holds/declaration.ts, a capacity
// set aside: placement/capacity.ts) and every path takes it from there. Here
// one change to it (each held pair may be overbooked by 4) changes all four,
// on one database: the one-batch claim's condition, the ordinary claim's
// decision (the model over what the guard reads), the candidates' rule and
// the audit.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELD_CAPACITY } from '../../src/ext/holds/declaration.js';
import { holds, holdsExtension } from '../../src/ext/holds/extension.js';
import { INVENTORY_KEYS, type SetAsideConstraint, setAsideHoldsSql } from '../../src/placement/capacity.js';
import { type App, adminRequest, siblingApp } from '../helpers/sibling-app.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const PROJECT = 'aaaaaaaa-0000-4000-8000-00000000000b';
const OTHER = 'aaaaaaaa-0000-4000-8000-00000000000c';

/** The one change: every held pair's capacity counts 4 more than its inventory's. */
const OVERBOOKED: SetAsideConstraint = {
  ...HELD_CAPACITY,
  keys: { ...INVENTORY_KEYS, bound: (key) => `(${INVENTORY_KEYS.bound(key)} + 4)` },
};

let t: TestApp;
let overbooked: App;
let host: string;
const holder = randomUUID();

const call = (app: App, method: string, path: string, body?: unknown) => adminRequest(app, method, path, body);

const claim = (vcpu: number, generation: number | null) => ({
  allocations: { [host]: { resources: { VCPU: vcpu } } },
  project_id: PROJECT,
  user_id: 'u',
  consumer_generation: generation,
});

beforeAll(async () => {
  t = await makeTestApp();
  overbooked = (await siblingApp(t, (e) => (e === holds ? holdsExtension(OVERBOOKED) : e))).app;
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

describe('one change to the holds declaration', () => {
  it("changes the one-batch claim's condition (SQL, as of the write)", async () => {
    const fits = async (declaration: SetAsideConstraint) => {
      const [result] = await t.deps.store.readBatch([{ sql: `SELECT (${setAsideHoldsSql(declaration, '?')}) AS ok`, args: [holder] }]);
      return Number(result!.rows[0]!.ok);
    };
    expect(await fits(HELD_CAPACITY)).toBe(0);
    expect(await fits(OVERBOOKED)).toBe(1);
  });

  it("changes the candidates' rule", async () => {
    const offersHost = async (app: App) =>
      host in
      ((await (await call(app, 'GET', '/allocation_candidates?resources=VCPU:1')).json()) as { provider_summaries: object })
        .provider_summaries;
    expect(await offersHost(t.app)).toBe(false);
    expect(await offersHost(overbooked)).toBe(true);
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
