// The lease sweep on a libSQL server (sqld), as Worker mode runs it: one
// remote write batch releases exactly what the embedded file releases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { sweepExpiredLeases } from '../../src/ext/allocation-ends.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { startSqld, type Sqld } from '../helpers/sqld.js';
import { instanceClaim } from '../helpers/claims.js';

let sqld: Sqld | undefined;
let deps: Deps;
let app: ReturnType<typeof createApp>;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

beforeAll(async () => {
  sqld = await startSqld();
  deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: sqld.url, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), silent);
  app = createApp(deps);
});
afterAll(() => {
  deps?.store.close();
  sqld?.stop();
});

const call = (method: string, path: string, body?: unknown) =>
  app.request(path, {
    method,
    headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe('lease sweep on sqld', () => {
  it('releases an expired lease', async () => {
    const host = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: host, uuid: host })).status).toBe(200);
    await call('PUT', `/resource_providers/${host}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } });
    const consumer = crypto.randomUUID();
    const claim = await call('PUT', `/allocations/${consumer}`, instanceClaim(host, { VCPU: 1 }));
    expect(claim.status).toBe(204);
    expect((await call('PUT', `/ext/leases/${consumer}`, { seconds: 1 })).status).toBe(200);
    const outcome = await sweepExpiredLeases(deps.store, Date.now() + 2000);
    expect(outcome).toEqual({ released: [consumer], dropped: [] });
    expect(((await (await call('GET', `/allocations/${consumer}`)).json()) as { allocations: object }).allocations).toEqual({});
  });
});
