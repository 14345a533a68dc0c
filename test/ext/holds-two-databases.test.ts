// Two databases served by one process (the read hook is the process's, shared by
// every app): each answer follows its own database's holds, even where both
// databases went through the same writes and so stand at the same holds epoch.
import { expect, it } from 'vitest';
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
