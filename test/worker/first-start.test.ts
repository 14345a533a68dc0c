// Several isolates booting at once on a brand-new libSQL database (a fresh
// deploy taking traffic): every one must come up, with one set of tables.
import { createClient } from '@libsql/client/web';
import { describe, expect, inject, it } from 'vitest';
import { MIGRATIONS } from '../../src/db/migrations.generated.js';
import { countRoundTrips } from '../../src/db/round-trips.js';
import { syncStandards } from '../../src/placement/sync-standards.js';
import { prepareDatabase } from '../../src/entry/prepare-database.js';

describe('first start on an empty database', () => {
  it('lets racing isolates all finish migrating and syncing', async () => {
    const url = inject('freshSqldUrl');
    const isolates = Array.from({ length: 4 }, () => createClient({ url }));
    const results = await Promise.allSettled(isolates.map((client) => prepareDatabase(client)));
    expect(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'ok'))).toEqual(['ok', 'ok', 'ok', 'ok']);

    const db = isolates[0]!;
    const journal = await db.execute('SELECT hash FROM __drizzle_migrations ORDER BY created_at');
    expect(journal.rows.map((row) => row.hash)).toEqual(MIGRATIONS.map((m) => m.tag));
    const classes = await db.execute("SELECT count(*) AS n FROM resource_classes WHERE name = 'VCPU'");
    expect(Number(classes.rows[0]!.n)).toBe(1);
  });

  it('syncs the standard names of an already-synced database in one round trip', async () => {
    const counted = countRoundTrips(createClient({ url: inject('freshSqldUrl') }));
    expect(await syncStandards(counted.client)).toEqual({ resourceClasses: 0, traits: 0 });
    expect(counted.count()).toBe(1);
  });

  it('recognises a prepared database in one read-only round trip, and takes the full path when a name is missing', async () => {
    const url = inject('freshSqldUrl');
    const counted = countRoundTrips(createClient({ url }));
    await prepareDatabase(counted.client);
    expect(counted.count()).toBe(1);
    // A standard trait gone (a database restored from an older release's backup, say): the full check puts it back.
    const db = createClient({ url });
    await db.execute("DELETE FROM traits WHERE name = 'HW_CPU_X86_AVX2'");
    counted.reset();
    await prepareDatabase(counted.client);
    expect(counted.count()).toBeGreaterThan(1);
    const avx2 = await db.execute("SELECT count(*) AS n FROM traits WHERE name = 'HW_CPU_X86_AVX2'");
    expect(Number(avx2.rows[0]!.n)).toBe(1);
  });
});
