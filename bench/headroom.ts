// npm run bench:headroom: GET /ext/headroom against GET /allocation_candidates
// (limit=10 and the full answer) with the same query, on upstream's perfload
// clouds (flat N=5,000 and 200 nested trees, loaded straight into the file as
// `npm run bench` loads them), in process (app.request: no HTTP, no client
// parse). Warm: 3 requests first, then the median and p95 of 15 each.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { PlacementClient } from './client.js';
import { directLoad, httpLoad } from './cloud.js';
import { SCENARIOS } from './scenarios.js';
import { FLAT_QUERY, FLAT_VERSION, NESTED_QUERY, NESTED_VERSION } from './upstream.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const REPS = 15;

async function timed(
  app: ReturnType<typeof createApp>,
  path: string,
  version: string,
): Promise<{ median: number; p95: number; body: string }> {
  const headers = { 'x-auth-token': 'admin', 'openstack-api-version': `placement ${version}` };
  let body = '';
  for (let i = 0; i < 3; i += 1) body = await (await app.request(path, { headers })).text();
  const times: number[] = [];
  for (let i = 0; i < REPS; i += 1) {
    const start = performance.now();
    const res = await app.request(path, { headers });
    body = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${body.slice(0, 200)}`);
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { median: times[Math.floor(REPS / 2)]!, p95: times[Math.ceil(REPS * 0.95) - 1]!, body };
}

const cases = [
  { scenario: 'flat-5000', query: FLAT_QUERY, version: FLAT_VERSION },
  { scenario: 'nested-200', query: NESTED_QUERY, version: NESTED_VERSION },
];

console.log('GET /ext/headroom vs GET /allocation_candidates, same query; warm, in process, median / p95 of 15 (ms)');
for (const { scenario, query, version } of cases) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-headroom-'));
  try {
    const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}` }), silent);
    const app = createApp(deps);
    const cloud = SCENARIOS.find((s) => s.name === scenario)!.build();
    // Custom classes and traits (nested perfload) go through the API, in process; the flat cloud straight into the file.
    if (scenario === 'flat-5000') await directLoad(deps.store.client, cloud);
    else
      await httpLoad(
        new PlacementClient('http://bench.local', 'admin', '1.36', 60_000, (input, init) =>
          Promise.resolve(app.fetch(new Request(input, init))),
        ),
        cloud,
        8,
      );
    const limited = await timed(app, `/allocation_candidates?${query}&limit=10`, version);
    const full = await timed(app, `/allocation_candidates?${query}`, version);
    const headroom = await timed(app, `/ext/headroom?${query}`, version);
    const { total, trees } = JSON.parse(headroom.body) as { total: number; trees: unknown[] };
    const row = (label: string, f: { median: number; p95: number }) =>
      console.log(`  ${label.padEnd(34)} ${f.median.toFixed(1).padStart(8)} ${f.p95.toFixed(1).padStart(8)}`);
    console.log(`${scenario}: headroom total ${total} over ${trees.length} trees`);
    row('candidates limit=10', limited);
    row('candidates full answer', full);
    row('headroom', headroom);
    console.log(`  headroom / limit=10: ${(headroom.median / limited.median).toFixed(1)}x`);
    deps.store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
