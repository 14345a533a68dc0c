// npm run bench:scale [-- --scenarios scale-10k,scale-100k,scale-20k-1m-consumers,scale-200k] [--cache on,off]
//   [--workers 1] [--reps 10] [--claims 50] [--clients 10] [--json out.json] [--list]
//
// Large clouds, as a user would run them: flat placeload clouds of 10,000 and 100,000
// providers, and 1,000,000 consumers on 20,000 providers (bench/scenarios.ts scale()). Too
// many rows to load over HTTP on a small machine, so each cloud is written straight into a
// libSQL file (bench/cloud.ts prepareDb: the migrated schema, then directLoad's rows, the rows
// the API writes, and loadConsumers's two INSERT ... SELECT), once per scenario; every start
// below gets a fresh copy of that file. For each tree cache setting (`--cache`: on = every
// provider kept, off = 0, default = the shipped default, or a number) it starts `npm start` on
// the copy twice:
//   start 1: spawn to `GET /` 200 and to `GET /readyz` 200; RSS of each process at rest; the
//            first full answer after the start (cold, curl) and the second; `--reps` warm full
//            answers and 20 warm limit=10 answers (median / p95, server CPU); a claim cycle (GET
//            limit=5 + PUT for a new consumer, as perfload's write_allocation) `--claims` times
//            from one client, then from `--clients` clients; RSS of each process after.
//   start 2: spawn to ready again, then the first limit=10 answer after the start (cold, curl).
// Before the starts, probeHeap (below) measures what a cache of every tree holds in a process of
// its own. The output says how the cloud was loaded (straight into the file, not over HTTP).
// Figures say the load average (1 min) when they were taken; compare settings by ratio, and by
// server CPU, which a busy machine moves less than wall time.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/sqld.js';
import { claimFirstCandidate, closeTimedConnections, curlGet, PlacementClient, pool } from './client.js';
import { prepareDb } from './cloud.js';
import { processTree, statusOf, treeCpuNs } from './processes.js';
import { SCENARIOS } from './scenarios.js';
import { FLAT_QUERY, FLAT_VERSION } from './upstream.js';

const ROOT = join(import.meta.dirname, '..');
const SCALE = SCENARIOS.filter((s) => s.name.startsWith('scale-'));
/** A tree cache limit above every scale cloud: each provider kept. */
const CACHE_ALL = 1_000_000;

const { values: args } = parseArgs({
  options: {
    /** The issue's three by default; scale-200k on request (200,010 providers: just above a Node process's default limit). */
    scenarios: { type: 'string', default: 'scale-10k,scale-100k,scale-20k-1m-consumers' },
    cache: { type: 'string', default: 'on,off' },
    workers: { type: 'string', default: '1' },
    reps: { type: 'string', default: '10' },
    claims: { type: 'string', default: '50' },
    clients: { type: 'string', default: '10' },
    timeout: { type: 'string', default: '120' },
    json: { type: 'string' },
    list: { type: 'boolean', default: false },
    /** Internal: run the heap probe on this database file (under node --expose-gc) and print its JSON. */
    'probe-heap': { type: 'string' },
  },
});

if (args.list) {
  for (const s of SCALE) console.log(`${s.name.padEnd(24)} ${s.title}`);
  process.exit(0);
}

const chosen = args.scenarios.split(',').map((name) => {
  const found = SCALE.find((s) => s.name === name);
  if (!found) throw new Error(`unknown scale scenario ${name}; --list shows them`);
  return found;
});
const settings = args.cache.split(',').map((c) => {
  if (c === 'on') return { label: 'on', value: String(CACHE_ALL) };
  if (c === 'off') return { label: 'off', value: '0' };
  if (c === 'default') return { label: 'default', value: undefined };
  if (/^\d+$/.test(c)) return { label: c, value: c };
  throw new Error(`--cache takes on, off, default or a number, not ${c}`);
});
const REPS = Number(args.reps);
const CLAIMS = Number(args.claims);
const CLIENTS = Number(args.clients);
const TIMEOUT_MS = Number(args.timeout) * 1000;

const round = (x: number) => Math.round(x * 10) / 10;
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const load1 = () => Number(loadavg()[0]!.toFixed(2));

