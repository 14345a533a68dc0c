// The extensions inside workerd against sqld: headroom, a taint taking a
// device out of candidates (and ext_tolerate bringing it back), and a lease
// released by the Worker's scheduled handler (the cron sweep). The database is
// shared with the other worker files: everything here uses its own providers.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import workerModule from '../../src/entry/worker.js';
import { adminCall, uniqueSuffix as suffix } from './admin-call.js';
import { instanceClaim } from '../helpers/claims.js';

const call = adminCall;

/** A root with a CUSTOM class of its own (so other files' providers never match) and `gpus` children. */
async function host(rc: string, gpus: number): Promise<{ root: string; children: string[] }> {
  expect((await call('PUT', `/resource_classes/${rc}`)).status).toBeLessThan(300);
  const root = crypto.randomUUID();
  expect((await call('POST', '/resource_providers', { name: `ext-${root}`, uuid: root })).status).toBe(200);
  const children: string[] = [];
  for (let i = 0; i < gpus; i += 1) {
    const child = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `ext-${child}`, uuid: child, parent_provider_uuid: root })).status).toBe(200);
    const inv = await call('PUT', `/resource_providers/${child}/inventories`, {
      resource_provider_generation: 0,
      inventories: { [rc]: { total: 2 } },
    });
    expect(inv.status).toBe(200);
    children.push(child);
  }
  return { root, children };
}

describe('extensions in workerd', { timeout: 120_000 }, () => {
  it('headroom and taints', async () => {
    const rc = `CUSTOM_EXT_${suffix()}`;
    const { root, children } = await host(rc, 2);
    const headroom = (await (await call('GET', `/ext/headroom?resources=${rc}:1`)).json()) as { total: number; trees: unknown[] };
    expect(headroom).toEqual({ total: 4, trees: [{ root_provider_uuid: root, count: 4 }] });
    const gen = (
      (await (await call('GET', `/ext/resource_providers/${children[0]}/taints`)).json()) as { resource_provider_generation: number }
    ).resource_provider_generation;
    const put = await call('PUT', `/ext/resource_providers/${children[0]}/taints`, {
      resource_provider_generation: gen,
      taints: [{ key: 'unhealthy', effect: 'NoSchedule' }],
    });
    expect(put.status).toBe(200);
    const count = async (query: string) =>
      ((await (await call('GET', `/allocation_candidates?${query}`)).json()) as { allocation_requests: unknown[] }).allocation_requests
        .length;
    expect(await count(`resources=${rc}:1`)).toBe(1);
    expect(await count(`resources=${rc}:1&ext_tolerate=unhealthy`)).toBe(2);
    expect(((await (await call('GET', `/ext/headroom?resources=${rc}:1`)).json()) as { total: number }).total).toBe(2);
    const drain = (await (await call('GET', '/ext/taints')).json()) as { taints: { resource_provider_uuid: string }[] };
    expect(drain.taints.some((d) => d.resource_provider_uuid === children[0])).toBe(true);
  });

  it('a lease expires and the scheduled handler releases the allocations', async () => {
    const rc = `CUSTOM_EXT_${suffix()}`;
    const { children } = await host(rc, 1);
    const consumer = crypto.randomUUID();
    const claim = await call('PUT', `/allocations/${consumer}`, instanceClaim(children[0]!, { [rc]: 1 }));
    expect(claim.status).toBe(204);
    expect((await call('PUT', `/ext/leases/${consumer}`, { seconds: 1 })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The cron trigger, as workerd calls the module's scheduled handler; its sweeps run under
    // waitUntil, so wait on that context. (The exports stub's scheduled() hands the handler a
    // context of its own and returns before the sweep ends: the reads below then raced it.)
    const ctx = createExecutionContext();
    await workerModule.scheduled(createScheduledController({ cron: '* * * * *', scheduledTime: Date.now() }), env as never, ctx);
    await waitOnExecutionContext(ctx);
    // The capacity is free again (usage read straight from the allocations table).
    const usages = (await (await call('GET', `/resource_providers/${children[0]}/usages`)).json()) as { usages: Record<string, number> };
    expect(usages.usages).toEqual({ [rc]: 0 });
    expect((await call('GET', `/ext/leases/${consumer}`)).status).toBe(404);
    const audit = (await (await call('GET', '/diagnostics/audit')).json()) as { extensions: { leases: { released: number } } };
    expect(audit.extensions.leases.released).toBeGreaterThanOrEqual(1);
  });
});
