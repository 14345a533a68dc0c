// npm run bench:simulate: POST /ext/simulate over 10,000 providers (placeload's
// flat hosts, loaded straight into the file as `npm run bench` loads them,
// with 20,000 consumers of 2 VCPU / 2 GiB), four changes and 5 queries, in
// process (app.request: no HTTP). Its goal, within 2 s warm, and its figures: docs/simulate.md. Warm: 2
// requests first, then the median and max of 5. Also GET /ext/defrag once the
// cloud is full enough that the query needs moves.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { directLoad } from './cloud.js';
import { PLACELOAD_AGGREGATE, PLACELOAD_TRAIT, placeloadProvider } from './upstream.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const PROVIDERS = Number(process.env.SIMULATE_PROVIDERS ?? 10_000);
const CONSUMERS = 2 * PROVIDERS;
const REPS = 5;
const headers = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest', 'content-type': 'application/json' };

const dir = mkdtempSync(join(tmpdir(), 'bench-simulate-'));
try {
  const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}` }), silent);
  const app = createApp(deps);
  const uuids = Array.from({ length: PROVIDERS }, () => crypto.randomUUID());
  await directLoad(
    deps.store.client,
    uuids.map((uuid, i) => [placeloadProvider(uuid, i)]),
  );
  // Consumers straight into the file: one project and user, two per host.
  const client = deps.store.client;
  await client.execute("INSERT INTO projects (external_id) VALUES ('bench-project')");
  await client.execute("INSERT INTO users (external_id) VALUES ('bench-user')");
  const ids = new Map((await client.execute('SELECT uuid, id FROM resource_providers')).rows.map((r) => [String(r.uuid), Number(r.id)]));
  const cls = new Map((await client.execute('SELECT name, id FROM resource_classes')).rows.map((r) => [String(r.name), Number(r.id)]));
  const tx = await client.transaction('write');
  for (let start = 0; start < CONSUMERS; start += 400) {
    const batch = Array.from({ length: Math.min(400, CONSUMERS - start) }, (_, k) => ({
      uuid: crypto.randomUUID(),
      host: ids.get(uuids[(start + k) % PROVIDERS]!)!,
    }));
    await tx.execute({
      sql: `INSERT INTO consumers (uuid, project_id, user_id, generation) VALUES ${batch.map(() => '(?, 1, 1, 1)').join(', ')}`,
      args: batch.map((b) => b.uuid),
    });
    await tx.execute({
      sql: `INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) VALUES ${batch.map(() => '(?, ?, ?, ?), (?, ?, ?, ?)').join(', ')}`,
      args: batch.flatMap((b) => [b.host, b.uuid, cls.get('VCPU')!, 2, b.host, b.uuid, cls.get('MEMORY_MB')!, 2048]),
    });
  }
  await tx.commit();
  const body = JSON.stringify({
    changes: [
      { op: 'set_inventory', aggregate: PLACELOAD_AGGREGATE, resource_class: 'VCPU', allocation_ratio: 4 },
      { op: 'resize', from: { VCPU: 2, MEMORY_MB: 2048 }, to: { VCPU: 4, MEMORY_MB: 4096 } },
      { op: 'taint', trait: 'STORAGE_DISK_SSD', key: 'example.com/maintenance' },
      { op: 'add_copies', of: uuids[0], count: 100 },
    ],
    queries: [
      { name: 'small', query: 'resources=VCPU:1,MEMORY_MB:256' },
      {
        name: 'placeload',
        query: `resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${PLACELOAD_AGGREGATE}&required=${PLACELOAD_TRAIT}`,
      },
      { name: 'large', query: 'resources=VCPU:8,MEMORY_MB:4096' },
      { name: 'tolerating', query: 'resources=VCPU:2&ext_tolerate=example.com/maintenance' },
      { name: 'pairs', query: 'resources=VCPU:4&count=2&ext_domain=any' },
    ],
  });
  // Wall time and this process's CPU time (user + system): on a loaded machine the CPU time is the steadier figure.
  const run = async (method: string, path: string, payload?: string) => {
    const start = performance.now();
    const cpu = process.cpuUsage();
    const res = await app.request(path, { method, headers, body: payload });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 300)}`);
    const used = process.cpuUsage(cpu);
    return { ms: performance.now() - start, cpuMs: (used.user + used.system) / 1000, text };
  };
  for (let i = 0; i < 2; i += 1) await run('POST', '/ext/simulate', body);
  const times: number[] = [];
  const cpus: number[] = [];
  let last = '';
  for (let i = 0; i < REPS; i += 1) {
    const { ms, cpuMs, text } = await run('POST', '/ext/simulate', body);
    times.push(ms);
    cpus.push(cpuMs);
    last = text;
  }
  times.sort((a, b) => a - b);
  cpus.sort((a, b) => a - b);
  const answer = JSON.parse(last) as {
    queries: { name: string; before: { total: number }; after: { total: number } }[];
    displaced: unknown[];
  };
  console.log(`POST /ext/simulate, ${PROVIDERS} providers, ${CONSUMERS} consumers, 4 changes, 5 queries; warm, in process`);
  console.log(`  median ${times[Math.floor(REPS / 2)]!.toFixed(0)} ms, max ${times.at(-1)!.toFixed(0)} ms (goal: 2000 ms)`);
  console.log(`  CPU time of the process: median ${cpus[Math.floor(REPS / 2)]!.toFixed(0)} ms, max ${cpus.at(-1)!.toFixed(0)} ms`);
  for (const q of answer.queries) console.log(`  ${q.name.padEnd(12)} headroom ${q.before.total} -> ${q.after.total}`);
  console.log(`  displaced: ${answer.displaced.length}`);
  const plan = await run('GET', '/ext/defrag?resources=MEMORY_MB:8192&count=1&max_moves=3');
  const again = await run('GET', '/ext/defrag?resources=MEMORY_MB:8192&count=1&max_moves=3');
  const { moves, feasible } = JSON.parse(again.text) as { moves: unknown[]; feasible: boolean };
  console.log(
    `GET /ext/defrag?resources=MEMORY_MB:8192&max_moves=3 (no host has it free): ${plan.ms.toFixed(0)} ms cold, ${again.ms.toFixed(0)} ms warm; feasible ${feasible}, ${moves.length} moves`,
  );
  deps.store.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
