// Where a Worker isolate's CPU goes: wrangler dev (workerd) on sqld with a
// scenario's cloud, V8's sampling profiler attached through wrangler's
// inspector, one profile per phase (boot with GET /, the first full answer,
// the second, warm answers), each summed by function (self time) and by
// source file.
//   npx tsx bench/worker-profile.ts [--scenario flat-1000] [--n 20] [--top 25] [--out DIR]
import { cpSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { freePort } from '../test/helpers/sqld.js';
import { closeTimedConnections, PlacementClient } from './client.js';
import { SCENARIOS } from './scenarios.js';
import { PERFLOAD_VERSION } from './upstream.js';
import { startWorkerMode } from './worker-mode.js';

const { values: args } = parseArgs({
  options: {
    n: { type: 'string', default: '20' },
    scenario: { type: 'string', default: 'flat-1000' },
    top: { type: 'string', default: '25' },
    out: { type: 'string' },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario);
if (!scenario) throw new Error(`no scenario ${args.scenario}`);
const query = scenario.measures.find((m) => m.kind === 'first')!.query;
const inspectorPort = await freePort();
const server = await startWorkerMode(scenario.build(), ['--inspector-port', String(inspectorPort)]);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json`)).json()) as { webSocketDebuggerUrl: string }[];
const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl);
await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
let nextId = 1;
const pending = new Map<number, (result: unknown) => void>();
ws.on('message', (data) => {
  const msg = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown };
  if (msg.id !== undefined) pending.get(msg.id)?.(msg.error ? Promise.reject(new Error(JSON.stringify(msg.error))) : msg.result);
});
const send = <T>(method: string, params: object = {}) =>
  new Promise<T>((resolve) => {
    const id = nextId++;
    pending.set(id, resolve as (r: unknown) => void);
    ws.send(JSON.stringify({ id, method, params }));
  });

// The bench's own timed GET (node:http, kept-alive), as the main bench times the Worker; the answer's size.
const client = new PlacementClient(server.url, 'admin', PERFLOAD_VERSION);
const get = async (path: string) => (await client.timedGet(path, PERFLOAD_VERSION)).body.length;

function summarise(label: string, profile: Profile, cpuMs: number): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i += 1)
    self.set(profile.samples[i]!, (self.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const f = byId.get(id)!.callFrame;
    const file = f.url.split('/').slice(-2).join('/') || '(native)';
    const key = `${f.functionName || '(anonymous)'} ${file}:${f.lineNumber + 1}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byFile.set(file, (byFile.get(file) ?? 0) + us);
    total += us;
  }
  const idle = (byFunction.get('(idle) (native):0') ?? 0) / 1000;
  console.log(`\n== ${label}: workerd CPU ${cpuMs.toFixed(1)} ms; profile ${(total / 1000).toFixed(1)} ms (idle ${idle.toFixed(1)})`);
  const top = (m: Map<string, number>) =>
    [...m]
      .filter(([k]) => !k.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, Number(args.top));
  for (const [k, us] of top(byFunction)) console.log(`  ${(us / 1000).toFixed(1).padStart(7)} ms  ${k}`);
  console.log('  by file:');
  for (const [k, us] of top(byFile).slice(0, 12)) console.log(`  ${(us / 1000).toFixed(1).padStart(7)} ms  ${k}`);
}

async function phase(label: string, work: () => Promise<unknown>): Promise<void> {
  await send('Profiler.start');
  const cpu0 = server.cpuNs() ?? 0;
  await work();
  await new Promise((r) => setTimeout(r, 20));
  const cpuMs = ((server.cpuNs() ?? 0) - cpu0) / 1e6;
  const { profile } = await send<{ profile: Profile }>('Profiler.stop');
  if (args.out) writeFileSync(join(args.out, `${label.replace(/\W+/g, '-')}.cpuprofile`), JSON.stringify(profile));
  summarise(label, profile, cpuMs);
  const heap = await send<{ usedSize: number; totalSize: number }>('Runtime.getHeapUsage');
  console.log(`  isolate heap after it: ${(heap.usedSize / 2 ** 20).toFixed(1)} MiB used of ${(heap.totalSize / 2 ** 20).toFixed(1)} MiB`);
}

try {
  await send('Profiler.enable');
  await send('Profiler.setSamplingInterval', { interval: 100 });
  const path = `/allocation_candidates?${query}`;
  await phase('boot (GET /)', () => get('/'));
  await phase('1st answer', () => get(path));
  await phase('2nd answer', () => get(path));
  for (let i = 0; i < 5; i += 1) await get(path);
  await phase(`warm x${args.n}`, async () => {
    for (let i = 0; i < Number(args.n); i += 1) await get(path);
  });
  // The bundle the profile's line numbers point into (wrangler deletes it on exit).
  if (args.out) cpSync('.wrangler/tmp', join(args.out, 'bundle'), { recursive: true });
} finally {
  ws.close();
  closeTimedConnections();
  await server.stop();
}
