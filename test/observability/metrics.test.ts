// GET /metrics through the app: the HTTP metrics by route template, the
// database and product counters, openstack-exporter's capacity gauges (one
// database read), who may scrape, and promtool's verdict on the text.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { createDataStore } from '../../src/db/client.js';
import { openNodeClient } from '../../src/db/node-client.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { LostRace, withRaceRetries } from '../../src/db/write-batch.js';
import { leaseStatement, sweepLeases } from '../../src/ext/allocation-ends.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { itWithPart } from '../helpers/parts.js';
import { PROMTOOL_MISSING, parseSamples, promtoolCheck, type Sample, sampleValue } from '../helpers/prometheus-text.js';

const CN1 = '5e8ebc3c-52b5-4cfd-9e37-1c2a3a2b5b10';
const CN2 = '5e8ebc3c-52b5-4cfd-9e37-1c2a3a2b5b11';
const CONSUMER = '7a7b1f3c-0a4e-4a31-9d5c-9c1b6a0e2f01';
const PROJECT = '6a1c5e2e-8f0e-4d41-9c53-0c6e3b2b1a01';
const USER = '6a1c5e2e-8f0e-4d41-9c53-0c6e3b2b1a02';
const silent = { debug() {}, info() {}, warn() {}, error() {} };

let t: TestApp;

async function ok(res: Promise<Response>): Promise<Response> {
  const r = await res;
  if (r.status >= 300) throw new Error(`${r.status} ${await r.text()}`);
  return r;
}

