// The capacity dashboard over HTTP (app.request): the page and its assets,
// the admin summary with its filters, paging and one-round-trip read, and the
// token-mode page.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderDashboardAssetsModule, renderExtensionAssetModules } from '../../scripts/bundle-dashboard.js';
import { createApp } from '../../src/app.js';
import { EXTENSIONS, makeDeps } from '../../src/compose.js';
import { dashboardAsset } from '../../src/dashboard/assets.js';
import { openStore } from '../../src/entry/node-service.js';
import { limits } from '../../src/ext/limits/extension.js';
import { taints } from '../../src/ext/taints/extension.js';
import { type Extension, withoutExtensions } from '../../src/extension.js';
import { clientReader } from '../../src/db/client.js';
import { readDashboardSummary } from '../../src/diagnostics/dashboard-repo.js';
import type { PresentedSummary } from '../../src/dashboard/present.js';
import { SummaryQueryString, toSummaryQuery } from '../../src/dashboard/schema.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { commitGuarded } from '../../src/db/write-batch.js';
import { finishOutbox, newOutboxRow } from '../../src/jobs/outbox.js';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { CLOUD, seedCloud } from './seed.js';

type Tree = PresentedSummary['providers']['trees'][number];

let t: TestApp;

beforeAll(async () => {
  t = await makeTestApp();
  await seedCloud((method, path, body) => t.call(method, path, { body }));
});
afterAll(() => t.close());

const adminHeaders = { 'x-auth-token': 'admin', accept: 'application/json' };

async function summary(query = ''): Promise<PresentedSummary> {
  const res = await t.app.request(`/dashboard/api/summary${query}`, { headers: adminHeaders });
  expect(res.status).toBe(200);
  return (await res.json()) as PresentedSummary;
}

const names = (trees: Tree[]): string[] => trees.map((tree) => tree.name);

describe('GET /dashboard', () => {
  it('serves the page without a token, told the auth strategy, loading only its own assets', async () => {
    const res = await t.app.request('/dashboard');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).toContain('<meta name="placement-auth" content="noauth2">');
    const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    // The installed extensions' parts first (in the list's order, each's stylesheets then scripts; limits are off), then the page's own.
    expect(urls.filter((u) => !u.startsWith('data:'))).toEqual([
      '/dashboard/assets/headroom.js',
      '/dashboard/assets/leases.js',
      '/dashboard/assets/taints.css',
      '/dashboard/assets/taints.js',
      '/dashboard/assets/counters.js',
      '/dashboard/assets/domains.js',
      '/dashboard/assets/holds.css',
      '/dashboard/assets/holds.js',
      '/dashboard/assets/what-if.js',
      '/dashboard/assets/app.css',
      '/dashboard/assets/app.js',
    ]);
    expect((await t.app.request('/dashboard/')).status).toBe(200);
  });

  it('carries the panels of the installed extensions only, each declared by its extension with the assets that fill it', async () => {
    const silent = { debug() {}, info() {}, warn() {}, error() {} };
    const panelIds = (html: string) => [...html.matchAll(/<section class="panel" id="([a-z-]+-panel)"/g)].map((m) => m[1]!);
    // Each extension's assets are its own (not the page's), served while it is on.
    for (const e of EXTENSIONS) {
      for (const [file, asset] of Object.entries(e.dashboard?.assets ?? {})) {
        expect(dashboardAsset(file), file).toBeUndefined();
        if (e === limits) continue;
        const served = await t.app.request(`/dashboard/assets/${file}`);
        expect([served.status, await served.text()], file).toEqual([200, asset.body]);
      }
    }
    // Limits are off in this app: neither their panel nor their script.
    expect((await t.app.request('/dashboard/assets/limits.js', { headers: { accept: 'application/json' } })).status).toBe(404);
    const full = await (await t.app.request('/dashboard')).text();
    // Every shipped extension's but project limits', off in this app (PLACEMENT_LIMITS).
    expect(panelIds(full)).toEqual(['headroom-panel', 'what-if-panel', 'holds-panel', 'leases-panel', 'taints-panel', 'domains-panel']);
    const store = await openStore(t.deps.config, { prepare: false }, silent);
    try {
      const pageOf = async (extensions: readonly Extension[]) =>
        (await createApp(makeDeps(store, t.deps.config, silent, { extensions })).request('/dashboard')).text();
      const withoutTaints = await pageOf(withoutExtensions(EXTENSIONS, [taints]));
      expect(panelIds(withoutTaints)).toEqual(['headroom-panel', 'holds-panel', 'leases-panel', 'domains-panel']);
      expect(withoutTaints).not.toContain('what-if.js');
      expect(withoutTaints).not.toContain('taints.js');
      const bare = await pageOf([]);
      expect(panelIds(bare)).toEqual([]);
      expect([...bare.matchAll(/(?:src|href)="(\/dashboard\/[^"]+)"/g)].map((m) => m[1])).toEqual([
        '/dashboard/assets/app.css',
        '/dashboard/assets/app.js',
      ]);
    } finally {
      store.close();
    }
  });

  it('serves the script and stylesheet with validators', async () => {
    const js = await t.app.request('/dashboard/assets/app.js');
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toContain('/dashboard/api/summary');
    const etag = js.headers.get('etag')!;
    const again = await t.app.request('/dashboard/assets/app.js', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect((await t.app.request('/dashboard/assets/app.css')).headers.get('content-type')).toBe('text/css; charset=utf-8');
    const missing = await t.app.request('/dashboard/assets/nope.js', { headers: { accept: 'application/json' } });
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).detail).toContain('could not be found');
  });

  it("the page's own scripts name no extension: each extension's part of the page is its own asset", async () => {
    for (const file of ['app.js', 'dom.js', 'app.css']) {
      const body = dashboardAsset(file)!.body;
      expect(body, file).not.toMatch(/['`]\/ext\/|taint|lease|limits|headroom|counters|holds|domains|what-if/i);
    }
  });

  it("bundles exactly the files in src/dashboard/assets and each extension's dashboard-assets (run `npm run dashboard:bundle`)", () => {
    const onDisk = readFileSync(new URL('../../src/dashboard/assets.generated.ts', import.meta.url), 'utf8');
    expect(onDisk).toBe(renderDashboardAssetsModule());
    const modules = renderExtensionAssetModules();
    expect(modules.size).toBeGreaterThan(0);
    for (const [path, text] of modules) expect(readFileSync(new URL(`../../src/${path}`, import.meta.url), 'utf8'), path).toBe(text);
  });

  it('leaves the Placement API namespace alone', async () => {
    const res = await t.call('GET', '/dashboardx');
    expect(res.status).toBe(404);
    expect((await errorOf(res)).code).toBe('placement.undefined_code');
  });
});

