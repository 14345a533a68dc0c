// npm run bench:first-of: what ext_first_of costs next to the plain requests
// it replaces (issue 25: "a request with three alternatives costs at most
// about three plain requests"). Warm, in one process, through
// findAllocationCandidates on a temporary database: 1,200 compute hosts
// (VCPU), 300 with an H100 child, 300 an A100, 300 a T4, 100 with all three,
// 200 with none. Median of 25 runs after 5 warm-up runs, both engines
// (trees in memory, the default; SQL alone). CPU time of the process
// (process.cpuUsage) beside wall time, as wall time is noisy on a shared machine.
//   npx tsx bench/first-of.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { Microversion } from '../src/microversion.js';
import { findAllocationCandidates } from '../src/placement/candidates/index.js';

const GPUS = ['CUSTOM_GPU_H100', 'CUSTOM_GPU_A100', 'CUSTOM_GPU_T4'];
const dir = mkdtempSync(join(tmpdir(), 'bench-first-of-'));
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}` }), silent);

// Direct SQL load: providers, inventories (the triggers keep the tree-change marks).
const now = new Date().toISOString();
const statements: { sql: string; args: (string | number)[] }[] = GPUS.map((name, i) => ({
  sql: 'INSERT INTO resource_classes (id, name, created_at) VALUES (?, ?, ?)',
  args: [10001 + i, name, now],
}));
let id = 0;
const layout = (h: number): string[] => (h < 300 ? [GPUS[0]!] : h < 600 ? [GPUS[1]!] : h < 900 ? [GPUS[2]!] : h < 1000 ? GPUS : []);
for (let h = 0; h < 1200; h += 1) {
  const root = (id += 1);
  statements.push(
    {
      sql: 'INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id, created_at) VALUES (?, ?, ?, 0, ?, ?)',
      args: [root, crypto.randomUUID(), `cn${h}`, root, now],
    },
    {
      sql: 'INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio, created_at) VALUES (?, 0, 64, 0, 1, 64, 1, 1, ?)',
      args: [root, now],
    },
  );
  for (const gpu of layout(h)) {
    const child = (id += 1);
    statements.push(
      {
        sql: 'INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id, parent_provider_id, created_at) VALUES (?, ?, ?, 0, ?, ?, ?)',
        args: [child, crypto.randomUUID(), `cn${h}-${gpu}`, root, root, now],
      },
      {
        sql: `INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio, created_at) SELECT ?, id, 1, 0, 1, 1, 1, 1, ? FROM resource_classes WHERE name = ?`,
        args: [child, now, gpu],
      },
    );
  }
}
await deps.store.writeBatch(statements);

const mv = Microversion.parse('1.36')!;
const plain = (suffix: string, rc: string) => `resources=VCPU:4&resources${suffix}=${rc}:1`;
const QUERIES: [string, string][] = [
  ['plain H100', plain('_H100', 'CUSTOM_GPU_H100')],
  ['plain A100', plain('_A100', 'CUSTOM_GPU_A100')],
  ['plain T4', plain('_T4', 'CUSTOM_GPU_T4')],
  [
    'ext_first_of=_H100,_A100,_T4',
    'resources=VCPU:4&resources_H100=CUSTOM_GPU_H100:1&resources_A100=CUSTOM_GPU_A100:1&resources_T4=CUSTOM_GPU_T4:1&group_policy=none&ext_first_of=_H100,_A100,_T4',
  ],
];

for (const [engine, cache] of [
  ['trees in memory', 20000],
  ['SQL alone', 0],
] as const) {
  console.log(`\n== ${engine} (warm, in-process, median of 25)`);
  const medians: number[] = [];
  for (const [name, query] of QUERIES) {
    for (const limit of ['', '&limit=10']) {
      const params: Record<string, string[]> = {};
      for (const [key, value] of new URLSearchParams(query + limit)) (params[key] ??= []).push(value);
      const request = deps.candidates.parse(params, mv);
      const times: number[] = [];
      const cpu: number[] = [];
      let count = 0;
      for (let i = 0; i < 30; i += 1) {
        const started = performance.now();
        const cpuStarted = process.cpuUsage();
        const body = await findAllocationCandidates(deps.store, request, mv, {
          randomize: false,
          maxCandidates: 0,
          treeCacheProviders: cache,
          now: Date.now(),
        });
        if (i >= 5) {
          times.push(performance.now() - started);
          const used = process.cpuUsage(cpuStarted);
          cpu.push((used.user + used.system) / 1000);
        }
        count = body.allocation_requests.length;
      }
      const medianOf = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const median = medianOf(times);
      const cpuMedian = medianOf(cpu);
      if (!limit) medians.push(cpuMedian);
      console.log(
        `${(name + (limit ? ' limit=10' : '')).padEnd(42)} ${median.toFixed(1).padStart(7)} ms wall ${cpuMedian.toFixed(1).padStart(7)} ms CPU  ${count} candidates`,
      );
    }
  }
  const [h, a, t, firstOf] = medians as [number, number, number, number];
  console.log(`full answers, CPU: ext_first_of / (H100 + A100 + T4 plain) = ${(firstOf / (h + a + t)).toFixed(2)}`);
}
deps.store.close();
rmSync(dir, { recursive: true, force: true });
