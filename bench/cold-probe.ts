// Cold against warm, per server process, for A/B of checkouts on a busy machine:
// each round starts a checkout's Node server (default PLACEMENT_WORKERS) on a
// fresh database, loads a perfload cloud over HTTP as `npm run bench` does,
// then perfload's method (count the providers, two curls of the full answer)
// and 10 warm answers, with the CPU time of every server process apart.
// Checkouts alternate round by round, so the machine's load hits both alike.
//   npx tsx bench/cold-probe.ts --scenario nested-200 --rounds 3 ROOT [ROOT ...]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/sqld.js';
import { httpLoad } from './cloud.js';
import { closeTimedConnections, PlacementClient } from './client.js';
import { SCENARIOS } from './scenarios.js';

const { values: args, positionals: roots } = parseArgs({
  allowPositionals: true,
  options: {
    scenario: { type: 'string', default: 'nested-200' },
    rounds: { type: 'string', default: '3' },
    workers: { type: 'string' },
    /** Milliseconds between the end of the load and perfload's count. */
    pause: { type: 'string', default: '0' },
  },
});
if (!roots.length) roots.push(process.cwd());
const scenario = SCENARIOS.find((s) => s.name === args.scenario)!;
const first = scenario.measures.find((m) => m.kind === 'first')!;

function threadsCpuNs(pid: number): number {
  let total = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`))
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    /* gone */
  }
  return total;
}

function serverPids(root: number): number[] {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => {
      try {
        return { pid: Number(d), ppid: Number(readFileSync(`/proc/${d}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) };
      } catch {
        return { pid: Number(d), ppid: -1 };
      }
    });
  const tree = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const p of all)
      if (tree.has(p.ppid) && !tree.has(p.pid)) {
        tree.add(p.pid);
        grew = true;
      }
  }
  return [...tree].filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('src/entry/node.ts');
    } catch {
      return false;
    }
  });
}

const cpuOf = (pids: number[]) => pids.map(threadsCpuNs);
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
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/entry/node.ts'], {
    cwd: root,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PLACEMENT_DB_URL: `file:${db}`,
      LOG_LEVEL: 'warn',
      ...(args.workers ? { PLACEMENT_WORKERS: args.workers } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
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
    for (let i = 0; i < 3; i += 1) curl(q, first.version);
    const c3 = cpuOf(pids);
    const warm: number[] = [];
    for (let i = 0; i < 10; i += 1) warm.push(curl(q, first.version));
    const c4 = cpuOf(pids);
    warm.sort((a, b) => a - b);
    const per = (a: number[], b: number[], n: number) => diffMs(a, b).map((v) => Math.round((v / n) * 10) / 10);
    return (
      `${root.split('/').pop()} load ${load}: 1st ${w1} ms cpu [${diffMs(c0, c1).join(' ')}]  2nd ${w2} ms cpu [${diffMs(c1, c2).join(' ')}]  ` +
      `warm median ${warm[5]} ms cpu/answer [${per(c3, c4, 10).join(' ')}]`
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(`${scenario.name}: per server process [primary, workers...] CPU ms; curl wall ms`);
for (let r = 0; r < Number(args.rounds); r += 1) for (const root of roots) console.log(await round(root));
closeTimedConnections();
