// npm run bench:writes [-- --url http://host:port] [--compare http://other:port]
//   [--providers 200] [--clients 10] [--claims 2000] [--version 1.38] [--limits off|on|both]
//   [--group-commit on|off|both] [--synchronous normal|full] [--rounds 1] [--warm-up 0]
//   [--base DIR] [--workers N]
//
// Write throughput, Node mode (docs/write-model.md): CLIENTS concurrent clients claim
// (PUT /allocations/{new consumer}, 1 VCPU + 256 MEMORY_MB on a random
// provider) until CLAIMS claims were sent, then delete every granted
// consumer (DELETE /allocations/{c}). Prints claims/s and deletes/s, and
// checks that the usage summed over every provider equals the claims granted
// (and is zero after the deletes). Without --url it starts a fresh local
// server on a temporary database. --compare runs the same against another
// Placement API (e.g. upstream on PostgreSQL) and prints both. --limits on
// starts the local server with project limits (PLACEMENT_LIMITS=static, a
// VCPU and a MEMORY_MB limit the run never reaches, so every claim pays for
// the guard and none is refused); both: a server without, then one with,
// alternated --rounds times (default 1), for the cost of the guard.
// --group-commit: the local server's PLACEMENT_GROUP_COMMIT (both: with and
// without, alternated each round). Before the runs it measures the disk's
// fsync floor where the database lives (4 KiB written and fdatasync'd, again
// and again for a second: the most commits per second a writer that syncs
// each commit could make) and prints claims/s against it. --warm-up N: N
// claims and their deletes on each server (this one and --compare's) before
// the measured ones, not counted: warm figures. Without it a freshly started
// server's first claims also pay for V8 compiling the write path (the cold
// figures). A local server's CPU per claim and per delete is also given per
// process (cpuPerProcess: the cluster primary, which commits every server
// process's writes with group commit on, first). A local server is measured
// once /readyz says it is ready (its warm-up done), as a deployment sends it
// clients. --base DIR: the same local server from another checkout of this
// project (e.g. main), started the same way and alternated with this one
// each round; prints the ratio of their server CPU per claim and per delete
// (this / base, means over the rounds): whether a change made a write dearer.
// --workers N: the local server's PLACEMENT_WORKERS (default: its own, one
// server process per core behind a primary).
//
// Figures are only comparable on the same, otherwise idle, machine.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import { closeSync, existsSync, fdatasyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../test/helpers/sqld.js';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    compare: { type: 'string' },
    providers: { type: 'string', default: '200' },
    clients: { type: 'string', default: '10' },
    claims: { type: 'string', default: '2000' },
    version: { type: 'string', default: '1.38' },
    token: { type: 'string', default: 'admin' },
    limits: { type: 'string', default: 'off' },
    rounds: { type: 'string', default: '1' },
    'group-commit': { type: 'string', default: 'on' },
    synchronous: { type: 'string', default: 'normal' },
    'warm-up': { type: 'string', default: '0' },
    base: { type: 'string' },
    workers: { type: 'string' },
  },
});
if (!['off', 'on', 'both'].includes(args['group-commit']!)) throw new Error('--group-commit is off, on or both');
if (!['normal', 'full'].includes(args.synchronous!)) throw new Error('--synchronous is normal or full');
if (!['off', 'on', 'both'].includes(args.limits!)) throw new Error('--limits is off, on or both');
/** Limits every claim is checked against and none reaches (the project claims 1 VCPU and 256 MEMORY_MB per claim). */
const UNREACHED_LIMITS = JSON.stringify({ registered: { 'class:VCPU': 1_000_000, 'class:MEMORY_MB': 1_000_000_000 } });
const PROVIDERS = Number(args.providers);
const CLIENTS = Number(args.clients);
const CLAIMS = Number(args.claims);
const VERSION = args.version!;
const WARM_UP = Number(args['warm-up']);
const VCPU_PER_PROVIDER = 64;

function headers(): Record<string, string> {
  return {
    'x-auth-token': args.token!,
    'content-type': 'application/json',
    accept: 'application/json',
    'openstack-api-version': `placement ${VERSION}`,
  };
}

// node:http on keep-alive connections, one per client loop: the same
// requests as fetch() sends, for a fraction of fetch's client CPU, which on a
// shared machine is CPU the server under test does not get.
const agents = {
  'http:': new http.Agent({ keepAlive: true, maxSockets: CLIENTS }),
  'https:': new https.Agent({ keepAlive: true, maxSockets: CLIENTS }),
};

