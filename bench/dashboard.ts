// npm run bench:dashboard [-- --n 10000 --screenshot docs/dashboard.png --json out.json]
//
// The capacity dashboard on a large cloud: loads N providers (compute hosts,
// every 10th with a GPU child; usage from 20 projects; a few hosts shrunk
// under their usage) straight into a temporary database, serves the app in
// this process, then times
//   (1) GET /dashboard/api/summary: first page, "over 80%" filter, a name
//       filter and the last page (median of 11, and libSQL round trips);
//   (2) with Debian's chromium (skipped if absent): a fresh tab's first
//       contentful paint and the moment the first page of trees is painted
//       (the page's `dashboard:first-data` performance mark), median of 5.
// --screenshot saves what (2) shows (the README's image comes from here).
import { serve } from '@hono/node-server';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { clientReader } from '../src/db/client.js';
import { readDashboardSummary } from '../src/diagnostics/dashboard-repo.js';
import { SummaryQueryString, toSummaryQuery } from '../src/dashboard/schema.js';
import { countRoundTrips } from '../src/db/round-trips.js';
import { buildNodeDeps } from '../src/entry/node-service.js';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '10000' },
    chromium: { type: 'string', default: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' },
    screenshot: { type: 'string' },
    json: { type: 'string' },
  },
});
const N = Number(args.n);
const HOSTS = Math.ceil(N / 1.1);
const silent = { debug() {}, info() {}, warn() {}, error() {} };

