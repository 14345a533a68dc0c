// Resident memory of `npm start`'s processes, for one or more server bundles
// (scripts/build.ts --start-bundle DIR; each DIR under node_modules/ so the
// bundle finds libSQL's binding), started alternately on copies of one file
// with the scenario's cloud, as `npm start` starts them (node, npm start's
// flags from package.json, BUNDLE): RSS and PSS of every process (the primary
// and its server processes) once ready and idle, and after `--answers` warm
// full answers. `--heap-snapshot DIR`: each server process writes a V8 heap
// snapshot into DIR after the answers (Node's --heapsnapshot-signal).
//   npx tsx bench/rss.ts --bundles node_modules/.cache/a/server.mjs,node_modules/.cache/b/server.mjs [--workers 1] [--rounds 3]
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/sqld.js';
import { closeTimedConnections, PlacementClient } from './client.js';
import { directLoad } from './cloud.js';
import { npmStartFlags, processTree } from './processes.js';
import { SCENARIOS } from './scenarios.js';

const { values: args } = parseArgs({
  options: {
    bundles: { type: 'string' },
    scenario: { type: 'string', default: 'flat-1000' },
    workers: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    answers: { type: 'string', default: '100' },
    'heap-snapshot': { type: 'string' },
    /** Node flags for every bundle, after npm start's own (space-separated). */
    'node-flags': { type: 'string' },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario)!;
const first = scenario.measures.find((m) => m.kind === 'first')!;
const dir = mkdtempSync(join(tmpdir(), 'rss-'));
const loaded = join(dir, 'loaded.db');
{
  const { loadConfig } = await import('../src/config.js');
  const { openStore } = await import('../src/entry/node-service.js');
  const store = await openStore(loadConfig({ PLACEMENT_DB_URL: `file:${loaded}` }));
  await directLoad(store.client, scenario.build());
  store.close();
}

/** RSS and PSS in MiB of one process (smaps_rollup). */
function memoryOf(pid: number): { rss: number; pss: number } {
  const text = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { rss: kib('Rss') / 1024, pss: kib('Pss') / 1024 };
}
const f = (x: number) => x.toFixed(1);
const settle = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function once(bundle: string, round: number): Promise<string> {
  const db = join(dir, `r${round}.db`);
  copyFileSync(loaded, db);
  const port = await freePort();
  const snapshots = args['heap-snapshot'] ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${resolve(args['heap-snapshot'])}`] : [];
  const child = spawn(process.execPath, [...npmStartFlags(), ...(args['node-flags']?.split(' ') ?? []), ...snapshots, resolve(bundle)], {
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
  try {
    for (const deadline = Date.now() + 120_000; ; await settle(200)) {
      if (Date.now() > deadline) throw new Error('not ready');
      try {
        if ((await fetch(`${url}/readyz`)).status === 200) break;
      } catch {
        /* not yet */
      }
    }
    const each = () => [...processTree([child.pid!])].sort((a, b) => a - b).map((pid) => ({ pid, ...memoryOf(pid) }));
    await settle(2000);
    const rest = each();
    const client = new PlacementClient(url, 'admin', first.version, 120_000);
    for (let i = 0; i < Number(args.answers); i += 1) await client.timedGet(`/allocation_candidates?${first.query}`, first.version);
    closeTimedConnections();
    await settle(1000);
    const after = each();
    if (snapshots.length) {
      // The primary has no signal handler of its own for it: only the server processes (all but the first when clustered).
      const servers = after.length > 1 ? after.slice(1) : after;
      for (const { pid } of servers) process.kill(pid, 'SIGUSR2');
      await settle(15_000);
    }
    const sum = (xs: { rss: number; pss: number }[], k: 'rss' | 'pss') => xs.reduce((t, x) => t + x[k], 0);
    return `rest RSS ${rest.map((x) => f(x.rss)).join(' + ')} = ${f(sum(rest, 'rss'))} (PSS ${f(sum(rest, 'pss'))}); after ${args.answers} answers RSS ${after.map((x) => f(x.rss)).join(' + ')} = ${f(sum(after, 'rss'))} (PSS ${f(sum(after, 'pss'))}) MiB`;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

try {
  for (let round = 0; round < Number(args.rounds); round += 1) {
    for (const bundle of args.bundles!.split(',')) {
      const load = loadavg()[0]!.toFixed(1);
      console.log(`round ${round + 1} ${bundle} (load ${load}): ${await once(bundle, round)}`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