function api(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const url = new URL(`${base}${path}`);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const send = url.protocol === 'https:' ? https.request : http.request;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method,
        agent: agents[url.protocol as keyof typeof agents],
        headers: { ...headers(), ...(payload ? { 'content-length': String(payload.length) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, json: text ? (JSON.parse(text) as unknown) : null });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * CPU milliseconds (user + system) used so far by `pid` and each of its
 * descendants (the server processes of a PLACEMENT_WORKERS cluster), by
 * pid, from /proc. CPU per request holds steady on a busy machine where
 * requests per second do not. Undefined where /proc is not there.
 */
function processTreeCpuMs(pid: number, into = new Map<number, number>()): Map<number, number> | undefined {
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return undefined;
  const ticksPerMs = 100 / 1000; // USER_HZ is 100 on Linux
  try {
    // Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
    const fields = readFileSync(stat, 'utf8').split(') ')[1]!.split(' ');
    into.set(pid, (Number(fields[11]) + Number(fields[12])) / ticksPerMs);
    for (const task of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean)) {
      processTreeCpuMs(Number(task), into);
    }
  } catch {
    return into.size > 0 ? into : undefined; // exited meanwhile
  }
  return into;
}

const totalMs = (byPid: Map<number, number> | undefined): number | undefined =>
  byPid === undefined ? undefined : [...byPid.values()].reduce((a, b) => a + b, 0);

/** Each process's CPU per operation between two readings, the root (a cluster's primary) first: "primary + server + server". */
function perProcess(before: Map<number, number> | undefined, after: Map<number, number> | undefined, count: number): string | undefined {
  if (!before || !after || count === 0 || after.size < 2) return undefined;
  return [...after].map(([pid, ms]) => ((ms - (before.get(pid) ?? 0)) / count).toFixed(2)).join(' + ');
}

/**
 * Synced writes per second on the file system under tmpdir() (where the
 * local server's database goes): 4 KiB written at the same place and
 * fdatasync'd, for `seconds`. A writer that syncs every commit makes at most
 * this many commits per second.
 */
function fsyncFloor(seconds = 1): { fsyncsPerSecond: number; msPerFsync: number } {
  const dir = mkdtempSync(join(tmpdir(), 'placement-bench-fsync-'));
  const fd = openSync(join(dir, 'probe'), 'w');
  const page = Buffer.alloc(4096, 7);
  try {
    let count = 0;
    const started = performance.now();
    while (performance.now() - started < seconds * 1000) {
      writeSync(fd, page, 0, page.length, 0);
      fdatasyncSync(fd);
      count += 1;
    }
    const elapsed = (performance.now() - started) / 1000;
    return { fsyncsPerSecond: Math.round(count / elapsed), msPerFsync: Number(((elapsed * 1000) / count).toFixed(3)) };
  } finally {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `checkout`: the project's directory whose server is started (default: this one). */
async function startLocalServer(
  limits = false,
  groupCommit = true,
  checkout?: string,
): Promise<{ url: string; pid: number | undefined; stop: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'placement-bench-writes-'));
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'src/entry/node.ts'], {
    ...(checkout ? { cwd: checkout } : {}),
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`,
      LOG_LEVEL: 'warn',
      PLACEMENT_GROUP_COMMIT: String(groupCommit),
      PLACEMENT_DB_SYNCHRONOUS: args.synchronous!,
      ...(limits ? { PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: UNREACHED_LIMITS } : {}),
      ...(args.workers ? { PLACEMENT_WORKERS: args.workers } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  const stop = () => {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready, as systemd and a load balancer wait for it: its warm-up done.
  for (let i = 0; i < 1200; i += 1) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return { url, pid: child.pid, stop };
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  stop();
  throw new Error('server did not start');
}

/** Runs `task(i)` for i in [0, count) on `workers` concurrent loops. */
async function pool(count: number, workers: number, task: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (next < count) await task(next++);
    }),
  );
  return (performance.now() - started) / 1000;
}

interface Result {
  claimsPerSecond: number;
  deletesPerSecond: number;
  /** Server CPU per claim and per delete (local server only). */
  cpuMsPerClaim?: number;
  cpuMsPerDelete?: number;
  /** The same per process, the primary first (claims / deletes), where there are several. */
  cpuPerProcess: string;
  /** This client's own CPU per claim: on a shared machine it is CPU the server does not get. */
  clientCpuMsPerClaim: number;
  granted: number;
  refused: number;
  usageAfterClaims: number;
  usageAfterDeletes: number;
  ok: boolean;
}

async function totalVcpuUsage(base: string, providers: string[]): Promise<number> {
  let total = 0;
  for (const uuid of providers) {
    const { json } = await api(base, 'GET', `/resource_providers/${uuid}/usages`);
    total += (json as { usages: Record<string, number> }).usages.VCPU ?? 0;
  }
  return total;
}

async function scenario(base: string, serverPid?: number): Promise<Result> {
  const cpu = () => (serverPid === undefined ? undefined : processTreeCpuMs(serverPid));
  const cpuTotal = (byPid: Map<number, number> | undefined) => totalMs(byPid);
  const run = crypto.randomUUID().slice(0, 8);
  const providers: string[] = [];
  for (let i = 0; i < PROVIDERS; i += 1) {
    const uuid = crypto.randomUUID();
    const made = await api(base, 'POST', '/resource_providers', { name: `bench-w-${run}-${i}`, uuid });
    if (made.status !== 200 && made.status !== 201) throw new Error(`provider create: ${made.status} ${JSON.stringify(made.json)}`);
    const inv = await api(base, 'PUT', `/resource_providers/${uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: VCPU_PER_PROVIDER }, MEMORY_MB: { total: VCPU_PER_PROVIDER * 1024 } },
    });
    if (inv.status !== 200) throw new Error(`inventory: ${inv.status} ${JSON.stringify(inv.json)}`);
    providers.push(uuid);
  }
  const project = crypto.randomUUID();
  const user = crypto.randomUUID();
  const claim = async (i: number): Promise<{ consumer: string; status: number }> => {
    const consumer = crypto.randomUUID();
    const rp = providers[(i * 7919) % providers.length]!;
    const body: Record<string, unknown> = {
      allocations: { [rp]: { resources: { VCPU: 1, MEMORY_MB: 256 } } },
      project_id: project,
      user_id: user,
    };
    if (VERSION >= '1.28') body.consumer_generation = null;
    if (VERSION >= '1.38') body.consumer_type = 'INSTANCE';
    const res = await api(base, 'PUT', `/allocations/${consumer}`, body);
    if (res.status !== 204 && res.status !== 409) throw new Error(`claim: ${res.status} ${JSON.stringify(res.json)}`);
    return { consumer, status: res.status };
  };
  const release = async (consumer: string): Promise<void> => {
    const res = await api(base, 'DELETE', `/allocations/${consumer}`);
    if (res.status !== 204) throw new Error(`delete: ${res.status} ${JSON.stringify(res.json)}`);
  };
  if (WARM_UP > 0) {
    const warmed: string[] = [];
    await pool(WARM_UP, CLIENTS, async (i) => {
      const { consumer, status } = await claim(i);
      if (status === 204) warmed.push(consumer);
    });
    await pool(warmed.length, CLIENTS, (i) => release(warmed[i]!));
  }
  const granted: string[] = [];
  let refused = 0;
  const cpuBeforeClaims = cpu();
  const clientBeforeClaims = process.cpuUsage();
  const claimSeconds = await pool(CLAIMS, CLIENTS, async (i) => {
    const { consumer, status } = await claim(i);
    if (status === 204) granted.push(consumer);
    else refused += 1;
  });
  const cpuAfterClaims = cpu();
  const clientClaims = process.cpuUsage(clientBeforeClaims);
  const usageAfterClaims = await totalVcpuUsage(base, providers);
  const cpuBeforeDeletes = cpu();
  const deleteSeconds = await pool(granted.length, CLIENTS, (i) => release(granted[i]!));
  const cpuAfterDeletes = cpu();
  const usageAfterDeletes = await totalVcpuUsage(base, providers);
  const perOperation = (before: number | undefined, after: number | undefined, count: number) =>
    before === undefined || after === undefined || count === 0 ? undefined : Number(((after - before) / count).toFixed(2));
  const perCpu = (before: Map<number, number> | undefined, after: Map<number, number> | undefined, count: number) =>
    perOperation(cpuTotal(before), cpuTotal(after), count);
  for (const uuid of providers) await api(base, 'DELETE', `/resource_providers/${uuid}`);
  return {
    claimsPerSecond: Math.round(CLAIMS / claimSeconds),
    deletesPerSecond: Math.round(granted.length / deleteSeconds),
    cpuMsPerClaim: perCpu(cpuBeforeClaims, cpuAfterClaims, CLAIMS),
    cpuMsPerDelete: perCpu(cpuBeforeDeletes, cpuAfterDeletes, granted.length),
    cpuPerProcess: [perProcess(cpuBeforeClaims, cpuAfterClaims, CLAIMS), perProcess(cpuBeforeDeletes, cpuAfterDeletes, granted.length)]
      .filter((split) => split !== undefined)
      .join(' / '),
    clientCpuMsPerClaim: perOperation(0, (clientClaims.user + clientClaims.system) / 1000, CLAIMS)!,
    granted: granted.length,
    refused,
    usageAfterClaims,
    usageAfterDeletes,
    ok: usageAfterClaims === granted.length && usageAfterDeletes === 0,
  };
}

