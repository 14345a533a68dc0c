// The GPU extensions (docs/extensions-gpu.md) inside workerd against sqld: shared counters (the /ext/ resource,
// claims on both paths, candidates) and ext_first_of, the same routes as
// Node mode. The database is shared with the other worker files: this file
// uses its own resource classes and looks only at its own providers.
import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

function call(method: string, path: string, body?: unknown, version = 'latest'): Promise<Response> {
  const headers: Record<string, string> = {
    'x-auth-token': 'admin',
    accept: 'application/json',
    'openstack-api-version': `placement ${version}`,
  };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return worker.fetch(
    new Request(`http://placement.test${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
}

const owner = () => ({ project_id: crypto.randomUUID(), user_id: crypto.randomUUID(), consumer_type: 'INSTANCE' });

async function providerWith(inventories: Record<string, { total: number }>, parent?: string): Promise<string> {
  const uuid = crypto.randomUUID();
  expect(
    (await call('POST', '/resource_providers', { name: `ext-${uuid}`, uuid, ...(parent ? { parent_provider_uuid: parent } : {}) })).status,
  ).toBe(200);
  expect((await call('PUT', `/resource_providers/${uuid}/inventories`, { resource_provider_generation: 0, inventories })).status).toBe(200);
  return uuid;
}

describe('partitionable GPUs and prioritized alternatives in workerd', () => {
  it('a counter caps any mix of profiles, in candidates and in claims', async () => {
    for (const rc of ['CUSTOM_WK_MIG_3G', 'CUSTOM_WK_MIG_4G'])
      expect((await call('PUT', `/resource_classes/${rc}`, undefined, '1.7')).status).toBeLessThan(300);
    const gpu = await providerWith({ CUSTOM_WK_MIG_3G: { total: 2 }, CUSTOM_WK_MIG_4G: { total: 1 } });
    const put = await call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      resource_provider_generation: 1,
      counters: { compute_slices: 7, memory_slices: 8 },
      consumption: { CUSTOM_WK_MIG_3G: { compute_slices: 3, memory_slices: 4 }, CUSTOM_WK_MIG_4G: { compute_slices: 4, memory_slices: 4 } },
    });
    expect(put.status).toBe(200);
    const fits = async (query: string) => {
      const body = (await (await call('GET', `/allocation_candidates?${query}`)).json()) as {
        allocation_requests: { allocations: Record<string, unknown> }[];
      };
      return body.allocation_requests.some((r) => gpu in r.allocations);
    };
    expect(await fits('resources=CUSTOM_WK_MIG_3G:2')).toBe(true);
    // The one-batch claim (new consumer) and the ordinary path (POST) both apply the counters.
    expect(
      (
        await call('PUT', `/allocations/${crypto.randomUUID()}`, {
          allocations: { [gpu]: { resources: { CUSTOM_WK_MIG_4G: 1 } } },
          consumer_generation: null,
          ...owner(),
        })
      ).status,
    ).toBe(204);
    expect(await fits('resources=CUSTOM_WK_MIG_3G:1')).toBe(true);
    expect(await fits('resources=CUSTOM_WK_MIG_3G:2')).toBe(false);
    const refused = await call('PUT', `/allocations/${crypto.randomUUID()}`, {
      allocations: { [gpu]: { resources: { CUSTOM_WK_MIG_3G: 2 } } },
      consumer_generation: null,
      ...owner(),
    });
    expect(refused.status).toBe(409);
    const posted = await call('POST', '/allocations', {
      [crypto.randomUUID()]: { allocations: { [gpu]: { resources: { CUSTOM_WK_MIG_3G: 2 } } }, consumer_generation: null, ...owner() },
    });
    expect(posted.status).toBe(409);
    const view = (await (await call('GET', `/ext/resource_providers/${gpu}/counters`)).json()) as { load: Record<string, number> };
    expect(view.load).toEqual({ compute_slices: 4, memory_slices: 4 });
    // Counters off again: the other files share this database, and a cloud with counters reads
    // them in one more round trip (test/worker/placement.test.ts counts a cloud without).
    const { resource_provider_generation } = (await (await call('GET', `/ext/resource_providers/${gpu}/counters`)).json()) as {
      resource_provider_generation: number;
    };
    const off = await call('PUT', `/ext/resource_providers/${gpu}/counters`, {
      resource_provider_generation,
      counters: {},
      consumption: {},
    });
    expect(off.status).toBe(200);
    expect(await fits('resources=CUSTOM_WK_MIG_3G:2')).toBe(true);
  });

  it('ext_first_of: each host offers its most preferred alternative', async () => {
    for (const rc of ['CUSTOM_WK_H100', 'CUSTOM_WK_T4'])
      expect((await call('PUT', `/resource_classes/${rc}`, undefined, '1.7')).status).toBeLessThan(300);
    const both = await providerWith({ CUSTOM_WK_H100: { total: 1 }, CUSTOM_WK_T4: { total: 1 } });
    const t4 = await providerWith({ CUSTOM_WK_T4: { total: 1 } });
    const res = await call(
      'GET',
      '/allocation_candidates?resources_H=CUSTOM_WK_H100:1&resources_T=CUSTOM_WK_T4:1&group_policy=none&ext_first_of=_H,_T',
    );
    expect(res.status).toBe(200);
    const body = (await res.json()) as { allocation_requests: { mappings: Record<string, string[]> }[] };
    const mine = body.allocation_requests.filter((r) => [both, t4].includes(Object.values(r.mappings)[0]![0]!));
    expect(mine.map((r) => r.mappings).sort((a, b) => Object.keys(a)[0]!.localeCompare(Object.keys(b)[0]!))).toEqual([
      { _H: [both] },
      { _T: [t4] },
    ]);
  });
});
