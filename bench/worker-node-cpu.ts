import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { closeTimedConnections, PlacementClient } from './client.js';
import { directLoad } from './cloud.js';
import { spawnNodeServer, treeCpuNs } from './processes.js';
import { SCENARIOS } from './scenarios.js';
import { startWorkerMode, type WorkerServer } from './worker-mode.js';

const { values: args } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'flat-1000' },
    rounds: { type: 'string', default: '6' },
    per: { type: 'string', default: '10' },
    configs: { type: 'string', default: 'wrangler.toml' },
    /** Other requests to time the same way (comma-separated paths), e.g. a tiny query: what every request costs. */
    paths: { type: 'string' },
  },
});
const scenario = SCENARIOS.find((s) => s.name === args.scenario)!;
const first = scenario.measures.find((m) => m.kind === 'first')!;
const cloud = scenario.build();

interface Target {
  name: string;
  url: string;
  cpuNs(): number | null;
  stop(): Promise<void>;
}

async function startNode(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'worker-node-cpu-'));
  const db = join(dir, 'p.db');
  const { loadConfig } = await import('../src/config.js');
  const { openStore } = await import('../src/entry/node-service.js');
  const store = await openStore(loadConfig({ PLACEMENT_DB_URL: `file:${db}` }));
  await directLoad(store.client, cloud);
  store.close();
  const { child, url } = await spawnNodeServer(db, { workers: '1' });
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 200))) {
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      /* not yet */
    }
  }
  return {
    name: 'Node',
    url,
    cpuNs: () => treeCpuNs([child.pid!]),
    stop: async () => {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startWorker(config: string): Promise<Target> {
  const server: WorkerServer = await startWorkerMode(cloud, config === 'wrangler.toml' ? [] : ['--config', config]);
  return { name: `Worker (${config})`, url: server.url, cpuNs: () => server.cpuNs(), stop: () => server.stop() };
}

const targets: Target[] = [await startNode()];
for (const config of args.configs.split(',')) targets.push(await startWorker(config));
const paths = [`/allocation_candidates?${first.query}`, ...(args.paths?.split(',') ?? [])];
try {
  for (const path of paths) await timePath(path);
} finally {
  closeTimedConnections();
  for (const t of targets) await t.stop();
}

async function timePath(path: string): Promise<void> {
  const samples = targets.map(() => [] as number[]);
  const clients = targets.map((t) => new PlacementClient(t.url, 'admin', first.version, 120_000));
  // Warm: the trees read, the code optimised (the Worker's isolate boots on its first request).
  for (const client of clients) for (let k = 0; k < 15; k += 1) await client.timedGet(path, first.version);
  const loads: number[] = [];
  for (let round = 0; round < Number(args.rounds); round += 1) {
    loads.push(loadavg()[0]!);
    for (const [i, client] of clients.entries()) {
      for (let k = 0; k < Number(args.per); k += 1) {
        const before = targets[i]!.cpuNs()!;
        await client.timedGet(path, first.version);
        // The answer's last byte is read before the server's bookkeeping after it is done: let it finish.
        await new Promise((r) => setTimeout(r, 5));
        samples[i]!.push((targets[i]!.cpuNs()! - before) / 1e6);
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const node = median(samples[0]!);
  console.log(
    `${scenario.name}: ${path === paths[0] ? 'warm full answer' : path}, server CPU per answer (median of ${samples[0]!.length}), load ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
  );
  for (const [i, t] of targets.entries()) {
    const m = median(samples[i]!);
    const per = Number(args.per);
    const rounds = Array.from({ length: samples[i]!.length / per }, (_, r) => median(samples[i]!.slice(r * per, (r + 1) * per)).toFixed(1));
    console.log(`  ${t.name.padEnd(40)} ${m.toFixed(2)} ms  (${(m / node).toFixed(2)}x Node; by round ${rounds.join(' ')})`);
  }
}
