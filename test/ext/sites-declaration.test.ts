// The sites' limit slices are declared once (ext/sites/declaration.ts, a
// capacity set aside from the project limits: placement/capacity.ts) and
// every path takes them from there. Here one change to it (each slice holds
// twice its amount) changes all four, on one database: the one-batch claim's
// condition, the ordinary claim's decision, the PUT's admission of another
// site's slice and the audit. (No candidates' rule counts the slices yet:
// ext_within_limits is the limits' own.)
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_LIMIT_SLICE } from '../../src/db/columns.js';
import { LIMITS as LIMITS_STATE } from '../../src/ext/limits/service.js';
import { SITE_LIMIT_SLICES } from '../../src/ext/sites/declaration.js';
import { sites, sitesExtension } from '../../src/ext/sites/extension.js';
import { type SetAsideConstraint, setAsideHoldsSql } from '../../src/placement/capacity.js';
import { provider } from '../helpers/providers.js';
import { type App, adminRequest, siblingApp } from '../helpers/sibling-app.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const P = 'aaaaaaaa-0000-4000-8000-00000000000d';
const AGG = 'aaaaaaaa-0000-4000-8000-0000000000a9';

/** The one change: a site's slice holds twice what the operator gave it. */
const DOUBLED: SetAsideConstraint = {
  ...SITE_LIMIT_SLICES,
  setAside: { ...SITE_LIMIT_SLICES.setAside, amount: (s) => `2 * ${s}.${SITE_LIMIT_SLICE.amount}` },
};

let t: TestApp;
let doubled: App;
let host: string;
const holder = randomUUID();

const call = (app: App, method: string, path: string, body?: unknown) => adminRequest(app, method, path, body, { bodyVersion: '1.38' });

const claim = (vcpu: number, generation: number | null) => ({
  allocations: { [host]: { resources: { VCPU: vcpu } } },
  project_id: P,
  user_id: 'u',
  consumer_generation: generation,
  consumer_type: 'INSTANCE',
});

/** A site's PUT body: 1 VCPU of capacity on the host, a slice of `vcpu` of P's limit. */
const site = (vcpu: number) => ({ aggregate: AGG, capacity: { [host]: { resources: { VCPU: 1 } } }, limits: { [P]: { VCPU: vcpu } } });

beforeAll(async () => {
  // P's limit: 10 VCPU.
  t = await makeTestApp({ PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: JSON.stringify({ projects: { [P]: { 'class:VCPU': 10 } } }) });
  await t.deps.extensions.state(LIMITS_STATE)!.start();
  const sibling = await siblingApp(t, (e) => (e === sites ? sitesExtension(DOUBLED) : e));
  await sibling.deps.extensions.state(LIMITS_STATE)!.start();
  doubled = sibling.app;
  host = await provider(t, { inventory: { VCPU: { total: 64 } }, aggregates: [AGG] });
  // Site a's slice of 3 of P's 10, then 5 claimed by P: 8 (doubled: 11, over the 10).
  const put = await call(t.app, 'PUT', '/ext/sites/site-a', site(3));
  expect(put.status, await put.clone().text()).toBe(200);
  expect((await call(t.app, 'PUT', `/allocations/${holder}`, claim(5, null))).status).toBe(204);
});
afterAll(() => t.close());

describe('one change to the sites declaration', () => {
  it("changes the one-batch claim's condition (SQL, as of the write)", async () => {
    const fits = async (declaration: SetAsideConstraint) => {
      const [result] = await t.deps.store.readBatch([{ sql: `SELECT (${setAsideHoldsSql(declaration, '?')}) AS ok`, args: [holder] }]);
      return Number(result!.rows[0]!.ok);
    };
    expect(await fits(SITE_LIMIT_SLICES)).toBe(1);
    expect(await fits(DOUBLED)).toBe(0);
  });

  it("changes the ordinary claim's decision (a consumer that grows)", async () => {
    const refused = await call(doubled, 'PUT', `/allocations/${holder}`, claim(6, 1));
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('(limit 10, usage 5, held for sites 6, requested 1)');
    expect((await call(t.app, 'PUT', `/allocations/${holder}`, claim(6, 1))).status).toBe(204);
  });

  it("changes the PUT's admission of another site's slice", async () => {
    // 6 used, site a's 3 and site b's 1: 10 of 10 (doubled: 6 + 6 + 2).
    const refused = await call(doubled, 'PUT', '/ext/sites/site-b', site(1));
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('placement.ext.limit_exceeded');
    const admitted = await call(t.app, 'PUT', '/ext/sites/site-b', site(1));
    expect(admitted.status, await admitted.clone().text()).toBe(200);
  });

  it("changes the audit's answer", async () => {
    const over = async (app: App) =>
      ((await (await call(app, 'GET', '/diagnostics/audit')).json()) as { extensions: { site_limit_slices: { over_limit: unknown[] } } })
        .extensions.site_limit_slices.over_limit;
    expect(await over(t.app)).toEqual([]);
    expect(await over(doubled)).toEqual([{ project_id: P, resource_class: 'VCPU', usage: 6, held_for_sites: 8, limit: 10 }]);
  });
});
