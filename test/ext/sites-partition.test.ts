// Site mode against a real primary (sqld), the site's link to it held and
// resumed (docs/sites.md): cut off, the site grants claims within its slice
// from its local file and refuses those beyond it with slice_exhausted, while
// the primary never gets the slice; what only the primary decides is 503.
// Resumed, the journal replays with no conflict, and a replay twice is once.
import { createClient } from '@libsql/client';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SITE_STATE } from '../../src/ext/sites/runtime.js';
import { instanceClaim } from '../helpers/claims.js';
import { type SitesCloud, startSitesCloud } from '../helpers/sites.js';
import { waitUntil } from '../helpers/wait.js';

const AGG_A = 'aaaaaaaa-0000-4000-8000-0000000000a1';

let cloud: SitesCloud;
beforeAll(async () => {
  cloud = await startSitesCloud({ link: true });
});
afterAll(() => cloud?.close());

const PRIMARY = 0;
const call = (at: number, method: string, path: string, body?: unknown) => cloud.call(at, method, path, body);
const provider = (vcpu: number, aggregate?: string) => cloud.provider(vcpu, aggregate);
const used = (at: number, host: string) => cloud.used(at, host);

describe('a site cut off from the primary', () => {
  it('claims within its slice, refuses beyond it, and replays its journal once healed', async () => {
    const host = await provider(16, AGG_A);
    const elsewhere = await provider(16);
    const put = await call(PRIMARY, 'PUT', '/ext/sites/site-a', { aggregate: AGG_A, capacity: { [host]: { resources: { VCPU: 8 } } } });
    expect(put.status, await put.clone().text()).toBe(200);

    const SITE = await cloud.startSite('site-a', {
      PLACEMENT_SITE_PARTITION_AFTER_MS: '800',
      PLACEMENT_SITE_PROBE_MS: '150',
      PLACEMENT_DB_READ_TIMEOUT_MS: '400',
      PLACEMENT_DB_WRITE_TIMEOUT_MS: '400',
    });
    const site = cloud.apps[SITE]!.deps;
    const siteStatus = () => cloud.siteStatus(SITE);
    await waitUntil('the site has read its slice', async () => (await siteStatus()).slice[host]?.resources.VCPU === 8);
    expect((await siteStatus()).link).toBe('connected');
    // Connected, a claim goes to the primary, drawn from the slice; one off the slice is an ordinary one.
    const connected = crypto.randomUUID();
    expect((await call(SITE, 'PUT', `/allocations/${connected}`, instanceClaim(host, { VCPU: 1 }))).status).toBe(204);
    expect((await call(SITE, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(elsewhere, { VCPU: 1 }))).status).toBe(204);
    expect(await used(PRIMARY, host)).toBe(1);
    expect((await siteStatus()).slice_remaining[host]!.resources.VCPU).toBe(7);

    cloud.link!.hold();
    await waitUntil('the site counts itself partitioned', async () => (await siteStatus()).link === 'partitioned');
    const metrics = async () => (await call(SITE, 'GET', '/metrics')).text();
    await waitUntil('/metrics shows the partition', async () =>
      /^placement_ext_site_partitioned\{site="site-a"\} 1$/m.test(await metrics()),
    );
    const ready = await call(SITE, 'GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(await ready.text()).toMatch(/partitioned/);

    // Within the slice: granted locally; beyond: slice_exhausted, distinct from capacity refusals.
    const mine: string[] = [connected];
    for (let i = 0; i < 7; i++) {
      const consumer = crypto.randomUUID();
      const res = await call(SITE, 'PUT', `/allocations/${consumer}`, instanceClaim(host, { VCPU: 1 }));
      expect(res.status, await res.clone().text()).toBe(204);
      mine.push(consumer);
    }
    const beyond = await call(SITE, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(host, { VCPU: 1 }));
    expect(beyond.status).toBe(409);
    expect(((await beyond.json()) as { errors: { code: string }[] }).errors[0]!.code).toBe('placement.ext.slice_exhausted');
    // What only the primary decides: 503 naming the partition.
    const outside = await call(SITE, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(elsewhere, { VCPU: 1 }));
    expect(outside.status).toBe(503);
    const outsideBody = (await outside.json()) as { errors: { code: string; detail: string }[] };
    expect(outsideBody.errors[0]!.code).toBe('placement.ext.site_partitioned');
    expect(outsideBody.errors[0]!.detail).toMatch(/cut off from the primary/);
    const inventory = await call(SITE, 'PUT', `/resource_providers/${host}/inventories`, {
      resource_provider_generation: 2,
      inventories: { VCPU: { total: 32 } },
    });
    expect(inventory.status).toBe(503);
    // Deletes of its own consumers, and reads of them, are local.
    expect((await call(SITE, 'DELETE', `/allocations/${mine.pop()}`)).status).toBe(204);
    const read = await call(SITE, 'GET', `/allocations/${connected}`);
    expect(read.status).toBe(200);
    expect(
      ((await read.json()) as { allocations: Record<string, { resources: { VCPU: number } }> }).allocations[host]!.resources.VCPU,
    ).toBe(1);
    const again = crypto.randomUUID();
    expect((await call(SITE, 'POST', '/allocations', { [again]: instanceClaim(host, { VCPU: 1 }) })).status).toBe(204);
    mine.push(again);
    expect((await siteStatus()).slice_remaining[host]!.resources.VCPU).toBe(0);
    expect((await siteStatus()).journal_depth).toBe(9);

    // The primary, meanwhile, never gets the slice: 16 - 8 held = 8 more, then 409.
    let granted = 0;
    for (;;) {
      const res = await call(PRIMARY, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(host, { VCPU: 1 }));
      if (res.status !== 204) {
        expect(res.status).toBe(409);
        break;
      }
      granted += 1;
    }
    expect(granted).toBe(8);

    cloud.link!.resume();
    await waitUntil('the journal is replayed and the site connected', async () => {
      const s = await siteStatus();
      return s.link === 'connected' && s.journal_depth === 0;
    });
    const healed = await siteStatus();
    expect(healed.replay_conflicts).toBe(0);
    expect(healed.last_replayed_seq).toBe(9);
    expect((await call(SITE, 'GET', '/readyz')).status).toBe(200);
    await waitUntil('/metrics shows the site connected', async () =>
      /^placement_ext_site_partitioned\{site="site-a"\} 0$/m.test(await metrics()),
    );
    const after = await metrics();
    expect(after).toMatch(/^placement_ext_site_journal_depth\{site="site-a"\} 0$/m);
    expect(after).toMatch(/^placement_ext_site_last_replayed_seq\{site="site-a"\} 9$/m);
    // Every acknowledged claim is on the primary, drawn from the slice: capacity exactly used.
    expect(await used(PRIMARY, host)).toBe(16);
    for (const consumer of mine) {
      const res = (await (await call(PRIMARY, 'GET', `/allocations/${consumer}`)).json()) as { allocations: Record<string, unknown> };
      expect(Object.keys(res.allocations)).toEqual([host]);
    }

    // A replay twice is a replay once: the entries made pending again are found applied.
    const runtime = site.extensions.state(SITE_STATE)!;
    expect((await runtime.local.journal()).map((e) => e.outcome)).toEqual(Array(9).fill('applied'));
    // As a crash between the primary's commit and the local mark leaves them: pending again.
    const file = createClient({ url: `file:${join(cloud.dir, 'site-a.db')}` });
    await file.execute('UPDATE site_journal SET replayed_at = NULL, outcome = NULL');
    file.close();
    await waitUntil('the entries are replayed again', async () => (await runtime.local.depth()) === 0);
    expect((await runtime.local.journal()).map((e) => e.outcome)).toEqual(Array(9).fill('duplicate'));
    expect(await used(PRIMARY, host)).toBe(16);
    expect((await siteStatus()).replay_conflicts).toBe(0);
  });
});
