// placement-admin backup / restore (the real bin) on a running `npm start`
// that several clients keep claiming from: the restored copy holds every
// claim acknowledged before the backup began, and is consistent (each
// provider's usage is the sum of the allocations it holds).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { placementCall } from '../helpers/upstream-placement.js';
import { waitUntil } from '../helpers/wait.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'placement-admin.js');

async function placementAdmin(args: string[], dbUrl: string): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, PLACEMENT_DB_URL: dbUrl },
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const PROVIDERS = Array.from({ length: 4 }, (_, i) => `b0000000-0000-4000-8000-00000000000${i}`);

describe('placement-admin backup and restore', () => {
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'backup-test-'));
    server = await startServer(`file:${join(dir, 'live.db')}`);
    for (const [i, uuid] of PROVIDERS.entries()) {
      await placementCall(server.url, 'POST', '/resource_providers', { uuid, name: `host-${i}` });
      await placementCall(server.url, 'PUT', `/resource_providers/${uuid}/inventories`, {
        resource_provider_generation: 0,
        inventories: { VCPU: { total: 100_000 } },
      });
    }
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('restores a backup taken under concurrent claims with every claim acknowledged before it began', async () => {
    const acked: { consumer: string; provider: string; at: number }[] = [];
    let claiming = true;
    let refused = 0;
    const client = async (n: number) => {
      for (let i = 0; claiming; i++) {
        const consumer = crypto.randomUUID();
        const provider = PROVIDERS[(n + i) % PROVIDERS.length]!;
        const res = await fetch(`${server.url}/allocations/${consumer}`, {
          method: 'PUT',
          headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement 1.39' },
          body: JSON.stringify({
            allocations: { [provider]: { resources: { VCPU: 1 + (i % 3) } } },
            project_id: `project-${n}`,
            user_id: 'user',
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          }),
        });
        await res.arrayBuffer();
        if (res.status === 204) acked.push({ consumer, provider, at: Date.now() });
        else refused += 1;
      }
    };
    const clients = Array.from({ length: 6 }, (_, n) => client(n));
    // Claims acknowledged in numbers before the backup begins: counted, not a fixed 1.5 s
    // (fewer land in it on a loaded machine).
    await waitUntil('30 claims acknowledged before the backup', () => acked.length >= 30 || refused > 0, 30_000);

    const began = Date.now();
    const ackedBefore = acked.filter((a) => a.at < began);
    const backupFile = join(dir, 'backup.db');
    const backup = await placementAdmin(['backup', backupFile], `file:${join(dir, 'live.db')}`);
    const ackedDuring = acked.length - ackedBefore.length;
    // Claims go on a little after the backup too; only those acknowledged before it began are promised.
    await new Promise((r) => setTimeout(r, 300));
    claiming = false;
    await Promise.all(clients);

    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(/^backup written to .*backup\.db \(\d+ bytes: 4 providers, \d+ consumers\)/);
    expect(refused).toBe(0);
    expect(ackedBefore.length).toBeGreaterThan(20);
    expect(ackedDuring).toBeGreaterThan(0); // the service kept serving while the backup ran

    // A second backup never overwrites the first.
    const again = await placementAdmin(['backup', backupFile], `file:${join(dir, 'live.db')}`);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists/);

    // Restore into a new place, as after losing the disk; then serve it.
    const restoredDb = join(dir, 'restored', 'placement.db');
    rmSync(join(dir, 'restored'), { recursive: true, force: true });
    await run('mkdir', ['-p', join(dir, 'restored')]);
    const restored = await placementAdmin(['restore', backupFile], `file:${restoredDb}`);
    expect(restored.stderr).toBe('');
    expect(restored.code).toBe(0);
    expect(restored.stdout).toMatch(/^restored .* \(4 providers, \d+ consumers\)/);

    const copy = await startServer(`file:${restoredDb}`);
    try {
      for (const claim of ackedBefore) {
        const body = (await placementCall(copy.url, 'GET', `/allocations/${claim.consumer}`)) as { allocations: Record<string, unknown> };
        expect(Object.keys(body.allocations), claim.consumer).toEqual([claim.provider]);
      }
      // Consistent: each provider's usage is exactly what its allocations add up to.
      let present = 0;
      for (const provider of PROVIDERS) {
        const { allocations } = (await placementCall(copy.url, 'GET', `/resource_providers/${provider}/allocations`)) as {
          allocations: Record<string, { resources: { VCPU: number } }>;
        };
        const { usages } = (await placementCall(copy.url, 'GET', `/resource_providers/${provider}/usages`)) as { usages: { VCPU: number } };
        expect(usages.VCPU).toBe(Object.values(allocations).reduce((sum, a) => sum + a.resources.VCPU, 0));
        present += Object.keys(allocations).length;
      }
      expect(present).toBeGreaterThanOrEqual(ackedBefore.length);
      expect(present).toBeLessThanOrEqual(acked.length);
    } finally {
      await copy.stop();
    }

    // Restoring over an existing database needs --replace (the service stopped first).
    const over = await placementAdmin(['restore', backupFile], `file:${restoredDb}`);
    expect(over.code).toBe(1);
    expect(over.stderr).toMatch(/already exists .*--replace/);
    expect((await placementAdmin(['restore', backupFile, '--replace'], `file:${restoredDb}`)).code).toBe(0);
  }, 180_000);

  it('refuses what it cannot back up or restore, in one line', async () => {
    const remote = await placementAdmin(['backup', join(dir, 'x.db')], 'http://127.0.0.1:9/');
    expect(remote.code).toBe(1);
    expect(remote.stderr).toMatch(/^placement-admin: backup works on the embedded database .*libSQL server.*docs\/operations-backup\.md/);
    const junk = join(dir, 'junk.db');
    writeFileSync(junk, 'not a database at all, just some text that is long enough to look like a header maybe');
    const bad = await placementAdmin(['restore', junk], `file:${join(dir, 'target-of-junk.db')}`);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(existsSync(join(dir, 'target-of-junk.db'))).toBe(false);
  }, 60_000);
});
