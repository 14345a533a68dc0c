// The standard-name sync at start in at most two round trips (one read; one
// write batch only when names are missing), storing exactly what the frozen
// pre-issue-13 sync stored, on a fresh database and on partly synced ones.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@libsql/client';
import { afterEach, describe, expect, it } from 'vitest';
import { applyMigrations } from '../../src/db/migrate.js';
import { openNodeClient } from '../../src/db/node-client.js';
import { readMigrationsDir } from '../../src/db/node-migrations.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { STANDARD_RESOURCE_CLASSES, STANDARD_TRAITS } from '../../src/placement/standard-names.generated.js';
import { syncStandards } from '../../src/placement/sync-standards.js';
import { syncStandards as oldSyncStandards } from './old/sync-standards.js';

const dirs: string[] = [];
const clients: Client[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function migratedDb(): Promise<Client> {
  const dir = mkdtempSync(join(tmpdir(), 'sync-standards-'));
  dirs.push(dir);
  const client = await openNodeClient(`file:${join(dir, 'placement.db')}`);
  clients.push(client);
  await applyMigrations(client, readMigrationsDir());
  return client;
}

async function contents(client: Client): Promise<unknown[]> {
  const rs = await client.batch(['SELECT id, name FROM resource_classes ORDER BY id', 'SELECT name FROM traits ORDER BY name'], 'read');
  return rs.map((r) => r.rows.map((row) => ({ ...row })));
}

/** Two databases with the same rows; `prepare` runs on both before the syncs. */
async function pair(prepare: (client: Client) => Promise<void>): Promise<[Client, Client]> {
  const [live, old] = [await migratedDb(), await migratedDb()];
  await prepare(live);
  await prepare(old);
  return [live, old];
}

describe('syncStandards', () => {
  it('fills a fresh database in two round trips, then finds nothing missing in one', async () => {
    const [live, old] = await pair(async () => {});
    const counted = countRoundTrips(live);
    const added = await syncStandards(counted.client);
    expect(counted.count()).toBe(2);
    expect(added).toEqual({ resourceClasses: STANDARD_RESOURCE_CLASSES.length, traits: STANDARD_TRAITS.length });
    expect(added).toEqual(await oldSyncStandards(old));
    expect(await contents(live)).toEqual(await contents(old));

    counted.reset();
    expect(await syncStandards(counted.client)).toEqual({ resourceClasses: 0, traits: 0 });
    expect(counted.count()).toBe(1);
  });

  it('adds only what is missing and keeps custom rows, as the old sync did', async () => {
    const [live, old] = await pair(async (client) => {
      await oldSyncStandards(client);
      await client.batch(
        [
          "DELETE FROM resource_classes WHERE name IN ('DISK_GB', 'VGPU')",
          "DELETE FROM traits WHERE name IN ('HW_CPU_X86_AVX2', 'STORAGE_DISK_SSD')",
          "INSERT INTO resource_classes (id, name) VALUES (10000, 'CUSTOM_KEEP')",
          "INSERT INTO traits (name) VALUES ('CUSTOM_KEEP')",
        ],
        'write',
      );
    });
    const counted = countRoundTrips(live);
    const added = await syncStandards(counted.client);
    expect(counted.count()).toBe(2);
    expect(added).toEqual({ resourceClasses: 2, traits: 2 });
    expect(added).toEqual(await oldSyncStandards(old));
    expect(await contents(live)).toEqual(await contents(old));
  });

  it('leaves a standard id taken by another name alone, as the old sync did', async () => {
    const [live, old] = await pair(async (client) => {
      await client.execute("INSERT INTO resource_classes (id, name) VALUES (1, 'SOMETHING_ELSE')");
    });
    const added = await syncStandards(live);
    expect(added).toEqual(await oldSyncStandards(old));
    expect(added.resourceClasses).toBe(STANDARD_RESOURCE_CLASSES.length - 1);
    expect(await contents(live)).toEqual(await contents(old));
  });

  it('lets starters racing on one database all finish with one set of rows', async () => {
    const [live, old] = await pair(async () => {});
    const results = await Promise.all([syncStandards(live), syncStandards(live), syncStandards(live)]);
    expect(results.reduce((n, r) => n + r.traits, 0)).toBe(STANDARD_TRAITS.length);
    await oldSyncStandards(old);
    expect(await contents(live)).toEqual(await contents(old));
  });
});
