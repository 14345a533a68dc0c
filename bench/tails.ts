// What a warm full answer's slow tail waits on. Starts this checkout's Node
// server (`src/entry/node.ts`, --workers N or the default) with V8's GC trace
// on, loads the scenario's cloud over HTTP, warms it with 30 answers, then
// times REQUESTS full answers one at a time and REQUESTS more ten at a time
// (each answer read whole, kept-alive connections). For each phase: median,
// p95, p99 and p95/median; the garbage collections the server reported
// meanwhile (scavenges and mark-compacts, their count and pause); and how
// many of the answers above the phase's p90 overlapped a collection of the
// process (the trace line's arrival on our side, minus its pause).
// Also req/s of each phase, each process's CPU in it, and each process's RSS
// once warm and at rest, and after the phases. `--bundle`: the server as
// `npm start` runs it (scripts/start.mjs's bundle, with npm start's
// --max-semi-space-size) instead of tsx; `--node-flags`: more Node flags
// for every process (after npm start's own, so a later
// --max-semi-space-size wins).
// `--skew`: the concurrency-10 phase's connections opened while every server
// process but the first is stopped (as a burst the kernel gives one process).
//   npx tsx bench/tails.ts [--scenario flat-1000|nested-200] [--requests 300] [--workers N] [--env K=V,...] [--bundle] [--node-flags '...'] [--skew]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { closeTimedConnections, PlacementClient, pool } from './client.js';
import { httpLoad } from './cloud.js';
import { SCENARIOS } from './scenarios.js';
import { npmStartFlags, processTree, spawnNodeServer, treeCpuNs } from './processes.js';

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'flat-1000' },
    requests: { type: 'string', default: '300' },
    workers: { type: 'string' },
    env: { type: 'string', default: '' },
    bundle: { type: 'boolean', default: false },
    'node-flags': { type: 'string', default: '' },
    /** Before the concurrency-10 phase, its connections opened while all server processes but the first are stopped (a burst the kernel gave one process). */
    skew: { type: 'boolean', default: false },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario);
if (!scenario) throw new Error(`unknown scenario ${args.scenario}`);
const full = scenario.measures.find((m) => m.kind === 'latency' && m.label.startsWith('full answer'));
if (!full || full.kind !== 'latency') throw new Error(`${args.scenario} has no full answer`);
const requests = Number(args.requests);

interface Gc {
  /** When it ended, on our clock (ms), and its pause. */
  endedAt: number;
  pauseMs: number;
  kind: 'scavenge' | 'mark-compact' | 'other';
}
const gcs: Gc[] = [];

const dir = mkdtempSync(join(tmpdir(), 'tails-'));
// Cluster workers inherit the primary's execArgv, --trace-gc with it.
const { child, url } = await spawnNodeServer(join(dir, 'placement.db'), {
  nodeArgs: [...(args.bundle ? npmStartFlags() : []), ...args['node-flags']!.split(' ').filter(Boolean), '--trace-gc'],
  bundle: args.bundle!,
  pipeStdout: true,
  ...(args.workers ? { workers: args.workers } : {}),
  env: Object.fromEntries(
    args
      .env!.split(',')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  ),
});
// "[pid:0x..] 1234 ms: Scavenge 50.1 (60.2) -> 45.3 (61.2) MB, 1.2 / 0.0 ms  (average mu = ...) allocation failure;"
const GC_LINE = /ms: (Scavenge|Mark-Compact|Mark-sweep|Minor[^ ]*)[^,]*, ([\d.]+) \/ ([\d.]+) ms/;
{
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const match = GC_LINE.exec(line);
    if (!match) return;
    const kind =
      match[1] === 'Scavenge' || match[1]!.startsWith('Minor') ? 'scavenge' : match[1]!.startsWith('Mark') ? 'mark-compact' : 'other';
    gcs.push({ endedAt: performance.now(), pauseMs: Number(match[2]), kind });
  });
}

