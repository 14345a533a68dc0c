// The what-if comparison holds on a loaded machine. The service's own
// searches stop at PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS and answer
// what they found (GET /ext/headroom: incomplete, lower bounds): on a machine
// slow enough, the reference the differential compares with is cut short
// while the simulation (which never takes the budget) is not. That was the
// differential's one input that depends on load (the other, random uuids,
// kept a failing seed from building the same cloud again); its reference app
// now runs without a budget. Here a 1 ms budget over 600 trees of eight
// one-GPU children (4,800 search steps) stands for the loaded machine.
import { afterEach, describe, expect, it } from 'vitest';
import { type Cloud, directLoad } from '../../bench/cloud.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const TREES = 600;
const GPUS = 8;

const opened: TestApp[] = [];
afterEach(() => {
  for (const t of opened.splice(0)) t.close();
});

function gpuCloud(): Cloud {
  return Array.from({ length: TREES }, (_, i) => {
    const root = crypto.randomUUID();
    return [
      { uuid: root, name: `host-${i}` },
      ...Array.from({ length: GPUS }, (_, g) => ({
        uuid: crypto.randomUUID(),
        name: `host-${i}-gpu-${g}`,
        parent: root,
        inventories: { VGPU: { total: 1, reserved: 0, min_unit: 1, max_unit: 1, step_size: 1, allocation_ratio: 1 } },
      })),
    ];
  });
}

async function appWith(budgetMs: string, cloud: Cloud): Promise<TestApp> {
  const t = await makeTestApp({ PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS: budgetMs });
  opened.push(t);
  await directLoad(t.deps.store.client, cloud);
  return t;
}

const QUERY = 'resources=VGPU:1';

describe('what-if on a loaded machine', () => {
  it('a search time budget cuts the service headroom, never the simulation; the reference without one equals it', async () => {
    const cloud = gpuCloud();
    const removed = cloud[0]![0]!.uuid;
    const loaded = await appWith('1', cloud);
    const reference = await appWith('0', cloud);

    // The loaded service: its headroom is cut, a lower bound (what a differential comparing with it would have failed on).
    const cut = (await (await loaded.call('GET', `/ext/headroom?${QUERY}`)).json()) as { total: number; incomplete?: true };
    expect(cut.incomplete).toBe(true);
    expect(cut.total).toBeLessThan(TREES * GPUS);

    // The simulation on the same loaded service: exact before and after.
    const res = await loaded.call('POST', '/ext/simulate', {
      body: { changes: [{ op: 'remove_trees', providers: [removed] }], queries: [{ name: 'gpu', query: QUERY }] },
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const answer = (await res.json()) as { queries: { before: { total: number }; after: { total: number } }[] };
    expect(answer.queries[0]!.before.total).toBe(TREES * GPUS);
    expect(answer.queries[0]!.after.total).toBe((TREES - 1) * GPUS);

    // The reference as the differential now builds it (no budget): never cut, equal to the simulation.
    const exact = (await (await reference.call('GET', `/ext/headroom?${QUERY}`)).json()) as { total: number; incomplete?: true };
    expect(exact.incomplete).toBeUndefined();
    expect(exact.total).toBe(answer.queries[0]!.before.total);
  }, 120_000);
});
