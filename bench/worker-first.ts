// Worker mode's fresh isolate, step by step: wrangler dev (workerd) on sqld
// with flat-1000 loaded, then (a) GET / (the isolate's boot alone: bindings,
// migrations check, standard names), (b) the first full answer (the trees
// read, code not yet optimised), (c) the second, (d) warm ones; workerd's CPU
// for each, and its memory.
//   npx tsx bench/worker-first.ts [--boot-first] [--n 20]
import { parseArgs } from 'node:util';
import { closeTimedConnections, PlacementClient } from './client.js';
import { SCENARIOS } from './scenarios.js';
import { PERFLOAD_VERSION } from './upstream.js';
import { startWorkerMode } from './worker-mode.js';

const { values: args } = parseArgs({
  options: {
    'boot-first': { type: 'boolean', default: false },
    n: { type: 'string', default: '20' },
    scenario: { type: 'string', default: 'flat-1000' },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario);
if (!scenario) throw new Error(`no scenario ${args.scenario}`);
const query = scenario.measures.find((m) => m.kind === 'first')!.query;
const server = await startWorkerMode(scenario.build());
// The bench's own timed GET (node:http, kept-alive), as the main bench times the Worker; the answer's size.
const client = new PlacementClient(server.url, 'admin', PERFLOAD_VERSION);
const get = async (path: string) => (await client.timedGet(path, PERFLOAD_VERSION)).body.length;
const timed = async (path: string) => {
  const cpu0 = server.cpuNs() ?? 0;
  const proxy0 = server.proxyCpuNs() ?? 0;
  const t0 = performance.now();
  const bytes = await get(path);
  const wall = performance.now() - t0;
  await new Promise((r) => setTimeout(r, 20));
  return { cpu: ((server.cpuNs() ?? 0) - cpu0) / 1e6, proxy: ((server.proxyCpuNs() ?? 0) - proxy0) / 1e6, wall, bytes };
};
const f = (x: { cpu: number; proxy: number; wall: number }) =>
  `${x.cpu.toFixed(1)} cpu (+ wrangler's proxy ${x.proxy.toFixed(1)}) / ${x.wall.toFixed(1)} wall ms`;
try {
  // workerd's start: the runtime, the bundle's evaluation, before any request.
  console.log(
    `workerd CPU before the first request: ${((server.cpuNs() ?? 0) / 1e6).toFixed(1)} ms (+ proxy ${((server.proxyCpuNs() ?? 0) / 1e6).toFixed(1)})`,
  );
  if (args['boot-first']) console.log('boot (GET /):', f(await timed('/')));
  const path = `/allocation_candidates?${query}`;
  console.log('1st answer:', f(await timed(path)));
  console.log('2nd answer:', f(await timed(path)));
  const warm: { cpu: number; proxy: number; wall: number }[] = [];
  for (let i = 0; i < Number(args.n); i += 1) warm.push(await timed(path));
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const p95 = (xs: number[]) => xs.sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]!;
  console.log(
    `warm (${warm.length}): cpu median ${med(warm.map((w) => w.cpu)).toFixed(1)} ms (+ proxy ${med(warm.map((w) => w.proxy)).toFixed(1)}), wall median ${med(warm.map((w) => w.wall)).toFixed(1)} / p95 ${p95(warm.map((w) => w.wall)).toFixed(1)} ms`,
  );
  console.log('memory:', JSON.stringify(server.memory()));
} finally {
  closeTimedConnections();
  await server.stop();
}