const api = new PlacementClient(url, 'admin', '1.36', 300_000);
/** Resident memory of one process, MiB. */
const rssOf = (pid: number) => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
/** The primary first, then its server processes (the one process alone with --workers 1). */
const processes = () => [...processTree([child.pid!])].sort((a, b) => a - b);
const rssLine = () => processes().map((pid) => Number(rssOf(pid).toFixed(1)));
/** Of one process's RSS (MiB): mapped files (the node binary, shared between the processes), malloc's main heap (brk), the rest (V8's heap, mmapped malloc, stacks). */
function residentParts(pid: number): { files: number; malloc_brk: number; anonymous: number } {
  const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  let files = 0;
  let brk = 0;
  let anonymous = 0;
  let mapping = '';
  for (const line of smaps.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      mapping = head[1] !== '0' ? 'file' : head[2] === '[heap]' ? 'brk' : 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+)/.exec(line);
    if (!rss) continue;
    const mib = Number(rss[1]) / 1024;
    if (mapping === 'file') files += mib;
    else if (mapping === 'brk') brk += mib;
    else anonymous += mib;
  }
  const r = (x: number) => Number(x.toFixed(1));
  return { files: r(files), malloc_brk: r(brk), anonymous: r(anonymous) };
}
/** CPU time (ns) of these processes' threads so far (/proc/PID/task/TID/schedstat). */
function cpuNsOf(pids: number[]): number {
  let total = 0;
  for (const pid of pids)
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // a thread that ended meanwhile
      }
    }
  return total;
}
/** The server's established connections held by each of these processes (ss), midway through a phase. */
function connectionsOf(pids: number[]): number[] {
  const port = new URL(url).port;
  const out = spawnSync('ss', ['-tnpH', 'state', 'established', `( sport = :${port} )`], { encoding: 'utf8' }).stdout ?? '';
  return pids.map((pid) => out.split('\n').filter((line) => line.includes(`pid=${pid},`)).length);
}
/** Connections to the server closed (in TIME-WAIT on either side: the side that closes first holds it for a minute). */
function closedByServer(): number {
  const port = new URL(url).port;
  const out =
    spawnSync('ss', ['-tnH', 'state', 'time-wait', `( sport = :${port} or dport = :${port} )`], { encoding: 'utf8' }).stdout ?? '';
  return out.split('\n').filter(Boolean).length;
}
const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

