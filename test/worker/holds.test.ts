// Holds inside workerd against sqld (docs/holds.md): held capacity left out of
// stock candidates and offered to a request that ends before the window
// (ext_until), an outsider's lasting claim refused, the hold's project drawing
// from it (ext_hold), and the Worker's scheduled handler (the cron sweep)
// ending the hold and releasing what was drawn. The database is shared with
// the other worker files: everything here uses its own class and providers.
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import workerModule from '../../src/entry/worker.js';
import { adminCall as call, claimOfClass, hostOfOwnClass } from './admin-call.js';

const at = (ms: number) => new Date(ms).toISOString();

describe('holds in workerd', { timeout: 120_000 }, () => {
  it('backfill, a refused outsider, drawing, and the cron ending the hold', async () => {
    const { rc, host } = await hostOfOwnClass('HOLD', 8);
    const project = crypto.randomUUID();
    const claim = (resources: number, owner: string, query = '', consumer = crypto.randomUUID()) =>
      claimOfClass(host, rc, resources, owner, consumer, query);
    expect((await claim(1, project)).status).toBe(204);
    const start = Date.now() + 3600_000;
    const future = await call('POST', '/ext/holds', {
      project_id: project,
      start: at(start),
      end: at(start + 3600_000),
      allocations: { [host]: { resources: { [rc]: 6 } } },
    });
    expect(future.status).toBe(201);
    const count = async (query: string) =>
      ((await (await call('GET', `/allocation_candidates?${query}`)).json()) as { allocation_requests: unknown[] }).allocation_requests
        .length;
    expect(await count(`resources=${rc}:2`)).toBe(0);
    expect(await count(`resources=${rc}:2&ext_until=600`)).toBe(1);
    expect((await claim(2, crypto.randomUUID())).status).toBe(409);
    expect((await claim(2, crypto.randomUUID(), '?ext_until=600')).status).toBe(204);
    expect((await call('DELETE', `/ext/holds/${((await future.json()) as { uuid: string }).uuid}`)).status).toBe(204);

    // A window that has begun and ends in a moment: draw from it, then let the cron end it.
    const end = Date.now() + 1500;
    const now = await call('POST', '/ext/holds', {
      project_id: project,
      start: at(Date.now() - 1000),
      end: at(end),
      allocations: { [host]: { resources: { [rc]: 5 } } },
    });
    expect(now.status).toBe(201);
    const id = ((await now.json()) as { uuid: string }).uuid;
    const drawn = crypto.randomUUID();
    expect((await claim(3, project, `?ext_hold=${id}`, drawn)).status).toBe(204);
    // 1 lasting + 2 backfilled + 5 held (3 of them drawn) = 8: nothing left for an outsider.
    expect((await claim(1, crypto.randomUUID())).status).toBe(409);
    while (Date.now() <= end) await new Promise((resolve) => setTimeout(resolve, 50));
    const ctx = createExecutionContext();
    await workerModule.scheduled(createScheduledController({ cron: '* * * * *', scheduledTime: Date.now() }), env as never, ctx);
    await waitOnExecutionContext(ctx);
    expect((await call('GET', `/ext/holds/${id}`)).status).toBe(404);
    const left = (await (await call('GET', `/allocations/${drawn}`)).json()) as { allocations: object };
    expect(left.allocations).toEqual({});
  });
});
