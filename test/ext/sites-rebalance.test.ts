// Rebalancing while connected (demarcation, docs/sites.md): a site whose
// slice has less than the low watermark left asks the primary for `step`
// more; one with more than the high watermark left gives `step` back, never
// below what is drawn; each an edit of its hold at the generation it read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceClaim } from '../helpers/claims.js';
import { type SitesCloud, startSitesCloud } from '../helpers/sites.js';
import { waitUntil } from '../helpers/wait.js';

const AGG = 'aaaaaaaa-0000-4000-8000-0000000000b1';

let cloud: SitesCloud;
beforeAll(async () => {
  cloud = await startSitesCloud();
});
afterAll(() => cloud?.close());

const call = (at: number, method: string, path: string, body?: unknown) => cloud.call(at, method, path, body);

const sliceOnPrimary = async () =>
  (await (await call(0, 'GET', '/ext/sites/site-r')).json()) as {
    hold_uuid: string;
    generation: number;
    capacity: Record<string, { resources: { VCPU: number } }>;
  };

describe('a connected site', () => {
  it('asks for more below the low watermark and gives back above the high one', async () => {
    const host = await cloud.provider(16, AGG);
    expect((await call(0, 'PUT', '/ext/sites/site-r', { aggregate: AGG, capacity: { [host]: { resources: { VCPU: 4 } } } })).status).toBe(
      200,
    );
    // The slice all drawn before the site starts (a claim naming the site's hold draws from it).
    const hold = (await sliceOnPrimary()).hold_uuid;
    const consumers: string[] = [];
    for (let i = 0; i < 4; i++) {
      consumers.push(crypto.randomUUID());
      const res = await call(0, 'PUT', `/allocations/${consumers[i]}?ext_hold=${hold}`, instanceClaim(host, { VCPU: 1 }));
      expect(res.status, await res.clone().text()).toBe(204);
    }
    await cloud.startSite('site-r', {
      PLACEMENT_SITE_PROBE_MS: '100',
      PLACEMENT_SITE_LOW_WATERMARK: '0.25',
      PLACEMENT_SITE_HIGH_WATERMARK: '0.75',
      PLACEMENT_SITE_REBALANCE_STEP: '2',
    });
    // 4 of 4 drawn, nothing left (below 25 %): it asks for 2 more (2 of 6 left: within the marks).
    await waitUntil('the slice has grown', async () => (await sliceOnPrimary()).capacity[host]!.resources.VCPU === 6);
    const grown = await sliceOnPrimary();
    // Every consumer is drawn from the slice on the primary: the primary sees 6 held, 4 of them drawn.
    let granted = 0;
    for (;;) {
      const res = await call(0, 'PUT', `/allocations/${crypto.randomUUID()}`, instanceClaim(host, { VCPU: 1 }));
      if (res.status !== 204) break;
      granted += 1;
    }
    expect(granted).toBe(10);
    // Released: the site gives its slice back, step by step, down to 1 (what is drawn, at least 1).
    for (const consumer of consumers) expect((await call(1, 'DELETE', `/allocations/${consumer}`)).status).toBe(204);
    await waitUntil('the slice has shrunk', async () => (await sliceOnPrimary()).capacity[host]!.resources.VCPU === 1);
    expect((await sliceOnPrimary()).generation).toBeGreaterThan(grown.generation);
  });
});
