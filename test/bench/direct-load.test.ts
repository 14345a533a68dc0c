// The bench loads N=100,000 providers straight into the local server's
// database file (bench/cloud.ts directLoad) because 400,000 HTTP writes take
// too long; that is only fair if it writes exactly what loading through the
// API writes. Same cloud both ways, then every row compared (ids, uuids and
// timestamps aside: ids by their uuid, timestamps by being set or not).
import { afterEach, describe, expect, it } from 'vitest';
import { directLoad, httpLoad, type Cloud } from '../../bench/cloud.js';
import { PlacementClient } from '../../bench/client.js';
import { placeloadProvider } from '../../bench/upstream.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const opened: TestApp[] = [];
afterEach(() => {
  for (const t of opened.splice(0)) t.close();
});

/** Every placement row the loaders write, keyed by provider uuid instead of ids. */
async function dump(t: TestApp): Promise<unknown> {
  const q = async (sql: string) => (await t.deps.store.client.execute(sql)).rows.map((r) => ({ ...r }));
  return {
    providers: await q(`SELECT p.uuid, p.name, p.generation, parent.uuid AS parent, root.uuid AS root,
        p.created_at IS NOT NULL AS created, p.updated_at IS NOT NULL AS updated
      FROM resource_providers p LEFT JOIN resource_providers parent ON parent.id = p.parent_provider_id
      LEFT JOIN resource_providers root ON root.id = p.root_provider_id ORDER BY p.uuid`),
    inventories: await q(`SELECT p.uuid, rc.name AS rc, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size, i.allocation_ratio,
        i.created_at IS NOT NULL AS created, i.updated_at IS NOT NULL AS updated
      FROM inventories i JOIN resource_providers p ON p.id = i.resource_provider_id
      JOIN resource_classes rc ON rc.id = i.resource_class_id ORDER BY p.uuid, rc.name`),
    traits: await q(`SELECT p.uuid, t.name, rpt.created_at IS NOT NULL AS created FROM resource_provider_traits rpt
      JOIN resource_providers p ON p.id = rpt.resource_provider_id JOIN traits t ON t.id = rpt.trait_id ORDER BY p.uuid, t.name`),
    aggregates: await q(`SELECT p.uuid, a.uuid AS aggregate, rpa.created_at IS NOT NULL AS created FROM resource_provider_aggregates rpa
      JOIN resource_providers p ON p.id = rpa.resource_provider_id JOIN placement_aggregates a ON a.id = rpa.aggregate_id
      ORDER BY p.uuid, a.uuid`),
    aggregate_rows: await q('SELECT uuid, created_at IS NOT NULL AS created FROM placement_aggregates ORDER BY uuid'),
  };
}

describe('bench directLoad', () => {
  it('writes the same rows as loading the cloud through the API', async () => {
    const root = crypto.randomUUID();
    const numa = crypto.randomUUID();
    const cloud: Cloud = [
      ...Array.from({ length: 5 }, () => [placeloadProvider(crypto.randomUUID())]),
      // A tree with standard names, so parent and root ids are covered too.
      [
        { uuid: root, name: `cn-${root}`, inventories: { DISK_GB: { total: 100, reserved: 5 } }, traits: ['COMPUTE_VOLUME_MULTI_ATTACH'] },
        {
          uuid: numa,
          name: `numa-${numa}`,
          parent: root,
          inventories: {
            VCPU: { total: 4, allocation_ratio: 4 },
            MEMORY_MB: { total: 2048, min_unit: 256, max_unit: 1024, step_size: 256 },
          },
        },
        { uuid: crypto.randomUUID(), name: 'leaf', parent: numa, inventories: { FPGA: { total: 1 } } },
        { uuid: crypto.randomUUID(), name: 'bare', parent: root },
      ],
    ];
    const viaApi = await makeTestApp();
    const direct = await makeTestApp();
    opened.push(viaApi, direct);
    const api = new PlacementClient('http://bench.test', 'admin', '1.36', 10_000, (input, init) =>
      Promise.resolve(viaApi.app.fetch(new Request(input, init))),
    );
    await httpLoad(api, cloud, 4);
    await directLoad(direct.deps.store.client, cloud);
    const expected = await dump(viaApi);
    expect((expected as { providers: unknown[] }).providers).toHaveLength(9);
    expect(await dump(direct)).toEqual(expected);
  });
});