describe('GET /dashboard/api/summary: trouble first', () => {
  it('lists providers over capacity first, then above the threshold, by percent used, with their worst class', async () => {
    const s = await summary();
    expect(s.attention.total).toBe(2);
    expect(s.attention.items.map((a) => [a.name, a.over_capacity, a.worst.resource_class, a.worst.percent])).toEqual([
      ['compute-2', true, 'VCPU', 150],
      ['storage-1', false, 'DISK_GB', 85],
    ]);
    expect(s.attention.items[0]!.worst).toMatchObject({ total: 4, reserved: 0, allocation_ratio: 1, capacity: 4, used: 6, free: -2 });
    expect(s.attention.items[0]!.root_name).toBeNull();
    // A lower threshold brings compute-1's child in: named with its root.
    const low = await summary('?over=20');
    expect(low.attention.items.map((a) => [a.name, a.worst.percent])).toEqual([
      ['compute-2', 150],
      ['storage-1', 85],
      ['compute-1', 31.3],
      ['compute-1-gpu0', 25],
    ]);
    expect(low.attention.items[3]).toMatchObject({ root_name: 'compute-1', worst: { resource_class: 'VGPU' } });
  });
});

describe('GET /dashboard/api/summary', () => {
  it('needs a token, and an admin', async () => {
    const anonymous = await t.app.request('/dashboard/api/summary', { headers: { accept: 'application/json' } });
    expect(anonymous.status).toBe(401);
    const reader = await t.app.request('/dashboard/api/summary', {
      headers: { accept: 'application/json', 'x-auth-token': 'someone:project-alpha', 'x-roles': 'reader' },
    });
    expect(reader.status).toBe(403);
    expect((await errorOf(reader)).detail).toContain('admin_api');
  });

  it('shows each tree with capacity, usage and free per class, traits and aggregates', async () => {
    const body = await summary();
    const p = body.providers;
    expect(p).toMatchObject({ page: 1, per_page: 25, total_providers: 4, matching_providers: 4, total_trees: 3 });
    expect(names(p.trees)).toEqual(['compute-1', 'compute-2', 'storage-1']);
    const compute1 = p.trees[0]!;
    expect(compute1).toMatchObject({ uuid: CLOUD.compute1.uuid, matched: true, over_capacity: false, aggregates: [CLOUD.aggregate] });
    expect(compute1.traits).toEqual(['COMPUTE_STATUS_DISABLED', 'HW_CPU_X86_AVX2']);
    expect(compute1.resources).toEqual({
      MEMORY_MB: { total: 65536, reserved: 512, allocation_ratio: 1, capacity: 65024, used: 4096, free: 60928 },
      VCPU: { total: 16, reserved: 0, allocation_ratio: 2, capacity: 32, used: 10, free: 22 },
    });
    expect(compute1.children.map((c) => [c.name, c.parent_provider_uuid, c.resources.VGPU?.used])).toEqual([
      ['compute-1-gpu0', CLOUD.compute1.uuid, 1],
    ]);
    expect(compute1.children[0]!.traits).toEqual(['CUSTOM_GPU_A']);
  });

  it('marks a provider whose usage exceeds its lowered capacity', async () => {
    const compute2 = (await summary()).providers.trees[1]!;
    expect(compute2).toMatchObject({ name: 'compute-2', over_capacity: true });
    expect(compute2.resources.VCPU).toMatchObject({ total: 4, capacity: 4, used: 6, free: -2 });
  });

  it('sums every class over the cloud, counting nearly full and over-capacity inventories', async () => {
    const body = await summary();
    expect(body.threshold_percent).toBe(80);
    expect(body.resource_classes).toEqual({
      DISK_GB: { providers: 1, capacity: 1000, used: 850, free: 150, over_threshold: 1, over_capacity: 0 },
      MEMORY_MB: { providers: 1, capacity: 65024, used: 4096, free: 60928, over_threshold: 0, over_capacity: 0 },
      VCPU: { providers: 2, capacity: 36, used: 16, free: 20, over_threshold: 1, over_capacity: 1 },
      VGPU: { providers: 1, capacity: 4, used: 1, free: 3, over_threshold: 0, over_capacity: 0 },
    });
  });

  it('reports usage per project', async () => {
    const { projects } = await summary();
    expect(projects).toEqual({
      page: 1,
      per_page: 20,
      total: 2,
      items: [
        { project_id: 'project-alpha', project_name: null, consumers: 1, usages: { MEMORY_MB: 4096, VCPU: 10, VGPU: 1 } },
        { project_id: 'project-beta', project_name: null, consumers: 2, usages: { DISK_GB: 850, VCPU: 6 } },
      ],
    });
    const second = await summary('?project_per_page=1&project_page=2');
    expect(second.projects.items.map((i) => i.project_id)).toEqual(['project-beta']);
  });

  it('filters by name, trait, aggregate, class and "over N% used", keeping whole trees', async () => {
    expect(names((await summary('?name=STORAGE')).providers.trees)).toEqual(['storage-1']);
    expect(names((await summary(`?name=${CLOUD.compute2.uuid}`)).providers.trees)).toEqual(['compute-2']);
    // A LIKE wildcard in the name is a literal character.
    expect((await summary('?name=%25')).providers.total_trees).toBe(0);
    const byTrait = await summary('?trait=CUSTOM_GPU_A');
    expect(names(byTrait.providers.trees)).toEqual(['compute-1']);
    expect(byTrait.providers.trees[0]!.matched).toBe(false);
    expect(byTrait.providers.trees[0]!.children[0]!.matched).toBe(true);
    expect(byTrait.providers.matching_providers).toBe(1);
    expect(names((await summary(`?aggregate=${CLOUD.aggregate}`)).providers.trees)).toEqual(['compute-1', 'storage-1']);
    expect(names((await summary('?resource_class=VCPU')).providers.trees)).toEqual(['compute-1', 'compute-2']);
    expect(names((await summary('?over=80')).providers.trees)).toEqual(['compute-2', 'storage-1']);
    expect(names((await summary('?over=80&resource_class=VCPU')).providers.trees)).toEqual(['compute-2']);
    expect(names((await summary('?over=20&trait=HW_CPU_X86_AVX2')).providers.trees)).toEqual(['compute-1']);
  });

  it('pages over trees', async () => {
    const page2 = await summary('?per_page=2&page=2');
    expect(page2.providers).toMatchObject({ page: 2, per_page: 2, total_trees: 3 });
    expect(names(page2.providers.trees)).toEqual(['storage-1']);
    const beyond = await summary('?per_page=2&page=9');
    expect(beyond.providers).toMatchObject({ total_trees: 3, trees: [] });
  });

  it('answers bad query strings with a 400 in the error envelope', async () => {
    for (const query of ['?page=0', '?per_page=1000', '?over=lots', '?colour=red', '?page=-1']) {
      const res = await t.app.request(`/dashboard/api/summary${query}`, { headers: adminHeaders });
      expect(res.status, query).toBe(400);
      expect((await errorOf(res)).detail, query).toMatch(/^Invalid query string/);
    }
  });

  it('counts accelerator requests by state and the outbox by state', async () => {
    const now = Date.now();
    const event = () => ({ instanceUuid: crypto.randomUUID(), events: [{ arqUuid: crypto.randomUUID(), status: 'completed' as const }] });
    const [pending, dead] = [newOutboxRow('nova-event', event(), now), newOutboxRow('nova-event', event(), now)];
    const results = await commitGuarded(t.deps.store, [pending.statement, dead.statement]);
    await finishOutbox(t.deps.store, dead.message(results[1]!).outboxId, now, 'dead', 'Nova said 500');
    const { accelerators } = await summary();
    expect(accelerators.outbox_by_state).toEqual({ pending: 1, dead: 1 });
    expect(accelerators.arqs_by_state).toEqual({ Initial: 1 });
    expect(accelerators.devices_by_status).toEqual({ enabled: 1 });
  });

  it('reads everything in one database round trip', async () => {
    const counted = countRoundTrips(t.deps.store.client);
    const query = toSummaryQuery(SummaryQueryString.parse({ over: '20', trait: 'HW_CPU_X86_AVX2' }));
    const result = await readDashboardSummary(clientReader(counted.client), query);
    expect(counted.count()).toBe(1);
    expect(result.providers.map((p) => p.name)).toEqual(['compute-1', 'compute-1-gpu0']);
  });
});

