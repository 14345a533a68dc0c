// A capacity constraint is declared once (ext/counters/declaration.ts) and
// every path is derived from it (placement/capacity.ts). Here one change
// to the declaration (each unit weighs twice on the counter) changes all
// four: the candidates' capacity rule, the ordinary claim's decision, the
// one-batch claim's SQL guard and the audit's query, on one database.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { counters } from '../../src/ext/counters/extension.js';
import { COUNTERS } from '../../src/ext/counters/declaration.js';
import type { Extension } from '../../src/extension.js';
import { constraintGuard, constraintReadHook, holdsSql, overBoundSql, type ProviderConstraint } from '../../src/placement/capacity.js';
import { COUNTER_USE } from '../../src/db/columns.js';
import { type App, adminRequest, siblingApp } from '../helpers/sibling-app.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

/** The one change: a unit of a class weighs twice what the provider's consumption says. */
const DOUBLED: ProviderConstraint = { ...COUNTERS, weights: { ...COUNTERS.weights, weight: (cc) => `2 * ${cc}.${COUNTER_USE.amount}` } };

const countersOf = (declaration: ProviderConstraint): Extension => ({
  ...counters,
  read: [constraintReadHook(declaration)],
  writes: { claimGuards: [constraintGuard(declaration)] },
});

let t: TestApp;
let doubled: App;
let host: string;
const holder = randomUUID();

const call = (app: App, method: string, path: string, body?: unknown) => adminRequest(app, method, path, body);

const claim = (amount: number, generation: number | null) => ({
  allocations: { [host]: { resources: { CUSTOM_SLICE: amount } } },
  project_id: 'p',
  user_id: 'u',
  consumer_generation: generation,
});

beforeAll(async () => {
  t = await makeTestApp();
  doubled = (await siblingApp(t, (e) => (e === counters ? countersOf(DOUBLED) : e))).app;
  host = randomUUID();
  expect((await t.call('PUT', '/resource_classes/CUSTOM_SLICE')).status).toBe(201);
  expect((await t.call('POST', '/resource_providers', { body: { name: 'gpu', uuid: host } })).status).toBe(200);
  const inventory = { resource_provider_generation: 0, inventories: { CUSTOM_SLICE: { total: 10 } } };
  expect((await t.call('PUT', `/resource_providers/${host}/inventories`, { body: inventory })).status).toBe(200);
  // One counter of 8 that each slice consumes once: 5 slices held load it to 5 (doubled: 10, over its 8).
  const document = { resource_provider_generation: 1, counters: { mem: 8 }, consumption: { CUSTOM_SLICE: { mem: 1 } } };
  expect((await t.call('PUT', `/ext/resource_providers/${host}/counters`, { body: document })).status).toBe(200);
  expect((await t.call('PUT', `/allocations/${holder}`, { body: claim(5, null), version: '1.28' })).status).toBe(204);
});
afterAll(() => t.close());

describe('one change to the counters declaration', () => {
  it("changes the candidates' capacity rule", async () => {
    const listed = async (app: App) =>
      Object.keys(
        ((await (await call(app, 'GET', '/allocation_candidates?resources=CUSTOM_SLICE:1')).json()) as { provider_summaries: object })
          .provider_summaries,
      );
    expect(await listed(t.app)).toEqual([host]);
    expect(await listed(doubled)).toEqual([]);
  });

  it("changes the ordinary claim's decision (a consumer that grows)", async () => {
    const refused = await call(doubled, 'PUT', `/allocations/${holder}`, claim(6, 1));
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain("(shared counter 'mem': 12 of 8)");
  });

  it("changes the one-batch claim's guard (SQL, as of the write)", async () => {
    const holds = async (declaration: ProviderConstraint) => {
      const [result] = await t.deps.store.readBatch([{ sql: `SELECT ${holdsSql(declaration, '?')} AS ok`, args: [holder] }]);
      return Number(result!.rows[0]!.ok);
    };
    expect(await holds(COUNTERS)).toBe(1);
    expect(await holds(DOUBLED)).toBe(0);
    // Through the app: a new consumer's claim, refused in the doubled app only.
    const fresh = randomUUID();
    expect((await call(doubled, 'PUT', `/allocations/${fresh}`, claim(1, null))).status).toBe(409);
  });

  it("changes the audit's query", async () => {
    const over = async (declaration: ProviderConstraint) =>
      (await t.deps.store.readBatch([{ sql: overBoundSql(declaration), args: [] }]))[0]!.rows;
    expect(await over(COUNTERS)).toHaveLength(0);
    expect((await over(DOUBLED)).map((r) => [r.uuid, r.name, r.total, r.load])).toEqual([[host, 'mem', 8, 10]]);
  });

  it('leaves the declared app as it was: the same claims pass there', async () => {
    expect((await t.call('PUT', `/allocations/${holder}`, { body: claim(6, 1), version: '1.28' })).status).toBe(204);
  });
});
