// A cluster primary that is alive but does not answer: with group commit on,
// it is the one writer of every server process (entry/one-writer.ts), so a
// stopped primary must end each write at the write deadline with Placement's
// 503, not hold it, while reads go on from the server processes' own
// connections.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_HEADERS, type Running, spawnServer, stopServer, until } from './processes.js';

const WRITE_TIMEOUT_MS = 1500;
let dir: string;
let server: Running;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'placement-writer-silence-'));
  server = await spawnServer({
    PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`,
    PLACEMENT_WORKERS: '2',
    PLACEMENT_DB_WRITE_TIMEOUT_MS: String(WRITE_TIMEOUT_MS),
  });
  expect(await until(async () => (await fetch(`${server.url}/readyz`)).status === 200, 60_000)).toBe(true);
}, 120_000);

afterAll(async () => {
  if (server?.child.pid) process.kill(server.child.pid, 'SIGCONT');
  await stopServer(server);
  rmSync(dir, { recursive: true, force: true });
});

it('ends a write at the write deadline with a 503 while the primary is stopped, and reads go on', async () => {
  const rp = randomUUID();
  const created = await fetch(`${server.url}/resource_providers`, {
    method: 'POST',
    headers: ADMIN_HEADERS,
    body: JSON.stringify({ name: `h-${rp}`, uuid: rp }),
  });
  expect(created.status).toBe(200);
  process.kill(server.child.pid!, 'SIGSTOP');
  try {
    const started = Date.now();
    const res = await fetch(`${server.url}/resource_providers/${rp}/inventories`, {
      method: 'PUT',
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } }),
      signal: AbortSignal.timeout(30_000),
    });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { errors: { detail: string }[] };
    expect(body.errors[0]!.detail).toContain('the cluster primary, the one writer of PLACEMENT_DB_URL gave no answer');
    expect(Date.now() - started).toBeGreaterThanOrEqual(WRITE_TIMEOUT_MS - 50);
    const read = await fetch(`${server.url}/resource_providers/${rp}`, { headers: ADMIN_HEADERS, signal: AbortSignal.timeout(30_000) });
    expect(read.status).toBe(200);
  } finally {
    process.kill(server.child.pid!, 'SIGCONT');
  }
}, 90_000);
