// Dependencies explicit: everything an app counts into, caches or
// runs with reaches its code through its Deps, one per app, so two apps built
// in one process with different settings and different databases share
// nothing: neither metrics (HTTP, database, candidates, tree cache, capacity
// refusals), nor the candidates' tree cache and options, nor the write hooks.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conflict } from '../../src/errors.js';
import { writeHooks, type ClaimGuard } from '../../src/placement/writes/kernel.js';
import { parseSamples, type Sample, sampleValue } from '../helpers/prometheus-text.js';
import { seedProvider } from '../helpers/placement-seed.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let a: TestApp;
let b: TestApp;
const aProviders: string[] = [];
const bProviders: string[] = [];

beforeAll(async () => {
  // a: the tree cache on, one candidate at most; b: the tree cache off, the default cap.
  a = await makeTestApp({ PLACEMENT_MAX_ALLOCATION_CANDIDATES: '1', PLACEMENT_CANDIDATE_TREE_CACHE: '1000' });
  b = await makeTestApp({ PLACEMENT_CANDIDATE_TREE_CACHE: '0' });
  for (let i = 0; i < 2; i += 1) {
    aProviders.push((await seedProvider(a.deps, { VCPU: { total: 4, maxUnit: 8 } })).uuid);
    bProviders.push((await seedProvider(b.deps, { VCPU: { total: 4, maxUnit: 8 } })).uuid);
  }
});
afterAll(() => {
  a.close();
  b.close();
});

async function scrape(t: TestApp): Promise<Sample[]> {
  const res = await t.app.request('/metrics');
  expect(res.status).toBe(200);
  return parseSamples(await res.text());
}

/** The figures each app's /metrics shows that the requests below move. */
async function figures(t: TestApp) {
  const s = await scrape(t);
  return {
    candidatesRequests:
      sampleValue(s, 'http_server_request_duration_seconds_count', {
        http_request_method: 'GET',
        http_route: '/allocation_candidates',
        http_response_status_code: '200',
      }) ?? 0,
    searches: sampleValue(s, 'placement_allocation_candidates_search_duration_seconds_count') ?? 0,
    cut: sampleValue(s, 'placement_allocation_candidates_cut_total', { reason: 'cap' }) ?? 0,
    treeCacheProviders: sampleValue(s, 'placement_tree_cache_providers') ?? 0,
    capacityRefusals: sampleValue(s, 'placement_capacity_refusals_total', { resource_class: 'VCPU' }) ?? 0,
    readBatches:
      sampleValue(s, 'db_client_operation_duration_seconds_count', { db_system_name: 'sqlite', db_operation_name: 'read_batch' }) ?? 0,
  };
}

const candidates = async (t: TestApp) =>
  ((await (await t.call('GET', '/allocation_candidates?resources=VCPU:1')).json()) as { provider_summaries: Record<string, unknown> })
    .provider_summaries;

const claim = (t: TestApp, provider: string, vcpu: number) =>
  t.call('PUT', `/allocations/${randomUUID()}`, {
    version: '1.28',
    body: { allocations: { [provider]: { resources: { VCPU: vcpu } } }, project_id: 'p', user_id: 'u', consumer_generation: null },
  });

describe('two apps in one process', () => {
  it('hold their own Deps: metrics, database watch, write hooks', () => {
    expect(a.deps.metrics).not.toBe(b.deps.metrics);
    expect(a.deps.store.watch).not.toBe(b.deps.store.watch);
    expect(a.deps.writeHooks).not.toBe(b.deps.writeHooks);
  });

  it('each answer from its own database, with its own candidate options and tree cache', async () => {
    expect(Object.keys(await candidates(a))).toHaveLength(1); // a's cap: one candidate
    expect(Object.keys(await candidates(b)).sort()).toEqual([...bProviders].sort());
    for (const uuid of Object.keys(await candidates(a))) expect(aProviders).toContain(uuid);
    expect((await figures(a)).treeCacheProviders).toBe(2);
    expect((await figures(b)).treeCacheProviders).toBe(0);
  });

  it("count into their own metrics: requests, database batches, searches and refusals of one are not the other's", async () => {
    const [aBefore, bBefore] = [await figures(a), await figures(b)];
    await candidates(a);
    await candidates(a);
    expect((await claim(a, aProviders[0]!, 5)).status).toBe(409);
    const [aAfter, bAfter] = [await figures(a), await figures(b)];
    expect(aAfter.candidatesRequests - aBefore.candidatesRequests).toBe(2);
    expect(aAfter.searches - aBefore.searches).toBe(2);
    expect(aAfter.cut - aBefore.cut).toBe(2);
    expect(aAfter.capacityRefusals - aBefore.capacityRefusals).toBe(1);
    expect(aAfter.readBatches).toBeGreaterThan(aBefore.readBatches);
    // b's scrape itself reads its database (the capacity gauges): only that moved there.
    expect({ ...bAfter, readBatches: 0 }).toEqual({ ...bBefore, readBatches: 0 });
    expect(bAfter.readBatches - bBefore.readBatches).toBe((await figures(b)).readBatches - bAfter.readBatches);
  });

  it('run the write hooks installed in each: a guard installed in one refuses there only', async () => {
    const refuseAll: ClaimGuard = {
      name: 'refuse every claim',
      snapshotStatements: () => [],
      decider: () => () => ({ error: conflict('Refused by the guard installed in this app.', 'ext.test.refused') }),
      holdsSql: () => 'false',
    };
    const installed = a.deps.writeHooks;
    a.deps.writeHooks = writeHooks([...a.deps.extensions.writes(), { claimGuards: [refuseAll] }]);
    try {
      expect((await claim(a, aProviders[1]!, 1)).status).toBe(409);
      expect((await claim(b, bProviders[1]!, 1)).status).toBe(204);
    } finally {
      a.deps.writeHooks = installed;
    }
    expect((await claim(a, aProviders[1]!, 1)).status).toBe(204);
  });
});
