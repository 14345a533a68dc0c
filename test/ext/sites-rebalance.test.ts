// Rebalancing while connected (demarcation, docs/sites.md): a site whose
// slice has less than the low watermark left asks the primary for `step`
// more; one with more than the high watermark left gives `step` back, never
// below what is drawn; each an edit of its hold at the generation it read.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Deps } from '../../src/deps.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { SITE_STATE } from '../../src/ext/sites/runtime.js';
import { instanceClaim } from '../helpers/claims.js';
import { type Sqld, startSqld } from '../helpers/sqld.js';
import { waitUntil } from '../helpers/wait.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const AGG = 'aaaaaaaa-0000-4000-8000-0000000000b1';

let sqld: Sqld | undefined;
let dir = '';
const apps: { deps: Deps; app: ReturnType<typeof createApp> }[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'site-rebalance-'));
  sqld = await startSqld();
  const primary = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: sqld.url, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), silent);
  apps.push({ deps: primary, app: createApp(primary) });
});
afterAll(() => {
  for (const { deps } of apps) {
    deps.extensions.state(SITE_STATE)?.stop();
    deps.store.close();
  }
  sqld?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const call = (at: number, method: string, path: string, body?: unknown) =>
  apps[at]!.app.request(path, {
    method,
    headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

const sliceOnPrimary = async () =>
  (await (await call(0, 'GET', '/ext/sites/site-r')).json()) as {
    hold_uuid: string;
    generation: number;
    capacity: Record<string, { resources: { VCPU: number } }>;
  };

describe('a connected site', () => {
  it('asks for more below the low watermark and gives back above the high one', async () => {
    const host = crypto.randomUUID();
    expect((await call(0, 'POST', '/resource_providers', { name: host, uuid: host })).status).toBe(200);
    await call(0, 'PUT', `/resource_providers/${host}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 16 } },
    });
    await call(0, 'PUT', `/resource_providers/${host}/aggregates`, { resource_provider_generation: 1, aggregates: [AGG] });
    expect((await call(0, 'PUT', '/ext/sites/site-r', { aggregate: AGG, capacity: { [host]: { resources: { VCPU: 4 } } } })).status).toBe(
      200,
    );
    // The slice all drawn before the site starts (a claim naming the site's hold draws from it).
    const hold = (await sliceOnPrimary()).hold_uuid;
    const consumers: string[] = [];
    for (let i = 0; i < 4; i++) {
      consumers.push(crypto.randomUUID());
      const res = await call(0, 'PUT', `/allocations/${consumers[i]}?ext_hold=${hold}`, instanceClaim(host, { VCPU: 1 }));
      expect(res.status, await res.clone().text()).toBe(204);
    }
    const site = await buildNodeDeps(
      loadConfig({
        PLACEMENT_DB_URL: sqld!.url,
        PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
        PLACEMENT_SITE: 'site-r',
        PLACEMENT_SITE_DB_PATH: join(dir, 'site-r.db'),
        PLACEMENT_WORKERS: '1',
        PLACEMENT_SITE_PROBE_MS: '100',
        PLACEMENT_SITE_LOW_WATERMARK: '0.25',
        PLACEMENT_SITE_HIGH_WATERMARK: '0.75',
        PLACEMENT_SITE_REBALANCE_STEP: '2',
      }),
      silent,
    );
    apps.push({ deps: site, app: createApp(site) });
    await site.extensions.start(site);
    // 4 of 4 drawn, nothing left (below 25 %): it asks for 2 more (2 of 6 left: within the marks).
    await waitUntil('the slice has grown', async () => (await sliceOnPrimary()).capacity[host]!.resources.VCPU === 6);
    const grown = await sliceOnPrimary();
    // Every consumer is drawn from the slice on the primary: the primary sees 6 held, 4 of them drawn.
    let granted = 0;
    for (;;) {
      const res = await call(0, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(host, { VCPU: 1 }));
      if (res.status !== 204) break;
      granted += 1;
    }
    expect(granted).toBe(10);
    // Released: the site gives its slice back, step by step, down to 1 (what is drawn, at least 1).
    for (const consumer of consumers) expect((await call(1, 'DELETE', `/allocations/${consumer}`)).status).toBe(204);
    await waitUntil('the slice has shrunk', async () => (await sliceOnPrimary()).capacity[host]!.resources.VCPU === 1);
    expect((await sliceOnPrimary()).generation).toBeGreaterThan(grown.generation);
  });
});