describe('GET /dashboard/api/summary: gang domains', () => {
  let d: TestApp;
  beforeAll(async () => {
    d = await makeTestApp();
  });
  afterAll(() => d.close());

  it('lists each aggregate with hosts, how many are free and their names, most free first; a sharing provider is no host', async () => {
    const [rackA, rackB] = [crypto.randomUUID(), crypto.randomUUID()].sort();
    const host = (rack: string, traits: string[] = []) => provider(d, { inventory: { VCPU: { total: 4 } }, aggregates: [rack], traits });
    const aBusy = await host(rackA!);
    const aFree = await host(rackA!);
    const bFree = [await host(rackB!), await host(rackB!)];
    await host(rackB!, ['MISC_SHARES_VIA_AGGREGATE']);
    // A child in a rack is not a host of it: only roots are.
    await provider(d, { parent: aBusy, aggregates: [rackB!] });
    const used = await d.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [aBusy]: { resources: { VCPU: 1 } } },
        project_id: 'p',
        user_id: 'u',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(used.status).toBe(204);
    const res = await d.app.request('/dashboard/api/summary', { headers: adminHeaders });
    const { domains } = (await res.json()) as PresentedSummary;
    expect(domains).toEqual({
      total: 2,
      items: [
        { uuid: rackB, hosts: 2, free_hosts: 2, free_host_names: bFree.map((uuid) => `rp-${uuid}`).sort() },
        { uuid: rackA, hosts: 2, free_hosts: 1, free_host_names: [`rp-${aFree}`] },
      ],
    });
  });
});