// ------------------------------------------------------------ the server ---

interface Server {
  child: ChildProcess;
  port: number;
  api: PlacementClient;
  exited: Promise<void>;
}

/** Milliseconds from `since` until GET path answers 200, probing every 10 ms on a new connection (as cold-start.ts). */
async function until200(server: Server, path: string, since: number): Promise<number> {
  while (performance.now() - since < TIMEOUT_MS) {
    if (server.child.exitCode !== null) throw new Error(`npm start exited ${server.child.exitCode} before ${path} answered`);
    if ((await statusOf(server.port, path)) === 200) return Math.round(performance.now() - since);
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${path} did not answer 200 within ${TIMEOUT_MS} ms`);
}

/** `npm start` on `dbFile` with the tree cache at `cache` (undefined: the shipped default). */
async function startServer(dbFile: string, cache: string | undefined): Promise<{ server: Server; listen_ms: number; ready_ms: number }> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOST: '127.0.0.1',
    PORT: String(port),
    PLACEMENT_DB_URL: `file:${dbFile}`,
    PLACEMENT_WORKERS: args.workers,
    LOG_LEVEL: 'warn',
  };
  if (cache === undefined) delete env.PLACEMENT_CANDIDATE_TREE_CACHE;
  else env.PLACEMENT_CANDIDATE_TREE_CACHE = cache;
  const since = performance.now();
  const child = spawn('npm', ['start', '--silent'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const server = { child, port, exited, api: new PlacementClient(`http://127.0.0.1:${port}`, 'admin', FLAT_VERSION, TIMEOUT_MS) };
  try {
    const listen_ms = await until200(server, '/', since);
    const ready_ms = await until200(server, '/readyz', since);
    return { server, listen_ms, ready_ms };
  } catch (err) {
    await stopServer(server);
    throw err;
  }
}

async function stopServer(server: Server): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
  await server.exited;
}

interface ProcessMemory {
  pid: number;
  role: string;
  rss_mib: number;
  peak_rss_mib: number;
}

/** RSS now and at its peak (VmHWM) of every process `npm start` runs, each named by its role. */
function memory(server: Server): ProcessMemory[] {
  const out: ProcessMemory[] = [];
  for (const pid of processTree([server.child.pid!])) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
      if (!kib('VmRSS')) continue;
      const role = cmd.includes('scripts/start.mjs')
        ? 'node (scripts/start.mjs: primary, or the server with 1 worker)'
        : cmd.includes('server.mjs')
          ? 'node (server process)'
          : cmd.startsWith('npm')
            ? 'npm (launcher)'
            : cmd.slice(0, 40);
      out.push({ pid, role, rss_mib: round(kib('VmRSS') / 1024), peak_rss_mib: round(kib('VmHWM') / 1024) });
    } catch {
      /* exited meanwhile */
    }
  }
  return out;
}

/** The server's own gauge: how many providers its tree cache holds (proof that a setting took). */
async function cachedProviders(server: Server): Promise<number | null> {
  // A cluster's primary gathers its server processes' counters, and on a busy machine may not in time (503): try again.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const res = await server.api.request('GET', '/metrics', { okStatuses: [200, 401, 403, 404, 503] });
    if (res.status === 503) {
      await res.arrayBuffer();
      continue;
    }
    if (res.status !== 200) return null;
    const line = (await res.text()).split('\n').find((l) => l.startsWith('placement_tree_cache_providers'));
    return line ? Number(line.split(' ').pop()) : null;
  }
  return null;
}

// ------------------------------------------------------------- measures ---

const cpuOf = (server: Server) => treeCpuNs([server.child.pid!]) ?? 0;

/** One GET timed by curl on a new connection, as perfload's runners time their first answers; server CPU beside it. */
interface CurlFirst {
  ms: number;
  cpu_ms: number;
  candidates: number;
  load1: number;
}

async function curlFirst(server: Server, query: string): Promise<CurlFirst> {
  const before = cpuOf(server);
  const { ms, candidates } = await curlGet(server.api, query, FLAT_VERSION);
  return { ms: round(ms), cpu_ms: round((cpuOf(server) - before) / 1e6), candidates, load1: load1() };
}

