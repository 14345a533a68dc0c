// A site's slice on a libSQL server (sqld) as the primary, with three
// instances on it (the primary's own and those of sites B and C, each with its
// own connection): they race ordinary claims on site A's provider and never
// get A's slice; another site's slice cannot take it either (docs/sites.md).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { instanceClaim } from '../helpers/claims.js';
import { type Sqld, startSqld } from '../helpers/sqld.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const AGG_A = 'aaaaaaaa-0000-4000-8000-0000000000a1';

let sqld: Sqld | undefined;
const instances: { deps: Deps; app: ReturnType<typeof createApp> }[] = [];

beforeAll(async () => {
  sqld = await startSqld();
  for (let i = 0; i < 3; i++) {
    const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: sqld.url, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), silent);
    instances.push({ deps, app: createApp(deps) });
  }
});
afterAll(() => {
  for (const { deps } of instances) deps.store.close();
  sqld?.stop();
});

const call = (at: number, method: string, path: string, body?: unknown) =>
  instances[at]!.app.request(path, {
    method,
    headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe("a site's slice on sqld", () => {
  it('is never taken by racing claims from three instances, nor by another site', async () => {
    const host = crypto.randomUUID();
    expect((await call(0, 'POST', '/resource_providers', { name: host, uuid: host })).status).toBe(200);
    await call(0, 'PUT', `/resource_providers/${host}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 16 } },
    });
    await call(0, 'PUT', `/resource_providers/${host}/aggregates`, { resource_provider_generation: 1, aggregates: [AGG_A] });
    const put = await call(0, 'PUT', '/ext/sites/site-a', { aggregate: AGG_A, capacity: { [host]: { resources: { VCPU: 10 } } } });
    expect(put.status, await put.clone().text()).toBe(200);

    // 24 claims of 1 VCPU from the primary's instance and sites B and C at once: 16 - 10 = 6 fit.
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) => call(i % 3, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(host, { VCPU: 1 }))),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.every((s) => s === 204 || s === 409)).toBe(true);
    expect(statuses.filter((s) => s === 204).length).toBeLessThanOrEqual(6);
    // A claim lost to a concurrent update is tried again, one at a time, until one is refused.
    for (let at = 0; ; at = (at + 1) % 3) {
      const res = await call(at, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(host, { VCPU: 1 }));
      if (res.status === 409) break;
      expect(res.status).toBe(204);
    }
    const usages = (await (await call(1, 'GET', `/resource_providers/${host}/usages`)).json()) as { usages: { VCPU: number } };
    expect(usages.usages.VCPU).toBe(6);

    // Site B's slice cannot take any of A's: nothing is left beside A's slice and the claims.
    const other = await call(2, 'PUT', '/ext/sites/site-b', { aggregate: AGG_A, capacity: { [host]: { resources: { VCPU: 1 } } } });
    expect(other.status).toBe(409);
    expect(await (await call(1, 'GET', '/ext/sites/site-a')).json()).toMatchObject({ capacity: { [host]: { resources: { VCPU: 10 } } } });
  });
});