try {
  for (const deadline = performance.now() + 300_000; ; ) {
    try {
      await api.request('GET', '/', { timeoutMs: 2000 });
      break;
    } catch {
      if (performance.now() > deadline) throw new Error('server did not start');
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await new Promise((r) => setTimeout(r, 3000));
  await httpLoad(api, scenario.build(), 16, scenario.preheat);
  const path = `/allocation_candidates?${full.query}`;
  for (let i = 0; i < 30; i += 1) await api.timedGet(path, full.version);
  await new Promise((r) => setTimeout(r, 2000));
  const warmRss = rssLine();
  for (const width of [1, 10]) {
    const spans: { start: number; end: number }[] = [];
    const gcFrom = gcs.length;
    const load = loadavg()[0]!;
    // The server processes (the primary's children, or the one process): each one's CPU in the phase tells how the answers were shared out.
    const tree = [...processTree([child.pid!])];
    const servers = tree.length > 1 ? tree.filter((pid) => pid !== child.pid) : tree;
    if (width > 1 && args.skew && servers.length > 1) {
      // None kept from the phase before: one on a stopped process would wait for it.
      closeTimedConnections();
      for (const pid of servers.slice(1)) process.kill(pid, 'SIGSTOP');
      try {
        await Promise.all(Array.from({ length: width }, () => api.timedGet('/', full.version)));
      } finally {
        for (const pid of servers.slice(1)) process.kill(pid, 'SIGCONT');
      }
    }
    const cpuBefore = servers.map((pid) => treeCpuNs([pid]) ?? 0);
    const phaseStart = performance.now();
    // One at a time, each answer's own server CPU too (its threads' time on a core: the machine's other work barely moves it), so the
    // tail the server makes (a collection, uneven work) can be told from the one a loaded machine makes.
    const answerCpuMs: number[] = [];
    let connections: number[] = [];
    const closedBefore = closedByServer();
    await pool(requests, width, async (i) => {
      if (i === requests >> 1) connections = connectionsOf(servers);
      const cpu = width === 1 ? cpuNsOf(servers) : 0;
      const start = performance.now();
      await api.timedGet(path, full.version);
      spans.push({ start, end: performance.now() });
      if (width === 1) answerCpuMs.push((cpuNsOf(servers) - cpu) / 1e6);
    });
    answerCpuMs.sort((a, b) => a - b);
    const phaseSeconds = (performance.now() - phaseStart) / 1000;
    const cpuMs = servers.map((pid, i) => ((treeCpuNs([pid]) ?? 0) - cpuBefore[i]!) / 1e6);
    const phaseGcs = gcs.slice(gcFrom);
    const ms = spans.map((s) => s.end - s.start).sort((a, b) => a - b);
    const p90 = percentile(ms, 90);
    const slow = spans.filter((s) => s.end - s.start >= p90);
    const overlapsGc = (s: { start: number; end: number }, kind?: Gc['kind']) =>
      phaseGcs.some((g) => (!kind || g.kind === kind) && g.endedAt - g.pauseMs < s.end && g.endedAt > s.start);
    const sum = (kind: Gc['kind']) => phaseGcs.filter((g) => g.kind === kind).reduce((t, g) => t + g.pauseMs, 0);
    const count = (kind: Gc['kind']) => phaseGcs.filter((g) => g.kind === kind).length;
    console.log(
      JSON.stringify({
        scenario: args.scenario,
        concurrency: width,
        requests,
        load_1min: Number(load.toFixed(1)),
        median_ms: Number(percentile(ms, 50).toFixed(2)),
        p95_ms: Number(percentile(ms, 95).toFixed(2)),
        p99_ms: Number(percentile(ms, 99).toFixed(2)),
        p95_over_median: Number((percentile(ms, 95) / percentile(ms, 50)).toFixed(2)),
        req_per_s: Number((requests / phaseSeconds).toFixed(1)),
        ...(width === 1
          ? {
              answer_cpu_median_ms: Number(percentile(answerCpuMs, 50).toFixed(2)),
              answer_cpu_p95_ms: Number(percentile(answerCpuMs, 95).toFixed(2)),
              answer_cpu_p95_over_median: Number((percentile(answerCpuMs, 95) / percentile(answerCpuMs, 50)).toFixed(2)),
              answers_over_twice_median_cpu: answerCpuMs.filter((ms) => ms > 2 * percentile(answerCpuMs, 50)).length,
            }
          : {}),
        scavenges: count('scavenge'),
        scavenge_pause_ms: Number(sum('scavenge').toFixed(1)),
        mark_compacts: count('mark-compact'),
        mark_compact_pause_ms: Number(sum('mark-compact').toFixed(1)),
        slowest_tenth: slow.length,
        slowest_tenth_during_mark_compact: slow.filter((s) => overlapsGc(s, 'mark-compact')).length,
        slowest_tenth_during_any_gc: slow.filter((s) => overlapsGc(s)).length,
        all_during_any_gc: spans.filter((s) => overlapsGc(s)).length,
        server_cpu_ms_per_answer: Number((cpuMs.reduce((a, b) => a + b, 0) / requests).toFixed(2)),
        connections_per_process: connections,
        connections_closed: closedByServer() - closedBefore,
        busiest_process_cpu_share: Number(
          (
            Math.max(...cpuMs) /
            Math.max(
              1e-9,
              cpuMs.reduce((a, b) => a + b, 0),
            )
          ).toFixed(2),
        ),
      }),
    );
  }
  await new Promise((r) => setTimeout(r, 2000));
  console.log(
    JSON.stringify({
      scenario: args.scenario,
      rss_mib_warm_at_rest: warmRss,
      rss_mib_after_phases: rssLine(),
      rss_parts_mib_after_phases: processes().map(residentParts),
    }),
  );
  // What the service's own /metrics says (summed over its processes): where the memory is, what the answers waited on.
  const text = await (await fetch(`${url}/metrics`, { headers: { 'x-auth-token': 'admin' } })).text();
  const value = (name: string, labels = '') =>
    Number(new RegExp(`^${name}${labels ? `\\{${labels}\\}` : ''} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
  const mib = (bytes: number) => Number((bytes / 1048576).toFixed(1));
  const spaces = [...text.matchAll(/^nodejs_heap_space_size_bytes\{space="(\w+)"\} (\S+)$/gm)].map(([, space, bytes]) => [
    space,
    mib(Number(bytes)),
  ]);
  console.log(
    JSON.stringify({
      metrics_rss_mib: mib(value('process_resident_memory_bytes')),
      metrics_largest_rss_mib: mib(value('placement_process_resident_memory_max_bytes')),
      metrics_heap_spaces_mib: Object.fromEntries(spaces),
      metrics_external_mib: mib(value('nodejs_external_memory_bytes')),
      metrics_minor_gcs: value('nodejs_gc_duration_seconds_count', 'kind="minor"'),
      metrics_major_gcs: value('nodejs_gc_duration_seconds_count', 'kind="major"'),
      metrics_loop_delay_samples: value('nodejs_eventloop_delay_seconds_count'),
      metrics_loop_delay_over_5ms:
        value('nodejs_eventloop_delay_seconds_count') - value('nodejs_eventloop_delay_seconds_bucket', 'le="0.005"'),
    }),
  );
} finally {
  child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