interface Latency {
  median_ms: number;
  p95_ms: number;
  cpu_median_ms: number;
  cpu_p95_ms: number;
  candidates: number;
  kib: number;
  load1: number;
}

/** `reps` kept-alive GETs after one warm-up: wall and server CPU per answer; the last answer parsed after the timing. */
async function warm(server: Server, query: string, reps: number): Promise<Latency> {
  await server.api.timedGet(`/allocation_candidates?${query}`, FLAT_VERSION);
  const walls: number[] = [];
  const cpus: number[] = [];
  let last: Buffer = Buffer.alloc(0);
  for (let i = 0; i < reps; i += 1) {
    const before = cpuOf(server);
    const { ms, body } = await server.api.timedGet(`/allocation_candidates?${query}`, FLAT_VERSION);
    cpus.push((cpuOf(server) - before) / 1e6);
    walls.push(ms);
    last = body;
  }
  walls.sort((a, b) => a - b);
  cpus.sort((a, b) => a - b);
  return {
    median_ms: round(percentile(walls, 50)),
    p95_ms: round(percentile(walls, 95)),
    cpu_median_ms: round(percentile(cpus, 50)),
    cpu_p95_ms: round(percentile(cpus, 95)),
    candidates: (JSON.parse(last.toString('utf8')) as { allocation_requests: unknown[] }).allocation_requests.length,
    kib: round(last.length / 1024),
    load1: load1(),
  };
}

interface Claims {
  clients: number;
  granted: number;
  conflicts: number;
  claims_per_s: number;
  cycle_median_ms: number;
  cycle_p95_ms: number;
  cpu_ms_per_claim: number;
  load1: number;
}

/**
 * `count` claim cycles from `clients` clients: GET the query with limit=5, PUT the first
 * candidate for a new consumer (perfload's write_allocation). A 409 (another client took the
 * room first) is counted and the cycle tried again.
 */
async function claimCycles(server: Server, count: number, clients: number): Promise<Claims> {
  const cycles: number[] = [];
  let conflicts = 0;
  const cpuBefore = cpuOf(server);
  const started = performance.now();
  await pool(count, clients, async () => {
    for (;;) {
      const t0 = performance.now();
      if ((await claimFirstCandidate(server.api, FLAT_QUERY, FLAT_VERSION, { conflictOk: true })) !== null) {
        cycles.push(performance.now() - t0);
        return;
      }
      conflicts += 1;
    }
  });
  const seconds = (performance.now() - started) / 1000;
  cycles.sort((a, b) => a - b);
  return {
    clients,
    granted: count,
    conflicts,
    claims_per_s: round(count / seconds),
    cycle_median_ms: round(percentile(cycles, 50)),
    cycle_p95_ms: round(percentile(cycles, 95)),
    cpu_ms_per_claim: round((cpuOf(server) - cpuBefore) / 1e6 / count),
    load1: load1(),
  };
}

// ----------------------------------------------------------------- main ---

interface SettingResult {
  cache: string;
  cache_setting: string;
  cached_providers: number | null;
  start1: { listen_ms: number; ready_ms: number; load1: number };
  start2: { listen_ms: number; ready_ms: number; load1: number };
  memory_at_rest: ProcessMemory[];
  full_cold: { first: CurlFirst; second: CurlFirst };
  full_warm: Latency;
  limit10_cold: CurlFirst;
  limit10_warm: Latency;
  claims_one_client: Claims;
  claims_concurrent: Claims;
  memory_after: ProcessMemory[];
}

