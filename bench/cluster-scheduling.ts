// npx tsx bench/cluster-scheduling.ts [--workers 2] [--seconds 10] [--clients 16]
//
// How node:cluster shares connections out (PLACEMENT_CLUSTER_SCHEDULING):
// 'os' (SCHED_NONE, the default since a SIGKILLed server process left
// connections hanging under round-robin) against 'round-robin'. For each, a
// fresh `node --import tsx src/entry/node.ts` cluster (warm: after 2 s of
// the same load) serves GET /resource_providers over a small cloud (50
// providers) to --clients concurrent clients for --seconds, first on
// keep-alive connections, then with a new connection per request (where the
// policy decides every request's process). Prints requests per second and
// latency percentiles. Figures compare only on the same, otherwise idle, machine.
import { request, Agent } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ADMIN_HEADERS, type Running, spawnServer, until } from '../test/lifecycle/processes.js';

const { values: args } = parseArgs({
  options: {
    workers: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '10' },
    clients: { type: 'string', default: '16' },
  },
});
const WORKERS = Number(args.workers);
const SECONDS = Number(args.seconds);
const CLIENTS = Number(args.clients);

function get(port: number, agent: Agent | false): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/resource_providers',
        agent,
        headers: { ...ADMIN_HEADERS, ...(agent ? {} : { connection: 'close' }) },
      },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

async function load(port: number, keepAlive: boolean, seconds: number): Promise<{ rps: number; p50: number; p99: number; errors: number }> {
  const agent = keepAlive ? new Agent({ keepAlive: true, maxSockets: CLIENTS }) : false;
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < end) {
        try {
          latencies.push(await get(port, agent));
        } catch {
          errors += 1;
        }
      }
    }),
  );
  if (agent) agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  return { rps: latencies.length / seconds, p50: at(0.5), p99: at(0.99), errors };
}

async function measure(policy: 'os' | 'round-robin'): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-scheduling-'));
  let server: Running | undefined;
  try {
    server = await spawnServer({
      PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`,
      PLACEMENT_WORKERS: String(WORKERS),
      PLACEMENT_CLUSTER_SCHEDULING: policy,
      LOG_LEVEL: 'debug',
    });
    const running = server;
    await until(() => running.log().split('server process listening').length - 1 >= WORKERS, 60_000);
    for (let i = 0; i < 50; i += 1) {
      await fetch(`${running.url}/resource_providers`, {
        method: 'POST',
        headers: ADMIN_HEADERS,
        body: JSON.stringify({ name: `bench-${i}` }),
      });
    }
    for (const keepAlive of [true, false]) {
      await load(running.port, keepAlive, 2);
      const r = await load(running.port, keepAlive, SECONDS);
      console.log(
        `${policy.padEnd(12)} ${(keepAlive ? 'keep-alive' : 'new conn').padEnd(11)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(1).padStart(6)} ms   p99 ${r.p99.toFixed(1).padStart(6)} ms   errors ${r.errors}`,
      );
    }
  } finally {
    if (server && server.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `${WORKERS} server processes, ${CLIENTS} clients, ${SECONDS} s per figure, ${cpus().length} cores; GET /resource_providers (50 providers)`,
);
for (const policy of ['round-robin', 'os', 'round-robin', 'os'] as const) await measure(policy);
