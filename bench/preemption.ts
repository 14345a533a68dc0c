// npm run bench:preemption: GET /ext/preemption_candidates against GET
// /allocation_candidates with the same query, over 1,000 hosts with 20
// consumers each (half of them in a "spot" project of default priority 0),
// in process (app.request: no HTTP). Two queries: one that fits beside the
// consumers (every host answers without victims) and one that fits nowhere
// without evicting (the stock answer is empty). Warm: 3 requests first, then
// alternated rounds A B, B A, the median and p95 of each side (ms).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildNodeDeps } from '../src/entry/node-service.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const HOSTS = Number(process.env.BENCH_HOSTS ?? 1000);
const PER_HOST = 20;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 10);
const SPOT = '0000aaaa-0000-4000-8000-00000000000a';
const OTHER = '0000aaaa-0000-4000-8000-00000000000b';
const USER = '0000aaaa-0000-4000-8000-00000000000c';
const headers = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39', 'content-type': 'application/json' };

const dir = mkdtempSync(join(tmpdir(), 'bench-preemption-'));
try {
  const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}` }), silent);
  const app = createApp(deps);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  const loadStart = performance.now();
  for (let h = 0; h < HOSTS; h += 1) {
    const uuid = crypto.randomUUID();
    await call('POST', '/resource_providers', { name: `host-${h}`, uuid });
    await call('PUT', `/resource_providers/${uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 64 }, MEMORY_MB: { total: 262144 } },
    });
    const allocations: Record<string, unknown> = {};
    for (let c = 0; c < PER_HOST; c += 1) {
      allocations[crypto.randomUUID()] = {
        allocations: { [uuid]: { resources: { VCPU: 3, MEMORY_MB: 12288 } } },
        project_id: c % 2 ? SPOT : OTHER,
        user_id: USER,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      };
    }
    await call('POST', '/allocations', allocations);
  }
  await call('PUT', `/ext/priorities/${SPOT}`, { priority: 0 });
  console.log(`loaded ${HOSTS} hosts x ${PER_HOST} consumers in ${((performance.now() - loadStart) / 1000).toFixed(0)} s`);

  const time = async (path: string): Promise<number> => {
    const start = performance.now();
    const res = await app.request(path, { headers });
    await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    return performance.now() - start;
  };
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { median: s[Math.floor(s.length / 2)]!, p95: s[Math.ceil(s.length * 0.95) - 1]! };
  };
  for (const [label, query] of [
    ['fits beside the consumers (VCPU:2)', 'resources=VCPU:2,MEMORY_MB:4096&limit=10'],
    ['needs evictions (VCPU:8)', 'resources=VCPU:8,MEMORY_MB:16384&limit=10'],
  ] as const) {
    const a = `/allocation_candidates?${query}`;
    const b = `/ext/preemption_candidates?${query}&ext_priority=10`;
    for (let i = 0; i < 3; i += 1) {
      await time(a);
      await time(b);
    }
    const ta: number[] = [];
    const tb: number[] = [];
    for (let r = 0; r < ROUNDS; r += 1) {
      if (r % 2 === 0) {
        ta.push(await time(a));
        tb.push(await time(b));
      } else {
        tb.push(await time(b));
        ta.push(await time(a));
      }
    }
    const sa = stats(ta);
    const sb = stats(tb);
    console.log(`${label}, ${ROUNDS} alternated rounds (median / p95 ms):`);
    console.log(`  /allocation_candidates        ${sa.median.toFixed(1).padStart(8)} ${sa.p95.toFixed(1).padStart(8)}`);
    console.log(`  /ext/preemption_candidates    ${sb.median.toFixed(1).padStart(8)} ${sb.p95.toFixed(1).padStart(8)}`);
    console.log(`  ratio p95: ${(sb.p95 / sa.p95).toFixed(1)}x, median: ${(sb.median / sa.median).toFixed(1)}x`);
  }
  deps.store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
