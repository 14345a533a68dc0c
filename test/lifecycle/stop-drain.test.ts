// SIGTERM/SIGINT stop the service without cutting a request off: it stops
// accepting at once, closes idle keep-alive connections, lets the request in
// flight finish (answered with Connection: close) and then exits 0, leaving
// no process and nothing listening; past PLACEMENT_SHUTDOWN_GRACE_MS it cuts
// what is left. Real processes: the entry as `npm start` runs it, and npm.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_HEADERS,
  accepting,
  descendants,
  isAlive,
  type RawExchange,
  type Running,
  rawConnection,
  spawnServer,
  until,
} from './processes.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'placement-stop-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const head = (method: string, path: string, extra: Record<string, string | number>) =>
  `${method} ${path} HTTP/1.1\r\nhost: localhost\r\n${Object.entries({ ...ADMIN_HEADERS, ...extra })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

/**
 * Waits until the server holds the request of `exchange` (sent with `expect: 100-continue`):
 * Node answers "100 Continue" as it hands the request to the service, so from then on the
 * request is in flight, however loaded the machine (a fixed wait was not enough at load 18).
 */
async function inFlight(exchange: RawExchange): Promise<void> {
  expect(await until(() => exchange.received().includes('100 Continue'), 20_000)).toBe(true);
}

async function newProvider(server: Running): Promise<string> {
  const uuid = crypto.randomUUID();
  const res = await fetch(`${server.url}/resource_providers`, {
    method: 'POST',
    headers: ADMIN_HEADERS,
    body: JSON.stringify({ name: `rp-${uuid}`, uuid }),
  });
  expect(res.status).toBe(200);
  return uuid;
}

/**
 * The scenario of the issue: an idle keep-alive connection, and a PUT whose
 * body is half sent when the signal comes. Returns once the PUT was answered.
 */
async function stopWithRequestInFlight(server: Running, signalled: () => void): Promise<void> {
  const rp = await newProvider(server);
  const idle = await rawConnection(server.port, head('GET', '/', { connection: 'keep-alive' }));
  const body = JSON.stringify({ resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } });
  const split = Math.floor(body.length / 2);
  const put = await rawConnection(
    server.port,
    head('PUT', `/resource_providers/${rp}/inventories`, { 'content-length': body.length, expect: '100-continue' }) + body.slice(0, split),
  );
  await inFlight(put);

  signalled();
  // The idle connection is closed, and no new one is accepted...
  expect(await Promise.race([idle.closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('open'), 5000))])).toBe('closed');
  expect(await until(async () => !(await accepting(server.port)), 5000)).toBe(true);
  // ...while the request in flight is answered in full, and told the connection closes.
  put.socket.write(body.slice(split));
  const answer = await put.closed;
  expect(answer).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
  expect(answer.toLowerCase()).toContain('connection: close');
  expect(answer).toContain('"VCPU"');
}

describe('one server process', () => {
  it('SIGTERM: drains the request in flight, exits 0, logs the stop', async () => {
    const db = `file:${join(dir, 'single.db')}`;
    const server = await spawnServer({ PLACEMENT_DB_URL: db, PLACEMENT_WORKERS: '1' });
    await stopWithRequestInFlight(server, () => server.child.kill('SIGTERM'));
    expect((await server.exited).code).toBe(0);
    const stopped = server
      .log()
      .split('\n')
      .find((l) => l.includes('placement-edge stopped'));
    expect(JSON.parse(stopped!)).toMatchObject({ signal: 'SIGTERM', in_flight: 1, cut: 0 });

    // The PUT whose answer came during the stop was committed.
    const again = await spawnServer({ PLACEMENT_DB_URL: db, PLACEMENT_WORKERS: '1' });
    try {
      const list = await (await fetch(`${again.url}/resource_providers?resources=VCPU:8`, { headers: ADMIN_HEADERS })).json();
      expect((list as { resource_providers: unknown[] }).resource_providers).toHaveLength(1);
    } finally {
      again.child.kill('SIGTERM');
      await again.exited;
    }
  }, 120_000);

  it('cuts a request still unfinished when PLACEMENT_SHUTDOWN_GRACE_MS ends', async () => {
    const server = await spawnServer({
      PLACEMENT_DB_URL: `file:${join(dir, 'grace.db')}`,
      PLACEMENT_WORKERS: '1',
      PLACEMENT_SHUTDOWN_GRACE_MS: '1000',
    });
    const rp = await newProvider(server);
    const stuck = await rawConnection(
      server.port,
      `${head('PUT', `/resource_providers/${rp}/inventories`, { 'content-length': 500, expect: '100-continue' })}{"resource_`,
    );
    await inFlight(stuck);
    const signalled = Date.now();
    server.child.kill('SIGINT');
    expect((await server.exited).code).toBe(0);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(900);
    await stuck.closed;
    const line = server
      .log()
      .split('\n')
      .find((l) => l.includes('grace period'));
    expect(JSON.parse(line!)).toMatchObject({ level: 'warn', signal: 'SIGINT', in_flight: 1, cut: 1 });
  }, 120_000);
});

describe('npm start with PLACEMENT_WORKERS=2', () => {
  it('SIGTERM to npm: every process drains and exits, nothing left listening', async () => {
    const server = await spawnServer({ PLACEMENT_DB_URL: `file:${join(dir, 'npm.db')}`, PLACEMENT_WORKERS: '2' }, { npm: true });
    // npm execs node (the primary: scripts/start.mjs) in its shell; the workers it forks run the start bundle (server.mjs), or the sources where none could be built.
    const nodes = () =>
      descendants(server.child.pid!).filter((p) =>
        ['scripts/start.mjs', 'server.mjs', 'src/entry/node.ts'].some((entry) => p.cmd.includes(entry)),
      );
    // Wait for both workers.
    expect(await until(() => nodes().length === 3, 60_000)).toBe(true);
    const processes = nodes();
    await stopWithRequestInFlight(server, () => server.child.kill('SIGTERM'));
    await server.exited;
    expect(await until(() => processes.every((p) => !isAlive(p.pid)), 15_000)).toBe(true);
    expect(await accepting(server.port)).toBe(false);
    expect(server.log()).toContain('placement-edge stopping');
  }, 180_000);
});
