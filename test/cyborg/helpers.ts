// Cyborg test fixtures: an app with an injected clock and Nova fetch, a
// placement tree for one compute host with an FPGA child, and the agent
// report that gives that child a deployable with attach handles.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startNodeJobs, type NodeJobs } from '../../src/jobs/node-runner.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

export interface CyborgTestApp extends TestApp {
  jobs: NodeJobs;
  /** Advances the injected clock. */
  tick(ms: number): void;
  /** JSON request against /accelerator/v2 as admin (or the given token/roles). */
  acc(method: string, path: string, opts?: { body?: unknown; version?: string; headers?: Record<string, string> }): Promise<Response>;
}

export async function makeCyborgApp(env: Record<string, string> = {}): Promise<CyborgTestApp> {
  const t = await makeTestApp({ NOVA_TOKEN: 'nova-secret', ...env });
  let nowMs = Date.parse('2026-01-01T00:00:00Z');
  t.deps.clock = () => new Date(nowMs);
  const jobs = startNodeJobs(t.deps, { timers: false });
  return {
    ...t,
    jobs,
    tick(ms) {
      nowMs += ms;
    },
    acc(method, path, opts = {}) {
      const headers: Record<string, string> = {
        'x-auth-token': 'admin',
        'openstack-api-version': `accelerator ${opts.version ?? '2.0'}`,
        ...opts.headers,
      };
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['content-type'] = 'application/json';
      }
      return Promise.resolve(t.app.request(`/accelerator/v2${path}`, { method, headers, body }));
    },
    close() {
      jobs.stop();
      t.close();
    },
  };
}

export const HOST = 'compute-0.example';
export const ROOT_RP = '11111111-1111-4111-8111-111111111111';
export const FPGA_RP = '22222222-2222-4222-8222-222222222222';

/** Placement: host root + FPGA child (FPGA x total, CUSTOM_FPGA_A trait). Agent: deployable with `handles` PCI functions. */
export async function seedHost(t: Pick<CyborgTestApp, 'call' | 'acc'>, handles = 2, opts: { bitstreamId?: string } = {}): Promise<void> {
  const ok = async (res: Promise<Response>) => {
    const r = await res;
    if (r.status >= 300) throw new Error(`seed failed: ${r.status} ${await r.text()}`);
    return r;
  };
  await ok(t.call('POST', '/resource_providers', { body: { name: HOST, uuid: ROOT_RP } }));
  await ok(t.call('POST', '/resource_providers', { body: { name: `${HOST}_FPGA`, uuid: FPGA_RP, parent_provider_uuid: ROOT_RP } }));
  await ok(
    t.call('PUT', `/resource_providers/${FPGA_RP}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { FPGA: { total: handles } } },
    }),
  );
  await ok(t.call('PUT', '/traits/CUSTOM_FPGA_A'));
  await ok(
    t.call('PUT', `/resource_providers/${FPGA_RP}/traits`, { body: { resource_provider_generation: 1, traits: ['CUSTOM_FPGA_A'] } }),
  );
  await ok(t.acc('PUT', `/hosts/${HOST}/devices`, { body: fpgaHostReport(HOST, FPGA_RP, handles, opts.bitstreamId ?? null) }));
}

/**
 * A host agent's device report: one Intel FPGA card (0000:0c:00.0) whose
 * deployable on provider `rpUuid` has `handles` PCI functions.
 */
export function fpgaHostReport(host: string, rpUuid: string, handles: number, bitstreamId: string | null = null) {
  return {
    devices: [
      {
        key: '0000:0c:00.0',
        type: 'FPGA',
        vendor: '0x8086',
        model: 'arria10',
        deployables: [
          {
            name: `${host}_FPGA`,
            num_accelerators: handles,
            rp_uuid: rpUuid,
            driver_name: 'intel',
            bitstream_id: bitstreamId,
            attach_handles: Array.from({ length: handles }, (_, i) => ({
              type: 'PCI',
              info: { domain: '0000', bus: '0c', device: (i >> 3).toString(16).padStart(2, '0'), function: String(i & 7) },
            })),
          },
        ],
      },
    ],
  };
}

export interface NovaCall {
  instance: string;
  events: { name: string; server_uuid: string; tag: string; status: string }[];
  headers: Record<string, string | string[] | undefined>;
}

/** A real HTTP server playing Nova's os-server-external-events. */
export async function startFakeNova(): Promise<{ url: string; calls: NovaCall[]; close(): Promise<void> }> {
  const calls: NovaCall[] = [];
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let data = '';
      req.on('data', (chunk: Buffer) => {
        data += chunk.toString();
      });
      req.on('end', () => resolve(data));
    });
  const server: Server = createServer((req, res) => {
    void read(req).then((text) => {
      if (req.method !== 'POST' || req.url !== '/v2.1/os-server-external-events') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(text) as { events: NovaCall['events'] };
      calls.push({ instance: body.events[0]!.server_uuid, events: body.events, headers: req.headers });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ events: body.events.map((e) => ({ ...e, code: 200 })) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v2.1`,
    calls,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export const bindBody = (arqUuid: string, instance: string, rp = FPGA_RP, host = HOST) => ({
  [arqUuid]: [
    { path: '/hostname', op: 'add', value: host },
    { path: '/device_rp_uuid', op: 'add', value: rp },
    { path: '/instance_uuid', op: 'add', value: instance },
  ],
});

export const fpgaProfile = (name = 'fpga-dp1', group: Record<string, string> = {}) => [
  {
    name,
    groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_A': 'required', ...group }],
  },
];
