// The project limits' usage ledger comes from a migration (drizzle/0009), not
// from start-up code: the triggers a migrated database holds are exactly the
// ones src/ext/limits/sql.ts states (ledgerTriggers), and an app with limits
// off leaves them idle (nothing counted, no ledger row).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerTriggers } from '../../src/ext/limits/sql.js';
import { MIGRATIONS } from '../../src/db/migrations.generated.js';
import { seedProvider } from '../helpers/placement-seed.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

describe("the limits ledger's triggers", () => {
  it('are created by a migration, exactly as sql.ts states them', async () => {
    const result = await t.deps.store.client.execute(
      "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'ext\\_limit\\_usage\\_%' ESCAPE '\\' ORDER BY name",
    );
    const installed = new Map(result.rows.map((r) => [String(r.name), String(r.sql)]));
    expect(installed).toEqual(new Map([...ledgerTriggers()].sort(([a], [b]) => a.localeCompare(b))));
    const migration = MIGRATIONS.find((m) => m.tag === '0009_ext_limit_ledger')!.sql;
    for (const sql of ledgerTriggers().values()) expect(migration).toContain(sql);
  });

  it('stay idle while limits were never on: claims write no ledger row', async () => {
    const rp = (await seedProvider(t.deps, { VCPU: { total: 8, maxUnit: 8 } })).uuid;
    const body = { allocations: { [rp]: { resources: { VCPU: 2 } } }, project_id: 'p', user_id: 'u', consumer_generation: null };
    expect((await t.call('PUT', `/allocations/${randomUUID()}`, { body, version: '1.28' })).status).toBe(204);
    const [usage] = await t.deps.store.readBatch([
      'SELECT count(*) AS n FROM ext_limit_usage',
      'SELECT count(*) AS n FROM ext_limit_counting',
    ]);
    expect(Number(usage!.rows[0]!.n)).toBe(0);
  });
});
