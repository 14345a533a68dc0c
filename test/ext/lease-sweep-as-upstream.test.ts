// An expired lease releases a consumer "exactly as DELETE /allocations/{consumer}
// would" (docs/extensions.md), and DELETE is upstream's: the same scenario runs on the
// real OpenStack Placement 8.0.0 (Debian's placement-api under uwsgi), where
// the consumer is deleted with DELETE, and on a real `npm start`, where the
// lease sweep releases it. What a client can see afterwards must match:
// provider generations (upstream's AllocationList.delete_all bumps none),
// usages per provider and per project (consumer counts included), the
// consumer's allocations, each provider's allocations, and that the consumer
// is gone (a claim with consumer_generation null is accepted, one with its old
// generation refused).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';
import {
  placementCall,
  startUpstreamPlacement,
  UPSTREAM_PLACEMENT_MISSING,
  type UpstreamPlacement,
} from '../helpers/upstream-placement.js';
import { waitUntil } from '../helpers/wait.js';

const ROOT = 'b1000000-0000-4000-8000-000000000001';
const CHILD = 'b1000000-0000-4000-8000-000000000002';
const LEASED = 'b2000000-0000-4000-8000-000000000001';
const STAYS = 'b2000000-0000-4000-8000-000000000002';
const PROJECT = 'b3000000-0000-4000-8000-000000000001';
const USER = 'b3000000-0000-4000-8000-000000000002';

type Call = (method: string, path: string, body?: unknown, opts?: { expect?: number[] }) => Promise<unknown>;

async function seed(call: Call): Promise<void> {
  await call('POST', '/resource_providers', { name: 'host', uuid: ROOT });
  await call('POST', '/resource_providers', { name: 'host_gpu', uuid: CHILD, parent_provider_uuid: ROOT });
  await call('PUT', `/resource_providers/${ROOT}/inventories`, {
    resource_provider_generation: 0,
    inventories: { VCPU: { total: 16 }, MEMORY_MB: { total: 8192 } },
  });
  await call('PUT', `/resource_providers/${CHILD}/inventories`, { resource_provider_generation: 0, inventories: { VGPU: { total: 4 } } });
  for (const consumer of [LEASED, STAYS]) {
    await call('PUT', `/allocations/${consumer}`, {
      allocations: { [ROOT]: { resources: { VCPU: 2, MEMORY_MB: 1024 } }, [CHILD]: { resources: { VGPU: 1 } } },
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    });
  }
}

/** What a client can see of the scenario's state (timestamps and links aside). */
async function observe(call: Call): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {};
  for (const rp of [ROOT, CHILD]) {
    seen[`generation ${rp}`] = ((await call('GET', `/resource_providers/${rp}`)) as { generation: number }).generation;
    seen[`usages ${rp}`] = await call('GET', `/resource_providers/${rp}/usages`);
    seen[`allocations of ${rp}`] = await call('GET', `/resource_providers/${rp}/allocations`);
  }
  seen['project usages'] = await call('GET', `/usages?project_id=${PROJECT}`);
  for (const consumer of [LEASED, STAYS]) seen[`allocations ${consumer}`] = await call('GET', `/allocations/${consumer}`);
  return seen;
}

/** After the release: is the consumer gone (a fresh claim accepted), and is its old generation refused? */
async function consumerGone(call: Call): Promise<{ oldGeneration: number; fresh: number }> {
  const body = (vgpu: number, generation: number | null) => ({
    allocations: { [CHILD]: { resources: { VGPU: vgpu } } },
    project_id: PROJECT,
    user_id: USER,
    consumer_generation: generation,
    consumer_type: 'INSTANCE',
  });
  const status = async (payload: unknown) => {
    try {
      await call('PUT', `/allocations/${LEASED}`, payload, { expect: [204] });
      return 204;
    } catch (err) {
      return Number(/HTTP (\d+)/.exec(String(err))?.[1]);
    }
  };
  const oldGeneration = await status(body(1, 1));
  const fresh = await status(body(1, null));
  return { oldGeneration, fresh };
}

describeWithPart(UPSTREAM_PLACEMENT_MISSING, "an expired lease releases as upstream's DELETE /allocations/{consumer}", () => {
  let upstream: UpstreamPlacement;
  let ours: ServerProcess;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'lease-upstream-'));
    [upstream, ours] = await Promise.all([
      startUpstreamPlacement(),
      startServer(`file:${join(dir, 'placement.db')}`, { PLACEMENT_WORKERS: '1', JOBS_SWEEP_INTERVAL_MS: '100' }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await ours?.stop();
    await upstream?.stop();
    upstream?.remove();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('leaves what a client sees exactly as upstream leaves it', async () => {
    const onUpstream: Call = (method, path, body, opts) => placementCall(upstream.url, method, path, body, opts);
    const onOurs: Call = (method, path, body, opts) => placementCall(ours.url, method, path, body, opts);
    await seed(onUpstream);
    await seed(onOurs);
    const before = { upstream: await observe(onUpstream), ours: await observe(onOurs) };
    expect(before.ours).toEqual(before.upstream);

    await onUpstream('DELETE', `/allocations/${LEASED}`);
    await onOurs('PUT', `/ext/leases/${LEASED}`, { seconds: 1 });
    // The server's own sweep (every 100 ms) releases it once the second has passed.
    await waitUntil(
      "the server's sweep to release the expired lease's allocations",
      async () => Object.keys(((await onOurs('GET', `/allocations/${LEASED}`)) as { allocations: object }).allocations).length === 0,
      30_000,
      100,
    );
    const after = { upstream: await observe(onUpstream), ours: await observe(onOurs) };
    expect(after.ours).toEqual(after.upstream);
    // Upstream bumps no provider generation when allocations are deleted; neither does the sweep.
    expect(after.ours[`generation ${ROOT}`]).toBe(before.ours[`generation ${ROOT}`]);
    expect(after.ours[`generation ${CHILD}`]).toBe(before.ours[`generation ${CHILD}`]);
    expect(await consumerGone(onOurs)).toEqual(await consumerGone(onUpstream));
    expect(await observe(onOurs)).toEqual(await observe(onUpstream));
  }, 120_000);
});
