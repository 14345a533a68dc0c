// Two databases served by one process, each by an app of its own: each answer
// follows its own database's holds, even where both databases went through the
// same writes and so stand at the same holds epoch, and even where they claim
// the same identity (a copied file): the holds' read hook, and the state it
// keeps, is built per app (ext/holds/installed.ts).
import { expect, it } from 'vitest';
import { HOLD_EPOCH } from '../../src/db/columns.js';
import { appHolds } from '../../src/ext/holds/installed.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { at, candidates, claim, HOUR, PROJECT } from './helpers.js';

const HOSTS = 4;
const HELD = 2;

/** A fresh database with one hold on HELD of its HOSTS hosts, starting at `startMs` for an hour. */
async function heldCloud(startMs: number): Promise<TestApp> {
  const t = await makeTestApp();
  const hosts: string[] = [];
  for (let i = 0; i < HOSTS; i++) hosts.push(await provider(t, { inventory: { PGPU: { total: 1 } } }));
  // The project must be known to placement (a consumer of it) before it holds anything.
  const seed = await provider(t, { inventory: { VCPU: { total: 1 } } });
  expect((await claim(t, { [seed]: { resources: { VCPU: 1 } } })).status).toBe(204);
  const res = await t.call('POST', '/ext/holds', {
    body: {
      project_id: PROJECT,
      start: at(startMs),
      end: at(startMs + HOUR),
      allocations: Object.fromEntries(hosts.slice(0, HELD).map((p) => [p, { resources: { PGPU: 1 } }])),
    },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return t;
}

const endingAt = (ms: number) => `resources=PGPU:1&limit=100&ext_until=${encodeURIComponent(at(ms))}`;

it('a request that ends before its own database hold window is offered the held hosts, whatever another database holds', async () => {
  const early = Date.now() + 2 * HOUR;
  const late = early + 4 * HOUR;
  const first = await heldCloud(early);
  // Ending inside the first database's window: the held hosts are not offered there.
  expect(await candidates(first, endingAt(late - 60_000))).toHaveLength(HOSTS - HELD);
  first.close();
  const second = await heldCloud(late);
  try {
    // The same end is before the second database's window: every host is offered.
    expect(await candidates(second, endingAt(late - 60_000))).toHaveLength(HOSTS);
  } finally {
    second.close();
  }
});

it('each app reads its own holds through its own hook, even where the two databases claim the same identity and epoch', async () => {
  const early = Date.now() + 2 * HOUR;
  const late = early + 4 * HOUR;
  const first = await heldCloud(early);
  const second = await heldCloud(late);
  try {
    // The hook, and what it keeps, belongs to the app: no state a hook kept can be another app's.
    const hookOf = (t: TestApp) => appHolds(t.deps.extensions).hook;
    expect(hookOf(first)).not.toBe(hookOf(second));
    expect(first.deps.candidates.hooks).toContain(hookOf(first));
    expect(second.deps.candidates.hooks).not.toContain(hookOf(first));
    // A copied database keeps the identity its epoch row carries: make the two say the same, at the same epoch.
    for (const t of [first, second])
      await t.deps.store.client.execute(`UPDATE ext_holds_epoch SET ${HOLD_EPOCH.database} = 'copied', ${HOLD_EPOCH.epoch} = 1000000`);
    const query = endingAt(late - 60_000);
    expect(await candidates(first, query)).toHaveLength(HOSTS - HELD);
    expect(await candidates(second, query)).toHaveLength(HOSTS);
    expect(await candidates(first, query)).toHaveLength(HOSTS - HELD);
  } finally {
    first.close();
    second.close();
  }
});