async function scrape(app: { request: TestApp['app']['request'] } = t.app, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await app.request('/metrics', { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseSamples(await res.text());
}

const httpCount = (samples: Sample[], method: string, route: string, status: number) =>
  sampleValue(samples, 'http_server_request_duration_seconds_count', {
    http_request_method: method,
    http_route: route,
    http_response_status_code: String(status),
  }) ?? 0;

beforeAll(async () => {
  t = await makeTestApp();
  await ok(t.call('POST', '/resource_providers', { body: { name: 'cn1', uuid: CN1 } }));
  await ok(t.call('POST', '/resource_providers', { body: { name: 'cn2', uuid: CN2 } }));
  await ok(
    t.call('PUT', `/resource_providers/${CN1}/inventories`, {
      body: {
        resource_provider_generation: 0,
        inventories: { VCPU: { total: 16, reserved: 2, allocation_ratio: 4 }, MEMORY_MB: { total: 4096 } },
      },
    }),
  );
  await ok(
    t.call('PUT', `/resource_providers/${CN2}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } },
    }),
  );
  await ok(
    t.call('PUT', `/allocations/${CONSUMER}`, {
      body: {
        allocations: { [CN1]: { resources: { VCPU: 3, MEMORY_MB: 512 } } },
        project_id: PROJECT,
        user_id: USER,
        consumer_generation: null,
      },
      version: '1.28',
    }),
  );
});
afterAll(() => t.close());

describe('GET /metrics', () => {
  it("shows capacity under openstack-exporter's names and labels: hostname, resourcetype", async () => {
    const samples = await scrape();
    const at = (name: string, hostname: string, resourcetype: string) => sampleValue(samples, name, { hostname, resourcetype });
    expect(at('openstack_placement_resource_total', 'cn1', 'VCPU')).toBe(16);
    expect(at('openstack_placement_resource_reserved', 'cn1', 'VCPU')).toBe(2);
    expect(at('openstack_placement_resource_allocation_ratio', 'cn1', 'VCPU')).toBe(4);
    expect(at('openstack_placement_resource_usage', 'cn1', 'VCPU')).toBe(3);
    expect(at('openstack_placement_resource_usage', 'cn1', 'MEMORY_MB')).toBe(512);
    expect(at('openstack_placement_resource_total', 'cn2', 'VCPU')).toBe(8);
    // As GET /resource_providers/{uuid}/usages: a class with inventory and no allocation is 0.
    expect(at('openstack_placement_resource_usage', 'cn2', 'VCPU')).toBe(0);
    expect(at('openstack_placement_resource_total', 'cn2', 'MEMORY_MB')).toBeUndefined();
    expect(sampleValue(samples, 'placement_database_up')).toBe(1);
    expect(sampleValue(samples, 'placement_metrics_processes')).toBe(1);
  });

  it('reads the database once per scrape', async () => {
    const counted = countRoundTrips(await openNodeClient(t.dbUrl));
    const config = loadConfig({ PLACEMENT_DB_URL: t.dbUrl });
    const deps = makeDeps(createDataStore(counted.client), config, silent);
    const app = createApp(deps);
    counted.reset();
    const samples = await scrape(app);
    expect(counted.count()).toBe(1);
    expect(sampleValue(samples, 'openstack_placement_resource_total', { hostname: 'cn1', resourcetype: 'MEMORY_MB' })).toBe(4096);
    deps.store.close();
  });

  it('counts requests by method, route template and status code, whichever API serves them', async () => {
    const before = await scrape();
    await t.call('GET', `/resource_providers/${CN1}`);
    await t.call('GET', `/resource_providers/${CN1}`);
    await t.call('GET', '/resource_providers/5e8ebc3c-0000-4cfd-9e37-1c2a3a2b5b10');
    await t.app.request('/resource_providers'); // no token
    await t.call('GET', '/resource_providers', { version: '9.99' });
    await t.app.request('/accelerator/v2/device_profiles', { headers: { 'x-auth-token': 'admin' } });
    await t.call('GET', '/no/such/path');
    const after = await scrape();
    const delta = (method: string, route: string, status: number) =>
      httpCount(after, method, route, status) - httpCount(before, method, route, status);
    expect(delta('GET', '/resource_providers/{uuid}', 200)).toBe(2);
    expect(delta('GET', '/resource_providers/{uuid}', 404)).toBe(1);
    expect(delta('GET', '/resource_providers', 401)).toBe(1);
    expect(delta('GET', '/resource_providers', 406)).toBe(1);
    expect(delta('GET', '/accelerator/v2/device_profiles', 200)).toBe(1);
    // No route matched: the label is empty (absent), so unknown URLs cannot flood the series.
    expect(delta('GET', '', 404)).toBe(1);
    expect(delta('GET', '/metrics', 200)).toBe(1);
    expect(sampleValue(after, 'http_server_active_requests', { http_request_method: 'GET' })).toBe(1); // the scrape itself
    expect(after.some((s) => s.labels.http_route?.includes(CN1))).toBe(false);
  });

  it('times database read and write batches', async () => {
    const before = await scrape();
    await ok(t.call('PUT', '/traits/CUSTOM_METRICS_TEST'));
    await t.call('GET', `/resource_providers/${CN1}/inventories`);
    const after = await scrape();
    const count = (samples: Sample[], op: string) =>
      sampleValue(samples, 'db_client_operation_duration_seconds_count', { db_system_name: 'sqlite', db_operation_name: op }) ?? 0;
    expect(count(after, 'write_batch')).toBeGreaterThan(count(before, 'write_batch'));
    expect(count(after, 'read_batch')).toBeGreaterThan(count(before, 'read_batch'));
  });

  it('counts candidate searches, the candidates they return, and the tree cache', async () => {
    const before = await scrape();
    await ok(t.call('GET', '/allocation_candidates?resources=VCPU:1'));
    const after = await scrape();
    const searches = (s: Sample[]) => sampleValue(s, 'placement_allocation_candidates_search_duration_seconds_count') ?? 0;
    expect(searches(after) - searches(before)).toBe(1);
    const returned = (s: Sample[]) => sampleValue(s, 'placement_allocation_candidates_returned_sum') ?? 0;
    expect(returned(after) - returned(before)).toBe(2);
    expect(sampleValue(after, 'placement_tree_cache_providers')).toBe(2);
    expect(sampleValue(after, 'placement_tree_cache_refreshes_total', { kind: 'full' })).toBeGreaterThanOrEqual(1);
  });

  it('counts answers cut by the candidate cap', async () => {
    const capped = await makeTestApp({ PLACEMENT_MAX_ALLOCATION_CANDIDATES: '1' });
    try {
      for (const [name, uuid] of [
        ['a', CN1],
        ['b', CN2],
      ] as const) {
        await ok(capped.call('POST', '/resource_providers', { body: { name, uuid } }));
        await ok(
          capped.call('PUT', `/resource_providers/${uuid}/inventories`, {
            body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
          }),
        );
      }
      const cut = async () => sampleValue(await scrape(capped.app), 'placement_allocation_candidates_cut_total', { reason: 'cap' }) ?? 0;
      const before = await cut();
      const body = (await (await ok(capped.call('GET', '/allocation_candidates?resources=VCPU:1'))).json()) as {
        allocation_requests: unknown[];
      };
      expect(body.allocation_requests).toHaveLength(1);
      expect((await cut()) - before).toBe(1);
    } finally {
      capped.close();
    }
  });

  it('counts conflicts by error code and capacity refusals by resource class', async () => {
    const conflicts = (s: Sample[], kind: string) => sampleValue(s, 'placement_write_conflicts_total', { kind }) ?? 0;
    const refusals = (s: Sample[]) => sampleValue(s, 'placement_capacity_refusals_total', { resource_class: 'VCPU' }) ?? 0;
    const before = await scrape();
    const stale = await t.call('PUT', `/resource_providers/${CN2}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 9 } } },
    });
    expect(stale.status).toBe(409);
    const tooMuch = await t.call('PUT', '/allocations/7a7b1f3c-0a4e-4a31-9d5c-9c1b6a0e2f02', {
      body: { allocations: { [CN2]: { resources: { VCPU: 9 } } }, project_id: PROJECT, user_id: USER, consumer_generation: null },
      version: '1.28',
    });
    expect(tooMuch.status).toBe(409);
    const after = await scrape();
    expect(conflicts(after, 'placement.concurrent_update') - conflicts(before, 'placement.concurrent_update')).toBe(1);
    expect(refusals(after) - refusals(before)).toBe(1);
  });

  it('counts writes decided again after a lost race, by the table that raced', async () => {
    const retries = async () => sampleValue(await scrape(), 'placement_write_retries_total', { kind: 'resource_providers' }) ?? 0;
    const before = await retries();
    let attempts = 0;
    await withRaceRetries(async () => {
      attempts += 1;
      if (attempts < 3)
        throw new LostRace('UPDATE resource_providers SET generation = generation + 1 WHERE id = ? AND generation = ?', t.deps.store.watch);
    });
    expect((await retries()) - before).toBe(2);
  });

  it('counts lease sweeps (runs, failures) and the consumers they released or let go', async () => {
    const counts = async () => {
      const samples = await scrape();
      return {
        ok: sampleValue(samples, 'placement_lease_sweep_runs_total', { outcome: 'ok' }) ?? 0,
        failed: sampleValue(samples, 'placement_lease_sweep_runs_total', { outcome: 'failed' }) ?? 0,
        released: sampleValue(samples, 'placement_lease_sweep_released_total') ?? 0,
        dropped: sampleValue(samples, 'placement_lease_sweep_dropped_total') ?? 0,
      };
    };
    const before = await counts();
    // Two leased consumers on cn2: one left alone, one rewritten after its lease was set.
    const [idle, rewritten] = [crypto.randomUUID(), crypto.randomUUID()];
    for (const consumer of [idle, rewritten]) {
      await ok(
        t.call('PUT', `/allocations/${consumer}`, {
          body: { allocations: { [CN2]: { resources: { VCPU: 1 } } }, project_id: PROJECT, user_id: USER, consumer_generation: null },
          version: '1.28',
        }),
      );
      // Its lease as any extension that ends allocations writes it (leases, gangs, holds, preemption).
      await t.deps.store.writeBatch([leaseStatement(consumer, 1, Date.now())]);
    }
    await ok(
      t.call('PUT', `/allocations/${rewritten}`, {
        body: { allocations: { [CN2]: { resources: { VCPU: 2 } } }, project_id: PROJECT, user_id: USER, consumer_generation: 1 },
        version: '1.28',
      }),
    );
    // An hour later: the sweep releases one consumer and lets the other's lease go.
    const later = { ...t.deps, clock: () => new Date(Date.now() + 3600_000) };
    expect(await sweepLeases(later)).toBe(2);
    const swept = await counts();
    expect(swept).toEqual({ ok: before.ok + 1, failed: before.failed, released: before.released + 1, dropped: before.dropped + 1 });
    // A sweep that finds nothing counts as a run; one whose database read fails counts as failed.
    await sweepLeases(later);
    const gone = { ...t.deps.store, readBatch: () => Promise.reject(new Error('database unreachable')) };
    expect(await sweepLeases({ ...later, store: gone })).toBe(0);
    expect(await counts()).toEqual({ ...swept, ok: swept.ok + 1, failed: swept.failed + 1 });
  });

  it('leaves the capacity gauges out when PLACEMENT_METRICS_CAPACITY=false', async () => {
    const off = await makeTestApp({ PLACEMENT_METRICS_CAPACITY: 'false' });
    try {
      await ok(off.call('POST', '/resource_providers', { body: { name: 'x', uuid: CN1 } }));
      await ok(
        off.call('PUT', `/resource_providers/${CN1}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
        }),
      );
      const samples = await scrape(off.app);
      expect(samples.filter((s) => s.name.startsWith('openstack_placement_resource_'))).toEqual([]);
      expect(sampleValue(samples, 'openstack_placement_up')).toBe(1);
      expect(sampleValue(samples, 'placement_outbox_depth', { topic: 'bind' })).toBe(0);
    } finally {
      off.close();
    }
  });

  itWithPart(PROMTOOL_MISSING, 'passes promtool check metrics', async () => {
    await sweepLeases(t.deps); // the lease sweep's series, whichever test ran first
    const text = await (await t.app.request('/metrics')).text();
    expect(text).toContain('placement_lease_sweep_released_total');
    const { problems } = promtoolCheck(text);
    // The one lint left is openstack-exporter's own name: a gauge ending in _total, kept so existing dashboards work.
    expect(problems).toEqual(['openstack_placement_resource_total non-counter metrics should not have "_total" suffix']);
    const off = await makeTestApp({ PLACEMENT_METRICS_CAPACITY: 'false' });
    try {
      await off.call('GET', '/resource_providers');
      const clean = promtoolCheck(await (await off.app.request('/metrics')).text());
      expect(clean).toEqual({ status: 0, problems: [] });
    } finally {
      off.close();
    }
  });
});

describe('who may scrape', () => {
  let token: TestApp;
  beforeAll(async () => {
    token = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: JSON.stringify({ 'admin-tok': { roles: ['admin'] }, 'member-tok': { roles: ['member'], project_id: 'p1' } }),
      PLACEMENT_METRICS_TOKEN: 'scrape-tok',
    });
  });
  afterAll(() => token.close());

  it('takes the scrape token or an admin token, and answers others in the API envelope', async () => {
    const status = async (headers: Record<string, string>) => (await token.app.request('/metrics', { headers })).status;
    expect(await status({})).toBe(401);
    expect(await status({ authorization: 'Bearer wrong' })).toBe(401);
    expect(await status({ 'x-auth-token': 'member-tok' })).toBe(403);
    expect(await status({ authorization: 'Bearer scrape-tok' })).toBe(200);
    expect(await status({ 'x-auth-token': 'scrape-tok' })).toBe(200);
    expect(await status({ 'x-auth-token': 'admin-tok' })).toBe(200);
    const refused = await token.app.request('/metrics', { headers: { accept: 'application/json' } });
    expect(((await refused.json()) as { errors: { status: number }[] }).errors[0]!.status).toBe(401);
    // The scrape token is no API token.
    expect((await token.app.request('/resource_providers', { headers: { 'x-auth-token': 'scrape-tok' } })).status).toBe(401);
  });

  it('is open in noauth2, as the rest of a local service', async () => {
    expect((await t.app.request('/metrics')).status).toBe(200);
  });
});