const dir = mkdtempSync(join(tmpdir(), 'dashboard-bench-'));
const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}` }), silent);
const { client } = deps.store;

// Everything in SQL, one batch: the public API would take minutes for 10,000 providers.
const uuidSql = (expr: string, tag: number) => `printf('%08x-%04x-4000-8000-%012x', ${expr}, ${tag}, ${expr})`;
const rcId = (name: string) => `(SELECT id FROM resource_classes WHERE name = '${name}')`;
await client.batch(
  [
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${HOSTS})
   INSERT INTO resource_providers (uuid, name, generation) SELECT ${uuidSql('i', 1)}, printf('cn-%05d', i), 1 FROM n`,
    'UPDATE resource_providers SET root_provider_id = id',
    `INSERT INTO resource_providers (uuid, name, generation, root_provider_id, parent_provider_id)
   SELECT ${uuidSql('id', 2)}, name || '-gpu0', 1, id, id FROM resource_providers WHERE id % 10 = 0 LIMIT ${N - HOSTS}`,
    `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, max_unit, allocation_ratio)
   SELECT id, ${rcId('VCPU')}, 64, 0, 64, 4.0 FROM resource_providers WHERE parent_provider_id IS NULL
   UNION ALL SELECT id, ${rcId('MEMORY_MB')}, 262144, 4096, 262144, 1.0 FROM resource_providers WHERE parent_provider_id IS NULL
   UNION ALL SELECT id, ${rcId('DISK_GB')}, 2000, 0, 2000, 1.0 FROM resource_providers WHERE parent_provider_id IS NULL
   UNION ALL SELECT id, ${rcId('VGPU')}, 8, 0, 8, 1.0 FROM resource_providers WHERE parent_provider_id IS NOT NULL`,
    `INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
   SELECT id, (SELECT id FROM traits WHERE name = 'HW_CPU_X86_AVX2') FROM resource_providers WHERE parent_provider_id IS NULL AND id % 2 = 1
   UNION ALL SELECT id, (SELECT id FROM traits WHERE name = 'COMPUTE_STATUS_DISABLED') FROM resource_providers WHERE parent_provider_id IS NULL AND id % 50 = 3`,
    `INSERT INTO placement_aggregates (uuid) VALUES ('3f6c2a1e-5b7d-4c2a-9e41-7d2b8c0f1a01'), ('9a0e4b7c-21d3-4f85-b6a2-4c9d1e7f3b02'), ('c41d8e2f-6a9b-4e37-8d15-2b7f0a9c6e03')`,
    `INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
   SELECT rp.id, a.id FROM resource_providers rp JOIN placement_aggregates a ON a.id = 1 + rp.id % 3 WHERE rp.parent_provider_id IS NULL`,
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
   INSERT INTO projects (external_id) SELECT printf('project-%02d', i) FROM n`,
    `INSERT INTO users (external_id) VALUES ('bench-user')`,
    `INSERT INTO consumers (uuid, project_id, user_id, generation)
   SELECT ${uuidSql('id', 3)}, 1 + id % 20, 1, 1 FROM resource_providers WHERE parent_provider_id IS NULL AND id % 5 != 4`,
    // Usage spread from light to nearly full; every 97th host carries more than it now has.
    `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
   SELECT id, ${uuidSql('id', 3)}, ${rcId('VCPU')}, CASE WHEN id % 97 = 7 THEN 300 ELSE 8 + (id * 37) % 240 END
     FROM resource_providers WHERE parent_provider_id IS NULL AND id % 5 != 4
   UNION ALL SELECT id, ${uuidSql('id', 3)}, ${rcId('MEMORY_MB')}, 4096 * (1 + (id * 13) % 60)
     FROM resource_providers WHERE parent_provider_id IS NULL AND id % 5 != 4
   UNION ALL SELECT id, ${uuidSql('id', 3)}, ${rcId('DISK_GB')}, 40 * (1 + (id * 7) % 48)
     FROM resource_providers WHERE parent_provider_id IS NULL AND id % 5 != 4
   UNION ALL SELECT gpu.id, ${uuidSql('gpu.root_provider_id', 3)}, ${rcId('VGPU')}, 1 + gpu.id % 8
     FROM resource_providers gpu WHERE gpu.parent_provider_id IS NOT NULL AND gpu.root_provider_id % 5 != 4`,
  ],
  'write',
);

const app = createApp(deps);
// A few accelerators through the Cyborg API, so that panel has something to show.
const acc = (method: string, path: string, body: unknown) =>
  app.request(`/accelerator/v2${path}`, {
    method,
    headers: { 'x-auth-token': 'admin', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
for (const host of [10, 20, 30]) {
  const name = `cn-${String(host).padStart(5, '0')}`;
  const gpu = (await client.execute({ sql: `SELECT uuid FROM resource_providers WHERE name = ?`, args: [`${name}-gpu0`] })).rows[0]?.[0];
  await acc('PUT', `/hosts/${name}/devices`, {
    devices: [
      {
        key: '0000:3b:00.0',
        type: 'GPU',
        vendor: '0x10de',
        model: 'A100',
        deployables: [
          {
            name: `${name}-gpu0`,
            num_accelerators: 1,
            rp_uuid: String(gpu),
            driver_name: 'nvidia',
            attach_handles: [{ type: 'PCI', info: { domain: '0000', bus: '3b', device: '00', function: '0' } }],
          },
        ],
      },
    ],
  });
}
await acc('POST', '/device_profiles', [{ name: 'gpu-small', description: null, groups: [{ 'resources:VGPU': 1 }] }]);
for (let i = 0; i < 3; i += 1) await acc('POST', '/accelerator_requests', { device_profile_name: 'gpu-small' });

const counted = countRoundTrips(client);
const providers = Number((await client.execute('SELECT count(*) FROM resource_providers')).rows[0]![0]);
const lastPage = String(Math.ceil(HOSTS / 25));
const queries: [string, Record<string, string>][] = [
  ['first page', {}],
  ['over 80%', { over: '80' }],
  ['name "cn-012"', { name: 'cn-012' }],
  [`last page (${lastPage})`, { page: lastPage }],
];
const api: Record<string, { ms_median: number; round_trips: number; trees: number }> = {};
for (const [label, params] of queries) {
  const times: number[] = [];
  let trips = 0;
  let trees = 0;
  for (let i = 0; i < 11; i += 1) {
    counted.reset();
    const started = performance.now();
    const body = await readDashboardSummary(clientReader(counted.client), toSummaryQuery(SummaryQueryString.parse(params)));
    times.push(performance.now() - started);
    trips = counted.count();
    trees = body.totalTrees;
  }
  // Over HTTP too, so routing and JSON are in the figure.
  const res = await app.request(`/dashboard/api/summary?${new URLSearchParams(params)}`, { headers: { 'x-auth-token': 'admin' } });
  if (res.status !== 200) throw new Error(`summary ${label}: ${res.status} ${await res.text()}`);
  times.sort((a, b) => a - b);
  api[label] = { ms_median: Math.round(times[5]! * 10) / 10, round_trips: trips, trees };
}

let browser: { fcp_ms_median: number; first_data_ms_median: number; runs: number } | 'skipped (no chromium)' = 'skipped (no chromium)';
if (existsSync(args.chromium!)) {
  const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 });
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/dashboard`;
  const b = await chromium.launch({ executablePath: args.chromium!, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const fcp: number[] = [];
  const data: number[] = [];
  for (let i = 0; i < 5; i += 1) {
    const context = await b.newContext({ viewport: { width: 1280, height: 1100 } });
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForFunction(() => performance.getEntriesByName('dashboard:first-data').length > 0);
    const marks = await page.evaluate(() => ({
      fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? NaN,
      data: performance.getEntriesByName('dashboard:first-data')[0]!.startTime,
    }));
    fcp.push(marks.fcp);
    data.push(marks.data);
    if (i === 4 && args.screenshot) {
      await page.waitForSelector('#devices table');
      await page.screenshot({ path: args.screenshot });
    }
    await context.close();
  }
  await b.close();
  server.close();
  const median = (xs: number[]) => Math.round(xs.sort((a, c) => a - c)[Math.floor(xs.length / 2)]!);
  browser = { fcp_ms_median: median(fcp), first_data_ms_median: median(data), runs: 5 };
}

console.log(`dashboard on ${providers} providers (${HOSTS} trees)`);
console.log('summary API (in process, libSQL file):');
for (const [label, r] of Object.entries(api)) {
  console.log(`  ${label.padEnd(22)} ${String(r.ms_median).padStart(7)} ms median  ${r.round_trips} round trip(s)  ${r.trees} trees match`);
}
if (typeof browser === 'string') console.log(`browser: ${browser}`);
else
  console.log(
    `browser (chromium, fresh tab): first contentful paint ${browser.fcp_ms_median} ms, first page of trees painted ${browser.first_data_ms_median} ms (median of ${browser.runs})`,
  );
const result = { providers, trees: HOSTS, api, browser };
console.log(JSON.stringify(result));
if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2));
deps.store.close();
rmSync(dir, { recursive: true, force: true });
