// Logs: one JSON access line per request (ids, the caller's global request
// id as oslo keeps it, route template, status, duration, bytes, caller), the
// level it is written at, a timestamp on every line, and a real server's
// start (configuration without secrets) and stop lines.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { consoleLogger, type Logger } from '../../src/deps.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { configSummary, REDACTED, redactUrl } from '../../src/observability/config-summary.js';
import { startServer } from '../helpers/node-server.js';

interface Line {
  level: string;
  msg: string;
  extra: Record<string, unknown>;
}

const UUID = '5e8ebc3c-52b5-4cfd-9e37-1c2a3a2b5b10';
const GLOBAL_ID = 'req-0f8fad5b-d9cb-469f-a165-70867728950e';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'placement-log-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function loggedApp(env: Record<string, string> = {}) {
  const lines: Line[] = [];
  const at =
    (level: string) =>
    (msg: string, extra: Record<string, unknown> = {}) =>
      lines.push({ level, msg, extra });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
  const config = loadConfig({ PLACEMENT_DB_URL: `file:${join(dir, `${crypto.randomUUID()}.db`)}`, ...env });
  const deps = await buildNodeDeps(config, log);
  const app = createApp(deps);
  /** The access lines, once `n` have been written (the bytes of a body without content-length are counted in the background). */
  const accessLines = async (n: number) => {
    // vi.waitFor gives up after 1 s by default: too short for a loaded machine.
    await vi.waitFor(() => expect(lines.filter((l) => l.msg === 'request').length).toBeGreaterThanOrEqual(n), { timeout: 20_000 });
    return lines.filter((l) => l.msg === 'request');
  };
  return { app, lines, accessLines, close: () => deps.store.close() };
}

