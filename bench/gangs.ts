// npm run bench:gangs [-- --arrivals 2000 --clients 8]: gangs against a
// baseline, on a cloud of 16 racks x 18 hosts x 4 GPUs (each rack an
// aggregate). The same seeded stream of arrivals (single servers and 2-16-host
// gangs, each job leaving after a while) is played twice on fresh databases
// by 8 concurrent clients, in process through the API (app.request: the whole
// HTTP stack but the socket):
//   gang      GET /ext/gang_candidates?count=N&ext_domain=aggregate, then POST /ext/gangs (retried 3 times on 409)
//   baseline  per member GET /allocation_candidates and PUT the first candidate on a host the gang does not use yet
//             (3 retries per member); a member that never fits releases the members claimed
// Printed: gangs accepted by each, partial gangs (a refused gang that left allocations, checked at the end
// and whenever a gang is refused), gangs inside one rack, overcommit (every host's usage against its
// capacity at the end), and gang_candidates latency: the first answer of the process (cold), p50/p99 of the rest under the
// 8 clients (warm, queued behind the others' requests), and p50/p99 of 60 answers one at a time after the run (warm, idle).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildNodeDeps } from '../src/entry/node-service.js';
import { mulberry32 as rng } from '../test/helpers/random.js';

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const ARRIVALS = arg('arrivals', 2000);
const CLIENTS = arg('clients', 8);
const RACKS = 16;
const HOSTS = 18;
const GPUS = 4;
const silent = { debug() {}, info() {}, warn() {}, error() {} };
const PROJECT = 'a0000000-0000-4000-8000-000000000001';
const USER = 'a0000000-0000-4000-8000-000000000002';

interface Arrival {
  /** 1: a single server; 2-16: a gang. */
  count: number;
  gpus: number;
  /** Arrival index at which the job leaves. */
  leaves: number;
}

function arrivals(): Arrival[] {
  const r = rng(36);
  const out: Arrival[] = [];
  for (let i = 0; i < ARRIVALS; i += 1) {
    const gang = r() < 0.35;
    const count = gang ? 2 + Math.floor(r() * 15) : 1;
    const gpus = gang ? [2, 4, 4][Math.floor(r() * 3)]! : [1, 1, 2, 4][Math.floor(r() * 4)]!;
    out.push({ count, gpus, leaves: i + 40 + Math.floor(r() * 200) });
  }
  return out;
}

type Allocations = Record<string, { resources: Record<string, number> }>;
type App = ReturnType<typeof createApp>;

