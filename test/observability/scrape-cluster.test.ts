// A real `npm start` with two server processes (PLACEMENT_WORKERS=2): every
// scrape, whichever process answers it, shows the whole service's counts,
// also after a process is killed and replaced; and a real Prometheus server
// (Debian's prometheus) scrapes it with the scrape token and answers a query.
import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';
import {
  PROMETHEUS,
  PROMETHEUS_MISSING,
  PROMTOOL_MISSING,
  parseSamples,
  promtoolCheck,
  type Sample,
  sampleValue,
} from '../helpers/prometheus-text.js';
import { itWithPart } from '../helpers/parts.js';
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
/** Resident memory of a process, in bytes (/proc/PID/status). */
const residentBytes = (pid: number) => Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
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

  it("shows every process's memory, its collections and how long its event loop kept requests waiting", async () => {
    const samples = await scrape();
    const processes = [server.child.pid!, ...serverPids()];
    const resident = processes.reduce((total, pid) => total + residentBytes(pid), 0);
    const total = sampleValue(samples, 'process_resident_memory_bytes')!;
    // Summed over the primary and both server processes (read a moment apart from /proc's).
    expect(total).toBeGreaterThan(resident * 0.7);
    expect(total).toBeLessThan(resident * 1.3);
    const largest = sampleValue(samples, 'placement_process_resident_memory_max_bytes')!;
    expect(largest).toBeLessThan(total);
    expect(largest).toBeGreaterThan(total / processes.length);
    expect(sampleValue(samples, 'nodejs_heap_space_size_bytes', { space: 'new_space' })).toBeGreaterThan(0);
    expect(sampleValue(samples, 'nodejs_heap_space_size_used_bytes', { space: 'old_space' })).toBeGreaterThan(0);
    // Each process's start (the warm-up answers) has scavenged its young generation.
    expect(sampleValue(samples, 'nodejs_gc_duration_seconds_count', { kind: 'minor' })).toBeGreaterThan(0);
    // Sampled every 10 ms in each server process since it started.
    expect(sampleValue(samples, 'nodejs_eventloop_delay_seconds_count')).toBeGreaterThan(10);
  });

  itWithPart(PROMTOOL_MISSING, 'passes promtool check metrics with the runtime metrics', async () => {
    const res = await call('/metrics', { token: SCRAPE_TOKEN });
    expect(res.text).toContain('nodejs_gc_duration_seconds_bucket');
    // Beside openstack-exporter's own name, once providers exist (metrics.test.ts says why it stays).
    expect(promtoolCheck(res.text).problems.filter((p) => !p.startsWith('openstack_placement_resource_total '))).toEqual([]);
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
        // A p95 read as a dashboard reads it: the scrapes' own durations, over the service's processes.
        const [p95] = await query(
          'histogram_quantile(0.95, sum by (le) (rate(http_server_request_duration_seconds_bucket{http_route="/metrics"}[1m])))',
        );
        expect(Number(p95?.value[1])).toBeGreaterThan(0);
        expect(Number(p95?.value[1])).toBeLessThan(1);
      },
      { timeout: 90_000, interval: 500 },
    );
  }, 120_000);
});