async function localRows(): Promise<Record<string, Result & { url: string }>> {
  const rows: Record<string, Result & { url: string }> = {};
  const kinds = args.limits === 'both' ? [false, true] : [args.limits === 'on'];
  const grouping = args['group-commit'] === 'both' ? [true, false] : [args['group-commit'] === 'on'];
  const checkouts = args.base ? [undefined, args.base] : [undefined];
  for (let round = 1; round <= Number(args.rounds); round += 1) {
    for (const limits of kinds) {
      for (const groupCommit of grouping) {
        for (const checkout of checkouts) {
          const server = await startLocalServer(limits, groupCommit, checkout);
          try {
            const name = `${checkout ? 'base, ' : ''}${limits ? 'limits on' : 'limits off'}, group commit ${groupCommit ? 'on' : 'off'}${Number(args.rounds) > 1 ? ` #${round}` : ''}`;
            rows[name] = { url: server.url, ...(await scenario(server.url, server.pid)) };
          } finally {
            server.stop();
          }
        }
      }
    }
  }
  return rows;
}

/** This checkout's server CPU per claim and per delete against --base's: the ratio of their means over the rounds. */
function baseRatios(rows: Record<string, Result>): string | undefined {
  if (!args.base) return undefined;
  const mean = (base: boolean, pick: (r: Result) => number | undefined) => {
    const values = Object.entries(rows)
      .filter(([name]) => name.startsWith('base, ') === base && name !== 'compare')
      .map(([, r]) => pick(r))
      .filter((v) => v !== undefined);
    return values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0) / values.length;
  };
  const ratio = (pick: (r: Result) => number | undefined) => (mean(false, pick) / mean(true, pick)).toFixed(3);
  return `server CPU this / base (${args.base}), means of ${args.rounds} alternated rounds: per claim ${ratio((r) => r.cpuMsPerClaim)}, per delete ${ratio((r) => r.cpuMsPerDelete)}`;
}