function caller(app: App) {
  return async (method: string, path: string, body?: unknown): Promise<Response> => {
    const headers: Record<string, string> = {
      'x-auth-token': 'admin',
      'openstack-api-version': 'placement 1.39',
      accept: 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  };
}

async function buildCloud(call: ReturnType<typeof caller>): Promise<{ rackOf: Map<string, number>; hosts: string[] }> {
  const rackOf = new Map<string, number>();
  const hosts: string[] = [];
  for (let rack = 0; rack < RACKS; rack += 1) {
    const agg = `00000000-0000-4000-8000-${String(rack).padStart(12, '0')}`;
    await Promise.all(
      Array.from({ length: HOSTS }, async (_, h) => {
        const uuid = crypto.randomUUID();
        const ok = async (res: Promise<Response>) => {
          const r = await res;
          if (r.status >= 300) throw new Error(`cloud: ${r.status} ${await r.text()}`);
        };
        await ok(call('POST', '/resource_providers', { name: `r${rack}-h${h}`, uuid }));
        await ok(
          call('PUT', `/resource_providers/${uuid}/inventories`, {
            resource_provider_generation: 0,
            inventories: { VCPU: { total: 64 }, MEMORY_MB: { total: 524288 }, PGPU: { total: GPUS } },
          }),
        );
        await ok(call('PUT', `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: 1, aggregates: [agg] }));
        rackOf.set(uuid, rack);
        hosts.push(uuid);
      }),
    );
  }
  return { rackOf, hosts };
}

const resourcesOf = (gpus: number) => `resources=VCPU:${4 * gpus},MEMORY_MB:${16384 * gpus},PGPU:${gpus}`;
const member = (allocations: Allocations) => ({
  allocations,
  project_id: PROJECT,
  user_id: USER,
  consumer_generation: null,
  consumer_type: 'INSTANCE',
});

interface Outcome {
  accepted: number;
  refused: number;
  singlesAccepted: number;
  inOneRack: number;
  partial: number;
  overcommitted: number;
  latencies: number[];
  cold: number | null;
  seconds: number;
  /** Consumers of refused gangs (checked at the end: none may hold anything). */
  refusedConsumers: string[];
  /** gang_candidates one at a time after the run (no other client): warm, idle. */
  idle: number[];
}

type Strategy = 'gang' | 'baseline';

/** A gang (or single server) claimed by `strategy`: the consumers written, or null when refused. */
async function place(call: ReturnType<typeof caller>, strategy: Strategy, a: Arrival, o: Outcome): Promise<string[] | null> {
  if (strategy === 'gang' && a.count > 1) {
    for (let attempt = 0; attempt < 4; attempt += 1) {
      const started = performance.now();
      const res = await call('GET', `/ext/gang_candidates?count=${a.count}&${resourcesOf(a.gpus)}&ext_domain=aggregate&limit=1`);
      const ms = performance.now() - started;
      if (o.cold === null) o.cold = ms;
      else o.latencies.push(ms);
      const body = (await res.json()) as { gangs: { allocation_requests: { allocations: Allocations }[] }[] };
      const gang = body.gangs[0];
      if (!gang) return null;
      const members: Record<string, unknown> = {};
      for (const r of gang.allocation_requests) members[crypto.randomUUID()] = member(r.allocations);
      const claimed = await call('POST', '/ext/gangs', { members });
      if (claimed.status === 204) return Object.keys(members);
      if (claimed.status !== 409) throw new Error(`POST /ext/gangs: ${claimed.status} ${await claimed.text()}`);
      // Refused whole: none of its consumers may hold anything (checked now and at the end).
      for (const consumer of Object.keys(members)) if (await holds(call, consumer)) o.partial += 1;
      o.refusedConsumers.push(...Object.keys(members));
    }
    return null;
  }
  // One member at a time: the first candidate on a host this gang does not use yet, retried.
  const consumers: string[] = [];
  const used = new Set<string>();
  for (let m = 0; m < a.count; m += 1) {
    let placed = false;
    for (let attempt = 0; attempt < 4 && !placed; attempt += 1) {
      const res = await call('GET', `/allocation_candidates?${resourcesOf(a.gpus)}&limit=${a.count + 1}`);
      const body = (await res.json()) as { allocation_requests: { allocations: Allocations }[] };
      const first = body.allocation_requests.find((r) => !Object.keys(r.allocations).some((rp) => used.has(rp)));
      if (!first) break;
      const consumer = crypto.randomUUID();
      const put = await call('PUT', `/allocations/${consumer}`, member(first.allocations));
      if (put.status === 204) {
        consumers.push(consumer);
        for (const rp of Object.keys(first.allocations)) used.add(rp);
        placed = true;
      }
    }
    if (!placed) {
      await release(call, consumers);
      o.refusedConsumers.push(...consumers);
      return null;
    }
  }
  return consumers;
}

async function holds(call: ReturnType<typeof caller>, consumer: string): Promise<boolean> {
  const body = (await (await call('GET', `/allocations/${consumer}`)).json()) as { allocations: object };
  return Object.keys(body.allocations).length > 0;
}

async function release(call: ReturnType<typeof caller>, consumers: string[]): Promise<void> {
  for (const consumer of consumers) await call('DELETE', `/allocations/${consumer}`);
}

async function run(strategy: Strategy, stream: Arrival[]): Promise<Outcome> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gangs-'));
  const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}` }), silent);
  const app = createApp(deps);
  const call = caller(app);
  try {
    const { rackOf, hosts } = await buildCloud(call);
    const o: Outcome = {
      accepted: 0,
      refused: 0,
      singlesAccepted: 0,
      inOneRack: 0,
      partial: 0,
      overcommitted: 0,
      latencies: [],
      cold: null,
      seconds: 0,
      refusedConsumers: [],
      idle: [],
    };
    const live: { leaves: number; consumers: string[] }[] = [];
    let next = 0;
    const started = performance.now();
    const client = async () => {
      for (;;) {
        const i = next++;
        if (i >= stream.length) return;
        const a = stream[i]!;
        // Jobs due to leave, taken off the shared list before any await (the other clients share it).
        const leaving: string[] = [];
        for (let j = live.length - 1; j >= 0; j -= 1) if (live[j]!.leaves <= i) leaving.push(...live.splice(j, 1)[0]!.consumers);
        await release(call, leaving);
        const consumers = await place(call, strategy, a, o);
        if (a.count === 1) {
          if (consumers) {
            o.singlesAccepted += 1;
            live.push({ leaves: a.leaves, consumers });
          }
          continue;
        }
        if (!consumers) {
          o.refused += 1;
          continue;
        }
        o.accepted += 1;
        live.push({ leaves: a.leaves, consumers });
        const racks = new Set<number>();
        for (const consumer of consumers) {
          const body = (await (await call('GET', `/allocations/${consumer}`)).json()) as { allocations: Allocations };
          for (const rp of Object.keys(body.allocations)) racks.add(rackOf.get(rp)!);
        }
        if (racks.size === 1) o.inOneRack += 1;
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, client));
    o.seconds = (performance.now() - started) / 1000;
    for (const consumer of o.refusedConsumers) if (await holds(call, consumer)) o.partial += 1;
    if (strategy === 'gang') {
      for (let i = 0; i < 60; i += 1) {
        const a = stream[i]!;
        const started = performance.now();
        const res = await call(
          'GET',
          `/ext/gang_candidates?count=${Math.max(2, a.count)}&${resourcesOf(a.gpus)}&ext_domain=aggregate&limit=1`,
        );
        await res.text();
        o.idle.push(performance.now() - started);
      }
    }
    for (const host of hosts) {
      const [inv, use] = await Promise.all([
        call('GET', `/resource_providers/${host}/inventories`).then(
          (r) => r.json() as Promise<{ inventories: Record<string, { total: number }> }>,
        ),
        call('GET', `/resource_providers/${host}/usages`).then((r) => r.json() as Promise<{ usages: Record<string, number> }>),
      ]);
      for (const [rc, used] of Object.entries(use.usages)) if (used > inv.inventories[rc]!.total) o.overcommitted += 1;
    }
    return o;
  } finally {
    deps.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)] ?? Number.NaN;

const stream = arrivals();
const gangArrivals = stream.filter((a) => a.count > 1).length;
console.log(
  `gangs bench: ${RACKS} racks x ${HOSTS} hosts x ${GPUS} GPUs; ${ARRIVALS} arrivals (${gangArrivals} gangs of 2-16, ${ARRIVALS - gangArrivals} single servers), ${CLIENTS} concurrent clients, in process`,
);
for (const strategy of ['gang', 'baseline'] as const) {
  const o = await run(strategy, stream);
  const sorted = [...o.latencies].sort((a, b) => a - b);
  const idle = [...o.idle].sort((a, b) => a - b);
  console.log(
    `${strategy.padEnd(8)} gangs accepted ${o.accepted}/${gangArrivals} (refused ${o.refused}), singles accepted ${o.singlesAccepted}, ` +
      `inside one rack ${o.inOneRack}/${o.accepted}, partial ${o.partial}, overcommitted host classes ${o.overcommitted}, ${o.seconds.toFixed(1)} s`,
  );
  if (strategy === 'gang')
    console.log(
      `         gang_candidates ms: cold (first of the process) ${o.cold?.toFixed(1)}; warm under ${CLIENTS} clients p50 ${pct(sorted, 0.5).toFixed(1)} p99 ${pct(sorted, 0.99).toFixed(1)} (n=${sorted.length}); ` +
        `warm idle (one at a time after the run) p50 ${pct(idle, 0.5).toFixed(1)} p99 ${pct(idle, 0.99).toFixed(1)} (n=${idle.length})`,
    );
}