async function runSetting(template: string, dir: string, cache: { label: string; value: string | undefined }): Promise<SettingResult> {
  const dbFile = join(dir, 'run.db');
  const copy = () => {
    for (const suffix of ['', '-wal', '-shm']) {
      rmSync(dbFile + suffix, { force: true });
      if (existsSync(template + suffix)) copyFileSync(template + suffix, dbFile + suffix);
    }
  };
  copy();
  const first = await startServer(dbFile, cache.value);
  let part: Omit<SettingResult, 'start2' | 'limit10_cold'>;
  try {
    const s = first.server;
    const start1 = { listen_ms: first.listen_ms, ready_ms: first.ready_ms, load1: load1() };
    const memory_at_rest = memory(s);
    // perfload's runners count the providers between loading and timing; not a candidates request.
    await s.api.request('GET', '/resource_providers?name=scale-bench');
    const firstFull = await curlFirst(s, FLAT_QUERY);
    const secondFull = await curlFirst(s, FLAT_QUERY);
    const full_warm = await warm(s, FLAT_QUERY, REPS);
    const limit10_warm = await warm(s, `${FLAT_QUERY}&limit=10`, 20);
    const claims_one_client = await claimCycles(s, CLAIMS, 1);
    const claims_concurrent = await claimCycles(s, CLAIMS, CLIENTS);
    part = {
      cache: cache.label,
      cache_setting: cache.value ?? 'default',
      cached_providers: await cachedProviders(s),
      start1,
      memory_at_rest,
      full_cold: { first: firstFull, second: secondFull },
      full_warm,
      limit10_warm,
      claims_one_client,
      claims_concurrent,
      memory_after: memory(s),
    };
  } finally {
    await stopServer(first.server);
  }
  copy();
  const again = await startServer(dbFile, cache.value);
  try {
    const start2 = { listen_ms: again.listen_ms, ready_ms: again.ready_ms, load1: load1() };
    await again.server.api.request('GET', '/resource_providers?name=scale-bench');
    return { ...part, start2, limit10_cold: await curlFirst(again.server, `${FLAT_QUERY}&limit=10`) };
  } finally {
    await stopServer(again.server);
  }
}

const mib = (ms: ProcessMemory[]) => round(ms.filter((m) => !m.role.startsWith('npm')).reduce((a, m) => a + m.rss_mib, 0));
const perProcess = (ms: ProcessMemory[]) =>
  ms
    .filter((m) => !m.role.startsWith('npm'))
    .map((m) => `${m.rss_mib}`)
    .join(' + ');

function print(name: string, title: string, load: Record<string, number>, results: SettingResult[]): void {
  console.log(`\n== ${name}: ${title}`);
  console.log(`loaded straight into the libSQL file (bench/cloud.ts prepareDb): ${JSON.stringify(load)}`);
  const rows: [string, (r: SettingResult) => string][] = [
    ['providers in the tree cache (gauge)', (r) => String(r.cached_providers ?? 'n/a')],
    [
      'npm start: to listening / to ready (2 starts) [load]',
      (r) =>
        `${r.start1.listen_ms} / ${r.start1.ready_ms} ms; ${r.start2.listen_ms} / ${r.start2.ready_ms} ms [${r.start1.load1}; ${r.start2.load1}]`,
    ],
    ['RSS at rest, server processes (MiB)', (r) => `${perProcess(r.memory_at_rest)} = ${mib(r.memory_at_rest)}`],
    [
      'full answer, cold: 1st / 2nd after start (curl) [CPU] [load]',
      (r) =>
        `${r.full_cold.first.ms} / ${r.full_cold.second.ms} ms [${r.full_cold.first.cpu_ms} / ${r.full_cold.second.cpu_ms}] [${r.full_cold.first.load1}] (${r.full_cold.first.candidates} cand.)`,
    ],
    [
      'full answer, warm: median / p95 [CPU median / p95] [load]',
      (r) =>
        `${r.full_warm.median_ms} / ${r.full_warm.p95_ms} ms [${r.full_warm.cpu_median_ms} / ${r.full_warm.cpu_p95_ms}] [${r.full_warm.load1}] (${r.full_warm.candidates} cand., ${r.full_warm.kib} KiB)`,
    ],
    [
      'limit=10, cold: 1st after start (curl) [CPU] [load]',
      (r) => `${r.limit10_cold.ms} ms [${r.limit10_cold.cpu_ms}] [${r.limit10_cold.load1}]`,
    ],
    [
      'limit=10, warm: median / p95 [CPU median / p95] [load]',
      (r) =>
        `${r.limit10_warm.median_ms} / ${r.limit10_warm.p95_ms} ms [${r.limit10_warm.cpu_median_ms} / ${r.limit10_warm.cpu_p95_ms}] [${r.limit10_warm.load1}]`,
    ],
    ...(
      [
        ['one_client', 'claims, 1 client'],
        ['concurrent', `claims, ${CLIENTS} clients`],
      ] as const
    ).map(
      ([key, label]) =>
        [
          `${label}: claims/s; cycle median / p95; CPU per claim [load]`,
          (r: SettingResult) => {
            const c = key === 'one_client' ? r.claims_one_client : r.claims_concurrent;
            return `${c.claims_per_s}/s; ${c.cycle_median_ms} / ${c.cycle_p95_ms} ms; ${c.cpu_ms_per_claim} ms [${c.load1}]${c.conflicts ? ` (${c.conflicts} 409s retried)` : ''}`;
          },
        ] as [string, (r: SettingResult) => string],
    ),
    [
      'RSS after, server processes (MiB); peak',
      (r) =>
        `${perProcess(r.memory_after)} = ${mib(r.memory_after)}; peak ${round(r.memory_after.filter((m) => !m.role.startsWith('npm')).reduce((a, m) => a + m.peak_rss_mib, 0))}`,
    ],
  ];
  const header = ['figure', ...results.map((r) => `tree cache ${r.cache} (${r.cache_setting})`)];
  const table = [header, ...rows.map(([label, f]) => [label, ...results.map(f)])];
  const widths = header.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  for (const r of table)
    console.log(
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    );
  const on = results.find((r) => r.cache === 'on');
  const off = results.find((r) => r.cache === 'off');
  if (on && off) {
    // The gauge may not answer from a busy cluster; "on" keeps every provider either way.
    const perProvider =
      ((mib(on.memory_at_rest) - mib(off.memory_at_rest)) * 1024) / (on.cached_providers ?? load.providers!) / Number(args.workers);
    console.log(
      `tree cache on against off: RSS at rest ${round(perProvider)} KiB more per cached provider per server process; full answer CPU ` +
        `${round(off.full_warm.cpu_median_ms / on.full_warm.cpu_median_ms)}x less, limit=10 CPU ${round(off.limit10_warm.cpu_median_ms / on.limit10_warm.cpu_median_ms)}x less, ` +
        `cold 1st full answer ${round(off.full_cold.first.ms / on.full_cold.first.ms)}x faster, ready ${round(on.start1.ready_ms / off.start1.ready_ms)}x later`,
    );
  }
}

