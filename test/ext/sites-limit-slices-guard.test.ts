// The site limit slices' one-batch condition (src/ext/sites/limit-slices.ts,
// the claim guard's holdsSql) holds exactly where the rule does: for each
// (project, class) the claimed consumers use, the limits' ledger and every
// site's unspent slice of that same project and class stay within its limit.
// Another project's slices weigh nothing on it.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_LIMIT_SLICES } from '../../src/ext/sites/declaration.js';
import { siteLimitSlicesGuard } from '../../src/ext/sites/limit-slices.js';
import { instanceClaim } from '../helpers/claims.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const MINE = 'a1b2c3d4a1b2c3d4a1b2c3d4a1b2c3d4';
const OTHER = 'b1b2c3d4a1b2c3d4a1b2c3d4a1b2c3d4';

let t: TestApp;
let consumer: string;
beforeAll(async () => {
  t = await makeTestApp();
  const db = t.deps.store.client;
  await db.execute("INSERT INTO ext_limit_counting (consumer_type) VALUES ('INSTANCE')");
  const host = await provider(t, { inventory: { VCPU: { total: 64 } } });
  consumer = randomUUID();
  const res = await t.call('PUT', `/allocations/${consumer}`, {
    body: { ...instanceClaim(host, { VCPU: 3 }), project_id: MINE },
    version: '1.38',
  });
  expect(res.status).toBe(204);
});
afterAll(() => t.close());

/** The guard's one-batch condition for the claimed consumer, as of now. */
async function holds(): Promise<boolean> {
  const sql = siteLimitSlicesGuard({ types: ['INSTANCE'], untyped: false }, SITE_LIMIT_SLICES).holdsSql('?');
  const result = await t.deps.store.client.execute({ sql: `SELECT ${sql} AS holds`, args: [consumer] });
  return Number(result.rows[0]!.holds) === 1;
}

const setLimit = (project: string, limit: number) =>
  t.deps.store.client.execute({
    sql: "INSERT INTO ext_limits (project, resource_class, resource_limit) VALUES (?, 'VCPU', ?) ON CONFLICT DO UPDATE SET resource_limit = excluded.resource_limit",
    args: [project, limit],
  });
const setSlice = (site: string, project: string, amount: number) =>
  t.deps.store.client.execute({
    sql: "INSERT INTO ext_site_limit_slices (site, project, resource_class, amount) VALUES (?, ?, 'VCPU', ?) ON CONFLICT DO UPDATE SET amount = excluded.amount",
    args: [site, project, amount],
  });

describe("the site limit slices' one-batch condition", () => {
  it("counts only the claimed project's slices: usage 3 and a slice of 5 within a limit of 8, whatever another project's slices", async () => {
    await setLimit(MINE, 8);
    await setLimit(OTHER, 100);
    await setSlice('site-a', MINE, 5);
    await setSlice('site-b', OTHER, 90);
    expect(await holds()).toBe(true);
  });

  it('fails where the claimed project goes over: usage 3 and slices of 5 and 1 against a limit of 8', async () => {
    await setSlice('site-c', MINE, 1);
    expect(await holds()).toBe(false);
  });
});