try {
  console.log(
    `write throughput: ${CLIENTS} clients, ${CLAIMS} claims then deletes, ${PROVIDERS} providers, placement ${VERSION}, synchronous=${args.synchronous}, ${WARM_UP > 0 ? `warm (${WARM_UP} claims and deletes first, not counted)` : 'cold (freshly started servers)'}`,
  );
  const floorBefore = args.url ? undefined : fsyncFloor();
  const rows: Record<string, Result & { url: string }> = args.url
    ? { this: { url: args.url, ...(await scenario(args.url)) } }
    : await localRows();
  if (args.compare) rows.compare = { url: args.compare, ...(await scenario(args.compare)) };
  const floorAfter = args.url ? undefined : fsyncFloor();
  if (floorBefore && floorAfter) {
    const floor = Math.round((floorBefore.fsyncsPerSecond + floorAfter.fsyncsPerSecond) / 2);
    console.log(
      `fsync floor under ${tmpdir()}: ${floorBefore.fsyncsPerSecond} / ${floorAfter.fsyncsPerSecond} synced 4 KiB writes per second (before / after the runs; ${floorBefore.msPerFsync} / ${floorAfter.msPerFsync} ms each)`,
    );
    for (const row of Object.values(rows) as (Result & { claimsPerFsync?: number })[])
      row.claimsPerFsync = Number((row.claimsPerSecond / floor).toFixed(2));
  }
  console.table(rows);
  const ratios = baseRatios(rows);
  if (ratios) console.log(ratios);
  if (Object.values(rows).some((r) => !r.ok)) {
    console.error('usage does not equal the claims granted');
    process.exitCode = 1;
  }
} finally {
  for (const agent of Object.values(agents)) agent.destroy();
}