async function main(): Promise<void> {
  // The bundle npm start runs: built now if the sources changed, so no start below pays for it.
  const prepared = spawnSync('npm', ['run', 'prepare', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  if (prepared.status !== 0) throw new Error('npm run prepare failed');
  console.log(
    `placement-edge scale bench: ${chosen.map((s) => s.name).join(', ')}; tree cache ${args.cache}; PLACEMENT_WORKERS=${args.workers}`,
  );
  console.log(
    `machine: ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (1/5/15 min)`,
  );
  const all: Record<string, unknown> = {};
  for (const s of chosen) {
    const dir = mkdtempSync(join(tmpdir(), 'placement-scale-'));
    try {
      const template = join(dir, 'template.db');
      console.error(`[${s.name}] writing the cloud into ${template} ...`);
      const cloud = s.build();
      const t0 = performance.now();
      await prepareDb(template, cloud, s.consumers ?? 0);
      const load = {
        providers: cloud.flat().length,
        consumers: s.consumers ?? 0,
        load_s: round((performance.now() - t0) / 1000),
        load1: load1(),
      };
      console.error(`[${s.name}] the heap the tree cache holds ...`);
      const heap = runHeapProbe(template);
      const results: SettingResult[] = [];
      for (const cache of settings) {
        console.error(`[${s.name}] tree cache ${cache.label} ...`);
        results.push(await runSetting(template, dir, cache));
      }
      print(s.name, s.title, load, results);
      console.log(`tree cache, in one process (node --expose-gc, after a full GC; bench/scale.ts probeHeap): ${JSON.stringify(heap)}`);
      all[s.name] = { title: s.title, method: 'direct-db', load, heap, results };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  closeTimedConnections();
  console.log(JSON.stringify(all));
  if (args.json) writeFileSync(args.json, `${JSON.stringify(all, null, 2)}\n`);
}

/**
 * What the tree cache itself holds, in this process: V8 heap and buffers after a full GC,
 * before and after the trees are read into a cache that keeps them all, and after one full
 * answer (its kept answer bytes); the read's wall and CPU time. RSS (above) also holds the
 * garbage a read or an answer left and the allocator keeps.
 */
async function probeHeap(dbFile: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('--probe-heap needs node --expose-gc');
  const { loadConfig } = await import('../src/config.js');
  const { openStore } = await import('../src/entry/node-service.js');
  const { candidateEngine } = await import('../src/compose.js');
  const { findAllocationCandidatesJson } = await import('../src/placement/candidates/index.js');
  const { parseCandidateQueryString } = await import('../src/placement/candidates/parse.js');
  const { Microversion } = await import('../src/microversion.js');
  const { MAX_VERSION } = await import('../src/placement/versions.js');
  const config = loadConfig({ PLACEMENT_DB_URL: `file:${dbFile}`, PLACEMENT_CANDIDATE_TREE_CACHE: String(CACHE_ALL) });
  const store = await openStore(config, { prepare: false });
  const engine = candidateEngine(config, undefined);
  const uncached = candidateEngine({ ...config, PLACEMENT_CANDIDATE_TREE_CACHE: 0 }, undefined);
  const mv = Microversion.parse(MAX_VERSION)!;
  const fullAnswer = async (options: ReturnType<typeof engine.options>) =>
    (await findAllocationCandidatesJson(store.nearby, parseCandidateQueryString(FLAT_QUERY, mv), mv, options)).length;
  const held = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    // external counts the ArrayBuffers' bytes too (arrayBuffers is its part held by them).
    return { heap: m.heapUsed, external: m.external };
  };
  const mib = (a: { heap: number; external: number }, b: { heap: number; external: number }) =>
    `${round((b.heap - a.heap) / 2 ** 20)} + ${round((b.external - a.external) / 2 ** 20)}`;
  const total = (a: { heap: number; external: number }, b: { heap: number; external: number }) => b.heap + b.external - a.heap - a.external;
  try {
    const providers = Number((await store.client.execute('SELECT count(*) AS n FROM resource_providers')).rows[0]!.n);
    // A full answer without the cache first: the code it compiles is then in both figures, and nothing else stays.
    await fullAnswer(uncached.options());
    console.error('probe: a full answer without the cache');
    const before = held();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await engine.refresh(store.nearby);
    const readMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const afterRead = held();
    console.error('probe: the trees read');
    // Only its size is kept: the answer's own bytes are the request's, not the cache's.
    const answerBytes = await fullAnswer(engine.options());
    const afterAnswer = held();
    console.error('probe: a full answer with the cache');
    console.log(
      JSON.stringify({
        providers,
        read_ms: round(readMs),
        read_cpu_ms: round((cpu.user + cpu.system) / 1000),
        mib_trees: round(total(before, afterRead) / 2 ** 20),
        mib_trees_js_heap_plus_buffers: mib(before, afterRead),
        kib_per_provider_trees: round(total(before, afterRead) / 1024 / providers),
        mib_after_full_answer: round(total(before, afterAnswer) / 2 ** 20),
        mib_after_full_answer_js_heap_plus_buffers: mib(before, afterAnswer),
        kib_per_provider_after_full_answer: round(total(before, afterAnswer) / 1024 / providers),
        answer_kib: round(answerBytes / 1024),
      }),
    );
  } finally {
    store.close();
  }
}

/** The heap probe in a process of its own (a GC it may force, nothing else's garbage in its heap). */
function runHeapProbe(dbFile: string): Record<string, unknown> {
  const run = spawnSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', join(import.meta.dirname, 'scale.ts'), '--probe-heap', dbFile],
    {
      cwd: ROOT,
      encoding: 'utf8',
      timeout: TIMEOUT_MS,
    },
  );
  const last = run.stdout.trim().split('\n').pop() ?? '';
  return run.status === 0 && last.startsWith('{')
    ? { ...(JSON.parse(last) as Record<string, unknown>), load1: load1() }
    : { failed: run.stderr.slice(-500) };
}

(args['probe-heap'] ? probeHeap(args['probe-heap']) : main()).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
