// The holds' one-batch claim condition (derived from ext/holds/declaration.ts
// by placement/capacity.ts setAsideHoldsSql) against the ordinary path's
// decision (the model, model.ts refuseClaim, over what the guard's snapshot
// reads) on random clouds: holds past, active and ahead, claims with and
// without a lease (some expired, some from an older consumer generation),
// drawn from a hold or not. The condition is a bound, not the rule: wherever
// it lets a new consumer's claim through as of the write, the model must
// grant it too; where it does not, the ordinary path decides (both outcomes
// must occur, or the comparison proves nothing).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HELD_CAPACITY } from '../../src/ext/holds/declaration.js';
import { type Claim, FOREVER, keyOf, refuseClaim } from '../../src/ext/holds/model.js';
import { worldOf, worldStatements } from '../../src/ext/holds/repo.js';
import { setAsideHoldsSql } from '../../src/placement/capacity.js';
import { provider } from '../helpers/providers.js';
import { type Random, random } from '../helpers/random.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const CASES = Number(process.env.HOLDS_ONE_BATCH_CASES ?? 600);
const CLASSES = ['VCPU', 'MEMORY_MB'];
const PROJECTS = ['p-a', 'p-b'];
const NOW = Date.parse('2026-11-29T12:00:00Z');
const MINUTE = 60_000;

let t: TestApp;
let providers: { uuid: string; id: number }[];
let classIds: Map<string, number>;
const exec = (sql: string, args: (string | number)[] = []) => t.deps.store.client.execute({ sql, args });

beforeAll(async () => {
  t = await makeTestApp();
  providers = [];
  for (let i = 0; i < 2; i += 1) {
    const uuid = await provider(t, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 8 } } });
    const row = await exec('SELECT id FROM resource_providers WHERE uuid = ?', [uuid]);
    providers.push({ uuid, id: Number(row.rows[0]!.id) });
  }
  const rows = await exec(`SELECT id, name FROM resource_classes WHERE name IN ('VCPU', 'MEMORY_MB')`);
  classIds = new Map(rows.rows.map((r) => [String(r.name), Number(r.id)]));
  for (const p of PROJECTS) await exec('INSERT INTO projects (external_id) VALUES (?)', [p]);
  await exec(`INSERT INTO users (external_id) VALUES ('u')`);
});
afterAll(() => t.close());

const projectId = (p: string) => `(SELECT id FROM projects WHERE external_id = '${p}')`;

/** A random time around now: long past, just past, now, just ahead, far ahead. */
const instant = (r: Random) => NOW + r.pick([-120, -5, -1, 0, 1, 5, 60, 600]) * MINUTE + r.int(-30, 30) * 1000;

/** One random cloud, written over the last: capacities, holds, allocations with their leases and draws. */
async function writeCloud(r: Random): Promise<void> {
  for (const table of ['ext_hold_draws', 'ext_leases', 'ext_hold_amounts', 'ext_holds', 'allocations', 'consumers'])
    await exec(`DELETE FROM ${table}`);
  for (const p of providers) {
    for (const id of classIds.values()) {
      await exec(
        'UPDATE inventories SET total = ?, reserved = 0, allocation_ratio = 1 WHERE resource_provider_id = ? AND resource_class_id = ?',
        [r.int(4, 12), p.id, id],
      );
    }
  }
  const holds: string[] = [];
  for (let i = r.int(0, 3); i > 0; i -= 1) {
    const uuid = r.uuid();
    const start = instant(r);
    const end = r.chance(0.1) ? start + 1 : start + r.pick([1, 10, 120, 6000]) * MINUTE;
    await exec(
      `INSERT INTO ext_holds (uuid, project_id, start_ms, end_ms, end_action, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'x', 'x')`,
      [uuid, r.pick(PROJECTS), start, end, r.pick(['release', 'keep'])],
    );
    for (const p of r.some(providers, 2)) {
      for (const rc of r.some(CLASSES, 2)) {
        await exec('INSERT INTO ext_hold_amounts (hold_uuid, resource_provider_id, resource_class_id, amount) VALUES (?, ?, ?, ?)', [
          uuid,
          p.id,
          classIds.get(rc)!,
          r.int(1, 8),
        ]);
      }
    }
    holds.push(uuid);
  }
  for (let i = r.int(0, 4); i > 0; i -= 1) {
    const consumer = r.uuid();
    const generation = r.int(1, 3);
    await exec(`INSERT INTO consumers (uuid, project_id, user_id, generation) VALUES (?, ${projectId(r.pick(PROJECTS))}, 1, ?)`, [
      consumer,
      generation,
    ]);
    for (const p of r.some(providers, 2)) {
      for (const rc of r.some(CLASSES, 2)) {
        await exec('INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) VALUES (?, ?, ?, ?)', [
          p.id,
          consumer,
          classIds.get(rc)!,
          r.int(1, 6),
        ]);
      }
    }
    // A lease (its expiry past or ahead), a draw, either from the consumer's generation or an older one.
    const covering = () => (r.chance(0.65) ? generation : generation - 1);
    if (r.chance(0.4)) {
      await exec(
        `INSERT INTO ext_leases (consumer_uuid, consumer_generation, seconds, expires_at_ms, created_at, updated_at) VALUES (?, ?, 60, ?, 'x', 'x')`,
        [consumer, covering(), instant(r)],
      );
    }
    if (holds.length && r.chance(0.7)) {
      await exec('INSERT INTO ext_hold_draws (consumer_uuid, hold_uuid, consumer_generation) VALUES (?, ?, ?)', [
        consumer,
        r.pick(holds),
        covering(),
      ]);
    }
  }
}

