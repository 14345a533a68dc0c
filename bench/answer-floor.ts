// A warm full answer against its serialization floor, in one run: a server
// process (this file with --serve: the app as src/entry/node-server.ts serves
// it, node:http + @hono/node-server, its trees kept fresh) answers the
// scenario's full allocation candidates query, and GET /__floor answers the
// very same bytes with the same headers from a buffer prepared once, through
// the same server stack. After the cloud is loaded and 30 answers warm it,
// rounds of each alternate; the figure is the server process's CPU per
// answer (all its threads, from /proc/PID/task/*/schedstat, nanoseconds),
// medians over the rounds; and the server's RSS once it answers (at rest,
// the made-up warm-up done) and after the runs. --cpu-prof FILE: afterwards, 100 more answers
// under V8's profiler (node:inspector in the server), the profile written to
// FILE and its top functions by self time printed. --consumers N: N claims of
// the query's candidates (in turn) stand before the answers are timed, as
// allocations do in a cloud in use (the answer's read batch must not grow with them).
//   npx tsx bench/answer-floor.ts [--scenario flat-1000|nested-200] [--rounds 10] [--per-round 20] [--consumers N] [--cpu-prof FILE] [--env K=V,...]
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { getRequestListener } from '@hono/node-server';
import { PlacementClient } from './client.js';
import { httpLoad } from './cloud.js';
import { SCENARIOS } from './scenarios.js';

const { values: args } = parseArgs({
  options: {
    serve: { type: 'boolean', default: false },
    scenario: { type: 'string', default: 'flat-1000' },
    rounds: { type: 'string', default: '10' },
    'per-round': { type: 'string', default: '20' },
    consumers: { type: 'string', default: '0' },
    'cpu-prof': { type: 'string' },
    env: { type: 'string', default: '' },
  },
});

/** The server role: the app on PORT, plus /__floor. */
async function serve(): Promise<void> {
  const { createApp } = await import('../src/app.js');
  const { buildNodeDeps } = await import('../src/entry/node-service.js');
  const { checkSettings } = await import('../src/entry/settings-check.js');
  const { nodeRewarm, nodeWarmUp, runWarmUp } = await import('../src/entry/warm-up.js');
  const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: (m: string) => console.error(m) };
  const config = checkSettings({ ...process.env, PLACEMENT_ACCESS_LOG: 'off' });
  const deps = await buildNodeDeps(config, quiet);
  const app = createApp(deps);
  const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
  await runWarmUp(nodeWarmUp, deps);
  deps.candidates.keepFresh(
    deps.store.nearby,
    config.PLACEMENT_TREE_REFRESH_MS,
    (err) => console.error(err),
    () => nodeRewarm(deps),
  );
  let floor: { body: Uint8Array; headers: Headers } | undefined;
  const profiler = new Session();
  // `env` carries Node's response (outgoing), as node-server.ts passes it: without it the access
  // middleware takes the Worker's path and reads the answer's body back, a copy the server never makes.
  const listener = getRequestListener(async (request, env) => {
    const url = new URL(request.url);
    if (url.pathname === '/__prepare') {
      // The answer to the query in `q`, kept as bytes with its headers.
      const answer = await app.fetch(
        new Request(`${url.origin}${url.searchParams.get('q')}`, { headers: request.headers }),
        undefined,
        ctx,
      );
      floor = { body: new Uint8Array(await answer.arrayBuffer()), headers: answer.headers };
      return new Response(String(floor.body.length));
    }
    if (url.pathname === '/__profile-start') {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
      await profiler.post('Profiler.start');
      return new Response('started');
    }
    if (url.pathname === '/__profile-stop') {
      const { profile } = await profiler.post('Profiler.stop');
      profiler.disconnect();
      return new Response(JSON.stringify(profile));
    }
    if (url.pathname === '/__floor') return new Response(floor!.body, { status: 200, headers: floor!.headers });
    return app.fetch(request, env, ctx);
  });
  const server = createServer((incoming, outgoing) => void listener(incoming, outgoing));
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    console.log(`listening ${typeof address === 'object' && address ? address.port : ''}`);
  });
  process.on('SIGTERM', () => {
    deps.store.close();
    process.exit(0);
  });
}

/** CPU nanoseconds of every thread of `pid` so far. */
function threadsCpuNs(pid: number): number {
  let total = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // a thread that ended meanwhile
    }
  }
  return total;
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
}

