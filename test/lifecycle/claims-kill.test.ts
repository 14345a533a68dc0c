// A server process SIGKILLed while concurrent clients claim (their write
// batches sharing commits, db/group-commit.ts), then started again on the
// same file, three lives in a row: every claim that was answered 204 is there
// after the restarts, every consumer is there whole or not at all, and the
// usage equals the allocations that exist. A real `node src/entry/node.ts`
// process on a database file, as a host crash or an OOM kill would leave it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { mulberry32 } from '../helpers/random.js';
import { waitUntil } from '../helpers/wait.js';
import { type Running, spawnServer } from './processes.js';

const LIVES = 3;
const CLIENTS = 16;
const PROVIDERS = Array.from({ length: 8 }, (_, i) => `d1000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
const PROJECT = 'd3000000-0000-4000-8000-000000000001';
const USER = 'd3000000-0000-4000-8000-000000000002';
const HEADERS = {
  'x-auth-token': 'admin',
  'content-type': 'application/json',
  accept: 'application/json',
  'openstack-api-version': 'placement 1.38',
};

const dir = mkdtempSync(join(tmpdir(), 'placement-claims-kill-'));
let server: Running | undefined;
// Each case's last server goes with it.
afterEach(async () => {
  if (server && server.child.exitCode === null && server.child.signalCode === null) {
    server.child.kill('SIGKILL');
    await server.exited;
  }
  server = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * One server process, or a primary and two server processes whose writes the
 * primary commits for them (db/shared-writer.ts); SIGKILL to the primary ends
 * its server processes too.
 */
const start = (dbPath: string, workers: number) =>
  spawnServer({ PLACEMENT_DB_URL: `file:${dbPath}`, PLACEMENT_WORKERS: String(workers), PLACEMENT_GROUP_COMMIT: 'true' });

async function api(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}${path}`, { method, headers: HEADERS, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

describe.each([1, 2])('claims answered before a SIGKILL, PLACEMENT_WORKERS=%i', (workers) => {
  it(`are all there after ${LIVES} kills and restarts, each consumer whole or absent, usage exact`, async () => {
    const random = mulberry32(41);
    const dbPath = join(dir, `placement-${workers}.db`);
    server = await start(dbPath, workers);
    for (const uuid of PROVIDERS) {
      expect((await api(server.url, 'POST', '/resource_providers', { name: `kill-${uuid}`, uuid })).status).toBe(200);
      const inventory = { resource_provider_generation: 0, inventories: { VCPU: { total: 100_000 }, MEMORY_MB: { total: 1_000_000 } } };
      expect((await api(server.url, 'PUT', `/resource_providers/${uuid}/inventories`, inventory)).status).toBe(200);
    }
    const acknowledged: string[] = [];
    const sent: string[] = [];
    for (let life = 0; life < LIVES; life += 1) {
      const running = server;
      // Killed once this life has answered some claims: how many varies, so the kill lands in
      // different places of a group's write (read, shared transaction, COMMIT, answer).
      const killAfter = acknowledged.length + 40 + Math.floor(random() * 120);
      let dead = false;
      const loop = async (client: number) => {
        for (let i = 0; !dead; i += 1) {
          const consumer = `d2${String(life).padStart(2, '0')}${String(client).padStart(4, '0')}-0000-4000-8000-${String(i).padStart(12, '0')}`;
          const provider = PROVIDERS[(client + i) % PROVIDERS.length]!;
          sent.push(consumer);
          try {
            const res = await api(running.url, 'PUT', `/allocations/${consumer}`, {
              allocations: { [provider]: { resources: { VCPU: 1, MEMORY_MB: 64 } } },
              project_id: PROJECT,
              user_id: USER,
              consumer_generation: null,
              consumer_type: 'INSTANCE',
            });
            if (res.status === 204) acknowledged.push(consumer);
            else throw new Error(`claim answered ${res.status}: ${JSON.stringify(res.json)}`);
          } catch (err) {
            if (!dead) throw err;
            return; // the process died under this request: no answer, no promise made
          }
        }
      };
      const clients = Array.from({ length: CLIENTS }, (_, c) => loop(c));
      await waitUntil(`${killAfter} claims answered`, () => acknowledged.length >= killAfter, 120_000, 1);
      dead = true;
      running.child.kill('SIGKILL');
      await running.exited;
      await Promise.all(clients);
      server = await start(dbPath, workers);
    }

    // The last life's process reads what the killed ones committed.
    const base = server.url;
    for (const consumer of acknowledged) {
      const { status, json } = await api(base, 'GET', `/allocations/${consumer}`);
      expect(status).toBe(200);
      expect(Object.keys((json as { allocations: Record<string, unknown> }).allocations)).toHaveLength(1);
    }
    let usage = 0;
    for (const uuid of PROVIDERS) {
      usage += ((await api(base, 'GET', `/resource_providers/${uuid}/usages`)).json as { usages: { VCPU?: number } }).usages.VCPU ?? 0;
    }
    const client = createClient({ url: `file:${dbPath}` });
    try {
      expect((await client.execute('PRAGMA integrity_check')).rows[0]![0]).toBe('ok');
      const held = Number((await client.execute('SELECT count(*) FROM allocations')).rows[0]![0]);
      const consumers = Number((await client.execute('SELECT count(*) FROM consumers')).rows[0]![0]);
      // Each claim is one consumer with its VCPU and MEMORY_MB rows, or nothing of it.
      expect(held).toBe(2 * consumers);
      expect(usage).toBe(consumers);
      // What was answered is there; claims in flight at a kill may or may not be.
      expect(consumers).toBeGreaterThanOrEqual(acknowledged.length);
      expect(consumers).toBeLessThanOrEqual(sent.length);
    } finally {
      client.close();
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(LIVES * 40);
  }, 300_000);
});
