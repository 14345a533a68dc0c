// Cold against warm, per server process, for A/B of checkouts on a busy machine:
// each round starts a checkout's `npm start` (its bundle; default PLACEMENT_WORKERS)
// on a fresh database, loads a perfload cloud over HTTP as `npm run bench` does,
// then perfload's method (count the providers, curls of the full answer: the 1st
// to 4th apart, as the cluster may hand them to any process) and 10 warm answers,
// with the CPU time of every server process apart ([launcher's tree, workers...]).
// Checkouts alternate round by round, so the machine's load hits both alike.
// --pause: milliseconds between the load and the count (a re-warm racing the
// request, or not). PROBE_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=DIR/prof":
// flags for every process (DIR: the round's folder, kept).
//   npx tsx bench/cold-probe.ts --scenario nested-200 --rounds 3 ROOT [ROOT ...]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { httpLoad } from './cloud.js';
import { closeTimedConnections, PlacementClient } from './client.js';
import { processTree, spawnNodeServer, treeCpuNs } from './processes.js';
import { SCENARIOS } from './scenarios.js';

const { values: args, positionals: roots } = parseArgs({
  allowPositionals: true,
  options: {
    scenario: { type: 'string', default: 'nested-200' },
    rounds: { type: 'string', default: '3' },
    workers: { type: 'string' },
    /** Milliseconds between the end of the load and perfload's count. */
    pause: { type: 'string', default: '0' },
    /** Then this many warm answers that are searched (a new amount each: no kept answer serves them). */
    searched: { type: 'string', default: '0' },
  },
});
if (!roots.length) roots.push(process.cwd());
const scenario = SCENARIOS.find((s) => s.name === args.scenario)!;
const first = scenario.measures.find((m) => m.kind === 'first')!;

/** The server processes below `root` (the primary and its workers). */
function serverPids(root: number): number[] {
  return [...processTree([root])].filter((pid) => {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return cmd.includes('src/entry/node.ts') || cmd.includes('server.mjs') || cmd.includes('start.mjs');
    } catch {
      return false;
    }
  });
}

const cpuOf = (pids: number[]) => pids.map((pid) => treeCpuNs([pid]) ?? 0);
const diffMs = (a: number[], b: number[]) => b.map((v, i) => Math.round((v - a[i]!) / 1e4) / 100);

function curl(url: string, version: string): number {
  const run = spawnSync('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{time_total}',
    '-H',
    'x-auth-token: admin',
    '-H',
    `openstack-api-version: placement ${version}`,
    url,
  ]);
  return Math.round(Number(run.stdout.toString()) * 10000) / 10;
}

async function round(root: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'cold-probe-'));
  const db = join(dir, 'p.db');
  const { child, url } = await spawnNodeServer(db, {
    cwd: root,
    ...(args.workers ? { workers: args.workers } : {}),
    bundle: true,
    // Flags for every process (the cluster's workers inherit the primary's): DIR is the round's folder, kept.
    nodeArgs: process.env.PROBE_NODE_OPTIONS ? process.env.PROBE_NODE_OPTIONS.replace('DIR', dir).split(' ') : [],
    // Each checkout's bundle apart, so alternating checkouts does not rebuild it every round.
    env: { PLACEMENT_START_CACHE: join(root, 'node_modules', '.cache', `probe-${root.split('/').pop()}`) },
  });
  const api = new PlacementClient(url, 'admin', '1.36', 120_000);
  try {
    for (const deadline = Date.now() + 300_000; ; ) {
      if (Date.now() > deadline) throw new Error('no start');
      try {
        const ready = await fetch(`${url}/readyz`);
        if (ready.status === 200 && serverPids(child.pid!).length >= (args.workers === '1' ? 1 : 3)) break;
      } catch {
        /* not yet */
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    // Every process ready (each answers /readyz 200 only when warm): ask a few times.
    for (let i = 0; i < 8; i += 1) {
      const r = await fetch(`${url}/readyz`);
      if (r.status !== 200) {
        i = 0;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    await httpLoad(api, scenario.build(), 16, scenario.preheat);
    if (Number(args.pause)) await new Promise((r) => setTimeout(r, Number(args.pause)));
    const pids = serverPids(child.pid!);
    const load = loadavg()[0]!.toFixed(1);
    await api.request('GET', '/resource_providers', { version: first.version });
    const q = `${url}/allocation_candidates?${first.query}`;
    const c0 = cpuOf(pids);
    const w1 = curl(q, first.version);
    const c1 = cpuOf(pids);
    const w2 = curl(q, first.version);
    const c2 = cpuOf(pids);
    const w3 = curl(q, first.version);
    const c25 = cpuOf(pids);
    const w4 = curl(q, first.version);
    const c26 = cpuOf(pids);
    for (let i = 0; i < 6; i += 1) curl(q, first.version);
    const c3 = cpuOf(pids);
    const warm: number[] = [];
    for (let i = 0; i < 10; i += 1) warm.push(curl(q, first.version));
    const c4 = cpuOf(pids);
    warm.sort((a, b) => a - b);
    const per = (a: number[], b: number[], n: number) => diffMs(a, b).map((v) => Math.round((v / n) * 10) / 10);
    // Warm but searched: the query with one more DISK_GB each time, as a process's first answer is searched.
    const searchedCount = Number(args.searched);
    const searched: number[] = [];
    for (let i = 1; i <= searchedCount; i += 1)
      searched.push(
        curl(
          q.replace(/DISK_GB:(\d+)/, (_, n) => `DISK_GB:${Number(n) + i}`),
          first.version,
        ),
      );
    const c5 = cpuOf(pids);
    searched.sort((a, b) => a - b);
    const searchedFigure = searchedCount
      ? `  searched median ${searched[Math.floor(searchedCount / 2)]} ms cpu/answer [${per(c4, c5, searchedCount).join(' ')}]`
      : '';
    return (
      `${root.split('/').pop()} load ${load}: 1st ${w1} ms cpu [${diffMs(c0, c1).join(' ')}]  2nd ${w2} ms cpu [${diffMs(c1, c2).join(' ')}]  3rd ${w3} [${diffMs(c2, c25).join(' ')}] 4th ${w4} [${diffMs(c25, c26).join(' ')}]  ` +
      `warm median ${warm[5]} ms cpu/answer [${per(c3, c4, 10).join(' ')}]${searchedFigure}`
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    if (process.env.PROBE_NODE_OPTIONS) console.log(`profiles kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`${scenario.name}: per server process [primary, workers...] CPU ms; curl wall ms`);
for (let r = 0; r < Number(args.rounds); r += 1) for (const root of roots) console.log(await round(root));
closeTimedConnections();