/** A new consumer's claim, written as the one-batch claim writes it (the condition reads it as of the write). */
async function writeClaim(r: Random): Promise<Claim> {
  const consumer = r.uuid();
  const project = r.pick(PROJECTS);
  await exec(`INSERT INTO consumers (uuid, project_id, user_id, generation) VALUES (?, ${projectId(project)}, 1, 1)`, [consumer]);
  const amounts = new Map<string, number>();
  for (const p of r.some(providers, 2)) {
    for (const rc of r.some(CLASSES, 2)) {
      const amount = r.int(1, 6);
      await exec('INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used) VALUES (?, ?, ?, ?)', [
        p.id,
        consumer,
        classIds.get(rc)!,
        amount,
      ]);
      amounts.set(keyOf(p.uuid, rc), amount);
    }
  }
  return { consumer, project, amounts, untilMs: FOREVER, holdId: null };
}

describe("the holds' one-batch condition against the model", () => {
  it(`never lets through a new consumer's claim the model refuses (${CASES} random clouds)`, async () => {
    const r = random(40_2026);
    const seen = { passed: 0, stopped: 0, refusedByModel: 0, drawsRead: 0 };
    for (let i = 0; i < CASES; i += 1) {
      await writeCloud(r);
      const claim = await writeClaim(r);
      const [condition] = (
        await t.deps.store.readBatch([{ sql: `SELECT (${setAsideHoldsSql(HELD_CAPACITY, '?')}) AS ok`, args: [claim.consumer] }])
      ).map((result) => Number(result.rows[0]!.ok));
      // The ordinary path's snapshot (claim-guard.ts), read back without the claim's own allocations.
      const read = worldOf(
        await t.deps.store.readBatch(
          worldStatements(
            HELD_CAPACITY,
            providers.map((p) => p.uuid),
            0,
            true,
          ),
        ),
        NOW,
      );
      const world = { ...read.world, allocations: read.world.allocations.filter((a) => a.consumer !== claim.consumer) };
      seen.drawsRead += world.allocations.filter((a) => a.holdId !== null).length > 0 ? 1 : 0;
      const refusal = refuseClaim(world, claim);
      if (refusal) seen.refusedByModel += 1;
      if (condition === 1) {
        seen.passed += 1;
        expect(refusal, `case ${i}: the condition let through a claim the model refuses`).toBeNull();
      } else seen.stopped += 1;
    }
    // Both outcomes, refusals of the model, and draws in the clouds: the comparison covered each.
    expect(seen.passed).toBeGreaterThan(CASES / 10);
    expect(seen.stopped).toBeGreaterThan(CASES / 10);
    expect(seen.refusedByModel).toBeGreaterThan(CASES / 20);
    expect(seen.drawsRead).toBeGreaterThan(CASES / 20);
  }, 300_000);
});