describe('token mode', () => {
  let tokenApp: TestApp;
  beforeAll(async () => {
    tokenApp = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: JSON.stringify({ s3cret: { roles: ['admin'], project_id: 'ops' } }),
    });
  });
  afterAll(() => tokenApp.close());

  it('tells the page to ask for a token, and the API takes only configured tokens', async () => {
    const html = await (await tokenApp.app.request('/dashboard')).text();
    expect(html).toContain('<meta name="placement-auth" content="token">');
    const bad = await tokenApp.app.request('/dashboard/api/summary', { headers: { 'x-auth-token': 'admin', accept: 'application/json' } });
    expect(bad.status).toBe(401);
    const good = await tokenApp.app.request('/dashboard/api/summary', {
      headers: { 'x-auth-token': 's3cret', accept: 'application/json' },
    });
    expect(good.status).toBe(200);
  });
});

describe('the sign-in form says where a token comes from', () => {
  it('keystone: the OpenStack CLI command that issues one; token mode: PLACEMENT_AUTH_TOKENS', async () => {
    const keystoneApp = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'keystone',
      PLACEMENT_KEYSTONE_AUTH_URL: 'http://127.0.0.1:1/v3',
      PLACEMENT_KEYSTONE_USERNAME: 'placement',
      PLACEMENT_KEYSTONE_PASSWORD: 'placement-pw',
      PLACEMENT_KEYSTONE_PROJECT_NAME: 'service',
    });
    try {
      const html = await (await keystoneApp.app.request('/dashboard')).text();
      expect(html).toContain('<meta name="placement-auth" content="keystone">');
      expect(html).toMatch(/id="login-hint">[^<]*Keystone tokens[\s\S]*<code>openstack token issue -f value -c id<\/code>/);
    } finally {
      keystoneApp.close();
    }
    const tokenApp = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: JSON.stringify({ t: { roles: ['admin'] } }),
    });
    try {
      const html = await (await tokenApp.app.request('/dashboard')).text();
      expect(html).toContain('<code>PLACEMENT_AUTH_TOKENS</code>');
      expect(html).not.toContain('openstack token issue');
    } finally {
      tokenApp.close();
    }
  });
});
