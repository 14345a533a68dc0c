// A real `npm start` with two server processes (PLACEMENT_WORKERS=2): every
// scrape, whichever process answers it, shows the whole service's counts,
// also after a process is killed and replaced; and a real Prometheus server
// (Debian's prometheus) scrapes it with the scrape token and answers a query.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';
import { PROMETHEUS, PROMETHEUS_MISSING, parseSamples, type Sample, sampleValue } from '../helpers/prometheus-text.js';
import { freePort } from '../helpers/sqld.js';

const WORKERS = 2;
const TOKEN = 'admin-tok';
const SCRAPE_TOKEN = 'scrape-tok';
const UUID = '5e8ebc3c-52b5-4cfd-9e37-1c2a3a2b5b10';

let dir: string;
let server: ServerProcess;
let log = '';

/** One request on a connection of its own, so the primary's round robin hands it to the next server process. */
function call(path: string, opts: { method?: string; token?: string; body?: unknown } = {}): Promise<{ status: number; text: string }> {
  const url = new URL(path, server.url);
  const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: opts.method ?? 'GET',
        agent: false,
        headers: {
          'x-auth-token': opts.token ?? TOKEN,
          'openstack-api-version': 'placement 1.39',
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const scrape = async (): Promise<Sample[]> => {
  const res = await call('/metrics', { token: SCRAPE_TOKEN });
  expect(res.status).toBe(200);
  return parseSamples(res.text);
};
const listed = (s: Sample[]) =>
  sampleValue(s, 'http_server_request_duration_seconds_count', {
    http_request_method: 'GET',
    http_route: '/resource_providers',
    http_response_status_code: '200',
  });
const serverPids = () => [...log.matchAll(/"msg":"server process listening"[^\n]*"pid":(\d+)/g)].map((m) => Number(m[1]));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'placement-scrape-'));
  server = await startServer(`file:${join(dir, 'placement.db')}`, {
    PLACEMENT_WORKERS: String(WORKERS),
    LOG_LEVEL: 'debug',
    PLACEMENT_ACCESS_LOG: 'off',
    PLACEMENT_AUTH_STRATEGY: 'token',
    PLACEMENT_AUTH_TOKENS: JSON.stringify({ [TOKEN]: { roles: ['admin'], project_id: 'ops' } }),
    PLACEMENT_METRICS_TOKEN: SCRAPE_TOKEN,
  });
  log = server.startLog;
  server.child.stderr!.on('data', (chunk: string) => {
    log += chunk;
  });
  await vi.waitFor(() => expect(serverPids()).toHaveLength(WORKERS), { timeout: 150_000, interval: 200 });
}, 180_000);
afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('a cluster of server processes', () => {
  it('shows the whole service in every scrape, whichever process answers', async () => {
    for (let i = 0; i < 30; i += 1) expect((await call('/resource_providers')).status).toBe(200);
    for (let i = 0; i < 6; i += 1) {
      const samples = await scrape();
      expect(listed(samples)).toBe(30);
      expect(sampleValue(samples, 'placement_metrics_processes')).toBe(WORKERS + 1);
    }
  });

  it('keeps counting what a killed process had counted once it is replaced', async () => {
    await scrape(); // the primary holds every process's latest snapshot
    const victim = serverPids()[0]!;
    process.kill(victim, 'SIGKILL');
    await vi.waitFor(() => expect(serverPids()).toHaveLength(WORKERS + 1), { timeout: 150_000, interval: 200 });
    await vi.waitFor(
      async () => {
        const samples = await scrape();
        expect(sampleValue(samples, 'placement_metrics_processes')).toBe(WORKERS + 1);
        expect(listed(samples)).toBe(30);
      },
      { timeout: 30_000, interval: 500 },
    );
  }, 200_000);
});

describeWithPart(PROMETHEUS_MISSING, 'a real Prometheus server', () => {
  let prometheus: ChildProcess | undefined;
  afterAll(() => {
    prometheus?.kill('SIGKILL');
  });

  it('scrapes the service with the scrape token and answers queries on its metrics', async () => {
    expect((await call('/resource_providers', { method: 'POST', body: { name: 'cn-prom', uuid: UUID } })).status).toBe(200);
    const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 24, allocation_ratio: 2 } } };
    expect((await call(`/resource_providers/${UUID}/inventories`, { method: 'PUT', body: inventory })).status).toBe(200);

    const port = await freePort();
    const target = new URL(server.url).host;
    writeFileSync(join(dir, 'scrape-token'), SCRAPE_TOKEN);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        'scrape_configs:',
        '  - job_name: placement',
        '    metrics_path: /metrics',
        '    authorization:',
        `      credentials_file: ${join(dir, 'scrape-token')}`,
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    );
    prometheus = spawn(
      PROMETHEUS,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: 'ignore' },
    );
    const query = async (promql: string) => {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`);
      const body = (await res.json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      return body.data.result;
    };
    await vi.waitFor(
      async () => {
        const [up] = await query('up{job="placement"}');
        expect(up?.value[1]).toBe('1');
        const [total] = await query('openstack_placement_resource_total{hostname="cn-prom",resourcetype="VCPU"}');
        expect(total?.value[1]).toBe('24');
        const [ratio] = await query('openstack_placement_resource_allocation_ratio{hostname="cn-prom"}');
        expect(ratio?.value[1]).toBe('2');
        // openstack-exporter's liveness gauge, what its dashboards discover the service by.
        const [live] = await query('openstack_placement_up{job="placement"}');
        expect(live?.value[1]).toBe('1');
        const [listedByPrometheus] = await query(
          'sum(http_server_request_duration_seconds_count{http_route="/resource_providers",http_request_method="GET"})',
        );
        expect(Number(listedByPrometheus?.value[1])).toBeGreaterThanOrEqual(30);
      },
      { timeout: 90_000, interval: 500 },
    );
  }, 120_000);
});