describe('access lines', () => {
  it('names the request, its caller, route template, status, duration and bytes', async () => {
    const t = await loggedApp();
    const res = await t.app.request(`/resource_providers/${UUID}`, {
      headers: { 'x-auth-token': 'alice:p1', 'x-roles': 'admin', 'x-openstack-request-id': GLOBAL_ID },
    });
    expect(res.status).toBe(404);
    const body = await res.arrayBuffer();
    const [line] = await t.accessLines(1);
    expect(line!.level).toBe('info');
    expect(line!.extra).toMatchObject({
      request_id: res.headers.get('x-openstack-request-id'),
      global_request_id: GLOBAL_ID,
      method: 'GET',
      route: '/resource_providers/{uuid}',
      path: `/resource_providers/${UUID}`,
      status: 404,
      bytes: body.byteLength,
      user_id: 'alice',
      project_id: 'p1',
      microversion: 'placement 1.0',
    });
    expect(line!.extra.duration_ms).toEqual(expect.any(Number));
    // The local id is ours, never the caller's.
    expect(res.headers.get('x-openstack-request-id')).not.toBe(GLOBAL_ID);
    t.close();
  });

  it("logs refused requests too (401, 406), and drops a caller's id that is not req-<uuid>", async () => {
    const t = await loggedApp();
    await t.app.request('/resource_providers', { headers: { 'x-openstack-request-id': 'req-not-a-uuid' } });
    await t.app.request('/accelerator/v2/accelerator_requests', {
      headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'accelerator 9.9', 'x-openstack-request-id': `${GLOBAL_ID}x` },
    });
    const [unauthorized, unacceptable] = await t.accessLines(2);
    expect(unauthorized!.extra).toMatchObject({ status: 401, route: '/resource_providers', global_request_id: null, user_id: null });
    expect(unacceptable!.extra).toMatchObject({
      status: 406,
      route: '/accelerator/v2/accelerator_requests',
      global_request_id: null,
      // Refused before authentication (the microversion is checked first): no caller known.
      user_id: null,
    });
    t.close();
  });

  it('is written at PLACEMENT_ACCESS_LOG (debug) or not at all (off)', async () => {
    const debug = await loggedApp({ PLACEMENT_ACCESS_LOG: 'debug', LOG_LEVEL: 'debug' });
    await debug.app.request('/healthz');
    const [line] = await debug.accessLines(1);
    expect(line!.level).toBe('debug');
    debug.close();

    const off = await loggedApp({ PLACEMENT_ACCESS_LOG: 'off' });
    await off.app.request('/healthz');
    await off.app.request('/resource_providers', { headers: { 'x-auth-token': 'admin' } });
    await new Promise((r) => setTimeout(r, 50));
    expect(off.lines.filter((l) => l.msg === 'request')).toEqual([]);
    off.close();
  });

  it('leaves out the paths of PLACEMENT_ACCESS_LOG_EXCLUDE (probes, scrapes), and only those', async () => {
    const quiet = await loggedApp({ PLACEMENT_ACCESS_LOG_EXCLUDE: '/healthz, /readyz,/metrics' });
    for (const path of ['/healthz', '/readyz', '/metrics', '/metrics?x=1', '/resource_providers']) {
      await (await quiet.app.request(path, { headers: { 'x-auth-token': 'admin' } })).arrayBuffer();
    }
    const [line, ...more] = await quiet.accessLines(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(more).toEqual([]);
    expect(line!.extra.path).toBe('/resource_providers');
    quiet.close();
    expect(() => loadConfig({ PLACEMENT_ACCESS_LOG_EXCLUDE: 'healthz' })).toThrow(/PLACEMENT_ACCESS_LOG_EXCLUDE.*starting with \//);
  });
});

describe('log lines', () => {
  afterEach(() => vi.restoreAllMocks());

  it('are JSON with an ISO timestamp, at or above LOG_LEVEL', () => {
    const written: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((text: string | Uint8Array) => written.push(String(text)) > 0);
    const log = consoleLogger('info');
    log.debug('hidden');
    log.info('shown', { n: 1 });
    expect(written).toHaveLength(1);
    expect(written[0]!.endsWith('}\n')).toBe(true);
    const line = JSON.parse(written[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ level: 'info', msg: 'shown', n: 1 });
    expect(new Date(String(line.time)).toISOString()).toBe(line.time);
  });

  it('summarise the configuration without its secrets', () => {
    const config = loadConfig({
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: '{"s3cret": {"roles": ["admin"]}}',
      PLACEMENT_DB_URL: 'libsql://user:dbpass@db.example?authToken=tok123&tls=1',
      PLACEMENT_DB_AUTH_TOKEN: 'dbtoken',
      NOVA_URL: 'http://nova:novapass@127.0.0.1:8774/v2.1',
      NOVA_TOKEN: 'novatoken',
      PLACEMENT_METRICS_TOKEN: 'scrapetoken',
    });
    const summary = configSummary(config);
    const text = JSON.stringify(summary);
    for (const secret of ['s3cret', 'dbpass', 'tok123', 'dbtoken', 'novapass', 'novatoken', 'scrapetoken'])
      expect(text).not.toContain(secret);
    expect(summary).toMatchObject({
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: REDACTED,
      PLACEMENT_DB_URL: `libsql://${REDACTED}@db.example?authToken=${REDACTED}&tls=1`,
      NOVA_URL: `http://${REDACTED}@127.0.0.1:8774/v2.1`,
      PORT: 8778,
      // A flag named after tokens is no secret.
      ARQ_ALLOW_BIND_WITHOUT_SERVICE_TOKEN: false,
    });
    expect(redactUrl('file:./data/placement.db')).toBe('file:./data/placement.db');
  });
});

describe('a Node server', () => {
  it('logs its start with the configuration, each request, and its stop; every line JSON with a timestamp, no secret', async () => {
    const server = await startServer(`file:${join(dir, 'server.db')}`, {
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: JSON.stringify({ 'admin-s3cret': { roles: ['admin'], user_id: 'ops', project_id: 'ops-p' } }),
      PLACEMENT_METRICS_TOKEN: 'scrape-s3cret',
      NOVA_TOKEN: 'nova-s3cret',
      PLACEMENT_WORKERS: '1',
    });
    let log = '';
    server.child.stderr!.on('data', (chunk: string) => {
      log += chunk;
    });
    try {
      const res = await fetch(`${server.url}/resource_providers`, {
        headers: { 'x-auth-token': 'admin-s3cret', 'x-openstack-request-id': GLOBAL_ID },
      });
      const body = await res.arrayBuffer();
      await vi.waitFor(() => expect(log).toContain('"msg":"request"'), { timeout: 20_000 });
      await server.stop();
      const lines = log
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      for (const line of lines) expect(new Date(String(line.time)).toISOString()).toBe(line.time);
      expect(log).not.toMatch(/s3cret/);
      const access = lines.find((l) => l.msg === 'request')!;
      expect(access).toMatchObject({
        global_request_id: GLOBAL_ID,
        request_id: res.headers.get('x-openstack-request-id'),
        route: '/resource_providers',
        status: 200,
        bytes: body.byteLength,
        user_id: 'ops',
        project_id: 'ops-p',
      });
      expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['placement-edge stopping', 'placement-edge stopped']));
    } finally {
      await server.stop();
    }
  }, 90_000); // a server start (tsx, seconds of CPU): 10 s at load 12 against the default 30 s

  it('logs one short start line, then the configuration it starts with', async () => {
    const server = await startServer(`file:${join(dir, 'start.db')}`, { PLACEMENT_WORKERS: '1', NOVA_TOKEN: 'nova-s3cret' });
    await server.stop();
    // Both came before the listening line the helper waited for: first the short line, then the settings in force.
    const lines = server.startLog.split('\n').filter((l) => l.startsWith('{'));
    const first = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(first).toMatchObject({
      msg: 'placement-edge starting',
      processes: 1,
      auth: 'noauth2',
      address: expect.stringMatching(/^127\.0\.0\.1:/),
    });
    expect(lines[0]!.length).toBeLessThan(300);
    const configuration = JSON.parse(lines[1]!) as { msg: string; config: Record<string, unknown> };
    expect(configuration.msg).toBe('placement-edge configuration');
    expect(configuration.config).toMatchObject({ PLACEMENT_WORKERS: 1, NOVA_TOKEN: REDACTED, PLACEMENT_ACCESS_LOG: 'info' });
  }, 90_000);
});
