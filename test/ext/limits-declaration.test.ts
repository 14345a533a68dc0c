// Project limits are declared once (ext/limits/declaration.ts) and every path
// is derived from the declaration (placement/capacity.ts, keys of a
// project). Here one change to it (each limit counts double) changes all four,
// on one database: the ordinary claim's decision, the one-batch claim's SQL
// guard, the candidates' rule (ext_within_limits) and the audit (GET /ext/limits).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMIT } from '../../src/db/columns.js';
import { PROJECT_LIMITS } from '../../src/ext/limits/declaration.js';
import { limits, limitsExtension } from '../../src/ext/limits/extension.js';
import { LIMITS as LIMITS_STATE } from '../../src/ext/limits/service.js';
import { type ProjectConstraint, projectConstraintGuard } from '../../src/placement/capacity.js';
import { type App, adminRequest, siblingApp } from '../helpers/sibling-app.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const P = 'aaaaaaaa-0000-4000-8000-00000000000a';

/** The one change: every limit counts twice what the source says. */
const DOUBLED: ProjectConstraint = {
  ...PROJECT_LIMITS,
  bounds: { ...PROJECT_LIMITS.bounds, bound: (l) => `2 * ${l}.${LIMIT.resourceLimit}` },
};

let t: TestApp;
let doubled: App;
let host: string;
const holder = randomUUID();

const call = (app: App, method: string, path: string, body?: unknown) =>
  adminRequest(app, method, path, body, { bodyVersion: '1.38', headers: { 'x-project-id': P } });

const claim = (vcpu: number, generation: number | null) => ({
  allocations: { [host]: { resources: { VCPU: vcpu } } },
  project_id: P,
  user_id: randomUUID(),
  consumer_generation: generation,
  consumer_type: 'INSTANCE',
});

beforeAll(async () => {
  // A registered limit of 2 VCPU (doubled: 4).
  t = await makeTestApp({ PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: JSON.stringify({ registered: { 'class:VCPU': 2 } }) });
  await t.deps.extensions.state(LIMITS_STATE)!.start();
  const sibling = await siblingApp(t, (e) => (e === limits ? limitsExtension(DOUBLED) : e));
  await sibling.deps.extensions.state(LIMITS_STATE)!.start();
  doubled = sibling.app;
  host = randomUUID();
  expect((await t.call('POST', '/resource_providers', { body: { name: 'host', uuid: host } })).status).toBe(200);
  const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 64 } } };
  expect((await t.call('PUT', `/resource_providers/${host}/inventories`, { body: inventory })).status).toBe(200);
});
afterAll(() => t.close());

describe('one change to the project limits declaration', () => {
  it("changes the one-batch claim's guard (a new consumer, SQL as of the write)", async () => {
    expect((await call(t.app, 'PUT', `/allocations/${holder}`, claim(3, null))).status).toBe(409);
    expect((await call(doubled, 'PUT', `/allocations/${holder}`, claim(3, null))).status).toBe(204);
    // The guard's condition itself, on the holder's 3 VCPU: over 2, within 4.
    const holds = async (declaration: ProjectConstraint) => {
      const guard = projectConstraintGuard(declaration, { counts: () => true, refusal: () => ({ error: new Error('refused') }) });
      const [result] = await t.deps.store.readBatch([{ sql: `SELECT ${guard.holdsSql('?')} AS ok`, args: [holder] }]);
      return Number(result!.rows[0]!.ok);
    };
    expect(await holds(PROJECT_LIMITS)).toBe(0);
    expect(await holds(DOUBLED)).toBe(1);
  });

  it("changes the candidates' rule (ext_within_limits)", async () => {
    const count = async (app: App) =>
      (
        (await (await call(app, 'GET', '/allocation_candidates?resources=VCPU:1&ext_within_limits=true')).json()) as {
          allocation_requests: unknown[];
        }
      ).allocation_requests.length;
    expect(await count(t.app)).toBe(0);
    expect(await count(doubled)).toBe(1);
  });

  it("changes the audit's answer", async () => {
    const report = async (app: App) => (await call(app, 'GET', `/ext/limits?project_id=${P}`)).json();
    expect(await report(t.app)).toEqual({ project_id: P, limits: { VCPU: { limit: 2, usage: 3, remaining: -1 } } });
    expect(await report(doubled)).toEqual({ project_id: P, limits: { VCPU: { limit: 4, usage: 3, remaining: 1 } } });
    const over = async (app: App) => (await (await call(app, 'GET', '/ext/limits')).json()) as { projects?: unknown[] };
    expect(JSON.stringify(await over(t.app))).toContain(P);
    expect(JSON.stringify(await over(doubled))).not.toContain(P);
  });

  it("changes the ordinary claim's decision (a consumer that grows)", async () => {
    const refused = await call(t.app, 'PUT', `/allocations/${holder}`, claim(4, 1));
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('(limit 2, usage 3, requested 1)');
    expect((await call(doubled, 'PUT', `/allocations/${holder}`, claim(4, 1))).status).toBe(204);
    expect((await call(doubled, 'PUT', `/allocations/${holder}`, claim(5, 2))).status).toBe(409);
  });
});