/** Self time by function, and by source file, in percent of the samples. */
function printTop(profile: CpuProfile): void {
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const fns = new Map<string, number>();
  const files = new Map<string, number>();
  for (const id of profile.samples) {
    const frame = byId.get(id)!;
    const file = frame.url.replace(/^.*\/(src|node_modules)\//, '$1/') || '(native)';
    const fn = `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`;
    fns.set(fn, (fns.get(fn) ?? 0) + 1);
    files.set(file, (files.get(file) ?? 0) + 1);
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((100 * v) / profile.samples.length).toFixed(1).padStart(5)}%  ${k}`)
      .join('\n');
  console.log(`self time by function:\n${top(fns, 30)}\nself time by file:\n${top(files, 15)}`);
}

/** Resident memory of `pid`, MiB. */
function rssMiB(pid: number): number {
  const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Math.round(Number(kib) / 1024);
}

/** `count` consumers, each claiming the next of the query's candidates in turn, 8 at a time. */
async function claimCandidates(api: PlacementClient, path: string, version: string, count: number): Promise<void> {
  if (count <= 0) return;
  const { allocation_requests: requests } = JSON.parse((await api.timedGet(path, version)).body.toString('utf8')) as {
    allocation_requests: { allocations: unknown }[];
  };
  let next = 0;
  const claimer = async () => {
    for (let i = next++; i < count; i = next++) {
      await api.request('PUT', `/allocations/${crypto.randomUUID()}`, {
        version: '1.36',
        body: {
          allocations: requests[i % requests.length]!.allocations,
          project_id: crypto.randomUUID(),
          user_id: crypto.randomUUID(),
          consumer_generation: null,
        },
        // A candidate whose capacity earlier claims took (a nested tree's one FPGA) is refused: the claims stop growing there.
        okStatuses: [204, 409],
      });
    }
  };
  await Promise.all(Array.from({ length: 8 }, claimer));
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function measure(): Promise<void> {
  const scenario = SCENARIOS.find((s) => s.name === args.scenario);
  if (!scenario) throw new Error(`no scenario ${args.scenario}`);
  const full = scenario.measures.find((m) => m.kind === 'first' || m.kind === 'latency')!;
  const dir = mkdtempSync(join(tmpdir(), 'answer-floor-'));
  const extraEnv = Object.fromEntries(
    args
      .env!.split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const nodeArgs = ['--max-semi-space-size=32', '--import', 'tsx'];
  const child = spawn(process.execPath, [...nodeArgs, 'bench/answer-floor.ts', '--serve'], {
    env: { ...process.env, PLACEMENT_DB_URL: `file:${join(dir, 'p.db')}`, LOG_LEVEL: 'warn', ...extraEnv },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (chunk: string) => {
        const match = /listening (\d+)/.exec(chunk);
        if (match) resolve(Number(match[1]));
      });
      child.once('exit', (code) => reject(new Error(`server exited with ${code}`)));
    });
    const api = new PlacementClient(`http://127.0.0.1:${port}`, 'admin', '1.36', 300_000);
    await api.request('GET', '/');
    const rssAtRest = rssMiB(child.pid!);
    await httpLoad(api, scenario.build(), 16, scenario.preheat);
    const path = `/allocation_candidates?${full.query}`;
    const get = async (p: string) => (await api.timedGet(p, full.version)).body.length;
    await claimCandidates(api, path, full.version, Number(args.consumers));
    for (let i = 0; i < 30; i += 1) await get(path);
    const bytes = Number(await (await api.request('GET', `/__prepare?q=${encodeURIComponent(path)}`, { version: full.version })).text());
    for (let i = 0; i < 30; i += 1) await get('/__floor');
    const pid = child.pid!;
    const answerMs: number[] = [];
    const floorMs: number[] = [];
    const perRound = Number(args['per-round']);
    const cpuPerRequest = async (p: string) => {
      const before = threadsCpuNs(pid);
      for (let i = 0; i < perRound; i += 1) {
        const length = await get(p);
        if (length !== bytes) throw new Error(`${p}: ${length} bytes, not ${bytes}`);
      }
      return (threadsCpuNs(pid) - before) / perRound / 1e6;
    };
    for (let round = 0; round < Number(args.rounds); round += 1) {
      answerMs.push(await cpuPerRequest(path));
      floorMs.push(await cpuPerRequest('/__floor'));
    }
    if (args['cpu-prof']) {
      await api.request('GET', '/__profile-start');
      for (let i = 0; i < 100; i += 1) await get(path);
      const profile = await (await api.request('GET', '/__profile-stop')).text();
      writeFileSync(args['cpu-prof'], profile);
      printTop(JSON.parse(profile) as CpuProfile);
    }
    const answer = median(answerMs);
    const floor = median(floorMs);
    console.log(
      JSON.stringify({
        scenario: scenario.name,
        bytes,
        answer_cpu_ms: Number(answer.toFixed(3)),
        floor_cpu_ms: Number(floor.toFixed(3)),
        ratio: Number((answer / floor).toFixed(2)),
        rss_mib_at_rest: rssAtRest,
        rss_mib_after: rssMiB(pid),
        consumers: Number(args.consumers),
        rounds: answerMs.length,
        per_round: perRound,
        answer_rounds: answerMs.map((x) => Number(x.toFixed(2))),
        floor_rounds: floorMs.map((x) => Number(x.toFixed(2))),
      }),
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (args.serve) await serve();
else await measure();
