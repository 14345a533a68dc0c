// Per-project limit slices of an edge site against real parts (docs/sites.md):
// a sqld primary with project limits on, a site whose link to it is held. Its
// slice of a project's limit is taken out of the limit on the primary, which
// refuses to spend it; cut off, the site claims within both its capacity slice
// and the project's slice and refuses beyond with slice_exhausted; healed, the
// replay turns the slice into the project's usage, with no conflict and the
// project never over its limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceClaim } from '../helpers/claims.js';
import { type SitesCloud, startSitesCloud } from '../helpers/sites.js';
import { waitUntil } from '../helpers/wait.js';

const AGG = 'aaaaaaaa-0000-4000-8000-0000000000c1';
const PROJECT = 'a1b2c3d4a1b2c3d4a1b2c3d4a1b2c3d4';
const OTHER = 'b1b2c3d4a1b2c3d4a1b2c3d4a1b2c3d4';
const LIMIT = 10;

let cloud: SitesCloud;
beforeAll(async () => {
  cloud = await startSitesCloud({
    link: true,
    env: {
      PLACEMENT_LIMITS: 'static',
      PLACEMENT_LIMITS_JSON: JSON.stringify({ projects: { [PROJECT]: { 'class:VCPU': LIMIT } } }),
    },
  });
});
afterAll(() => cloud?.close());

const PRIMARY = 0;
const claimOf = (host: string, project: string) => ({ ...instanceClaim(host, { VCPU: 1 }), project_id: project });
const codeOf = async (res: Response) => ((await res.json()) as { errors: { code: string; detail: string }[] }).errors[0]!;
const limitUsage = async () =>
  ((await (await cloud.call(PRIMARY, 'GET', `/ext/limits?project_id=${PROJECT}`)).json()) as { limits: { VCPU: { usage: number } } }).limits
    .VCPU.usage;

describe("a site's slice of a project's limit", () => {
  it('is refused where the limit has not that much left, or where the project has no limit', async () => {
    const host = await cloud.provider(16, AGG);
    const capacity = { [host]: { resources: { VCPU: 2 } } };
    const over = await cloud.call(PRIMARY, 'PUT', '/ext/sites/site-over', {
      aggregate: AGG,
      capacity,
      limits: { [PROJECT]: { VCPU: 11 } },
    });
    expect(over.status).toBe(409);
    expect((await codeOf(over)).code).toBe('placement.ext.limit_exceeded');
    const unlimited = await cloud.call(PRIMARY, 'PUT', '/ext/sites/site-over', {
      aggregate: AGG,
      capacity,
      limits: { [OTHER]: { VCPU: 1 } },
    });
    expect(unlimited.status).toBe(400);
    expect((await codeOf(unlimited)).detail).toMatch(/no limit of 'VCPU'/);
    const malformed = await cloud.call(PRIMARY, 'PUT', '/ext/sites/site-over', {
      aggregate: AGG,
      capacity,
      limits: { [PROJECT]: { VCPU: -1 } },
    });
    expect(malformed.status).toBe(400);
  });

  it('is spent only by the site: cut off, it refuses beyond it, the primary never gets it, the replay makes it usage', async () => {
    const host = await cloud.provider(16, AGG);
    const elsewhere = await cloud.provider(32);
    const put = await cloud.call(PRIMARY, 'PUT', '/ext/sites/site-l', {
      aggregate: AGG,
      capacity: { [host]: { resources: { VCPU: 8 } } },
      limits: { [PROJECT]: { VCPU: 4 } },
    });
    expect(put.status, await put.clone().text()).toBe(200);
    expect(((await put.json()) as { limits: unknown }).limits).toEqual({ [PROJECT]: { VCPU: 4 } });
    // A second site's slice of the same project cannot take more than the limit has left beside it.
    const second = await cloud.call(PRIMARY, 'PUT', '/ext/sites/site-m', {
      aggregate: AGG,
      capacity: { [host]: { resources: { VCPU: 1 } } },
      limits: { [PROJECT]: { VCPU: LIMIT - 4 + 1 } },
    });
    expect(second.status).toBe(409);

    const SITE = await cloud.startSite('site-l', {
      PLACEMENT_SITE_PARTITION_AFTER_MS: '800',
      PLACEMENT_SITE_PROBE_MS: '150',
      PLACEMENT_DB_READ_TIMEOUT_MS: '400',
      PLACEMENT_DB_WRITE_TIMEOUT_MS: '400',
    });
    await waitUntil('the site has read its limit slice', async () => (await cloud.siteStatus(SITE)).limit_slices[PROJECT]?.VCPU === 4);

    cloud.link!.hold();
    await waitUntil('the site counts itself partitioned', async () => (await cloud.siteStatus(SITE)).link === 'partitioned');
    // Within the project's slice: granted locally, though the capacity slice has more.
    const mine: string[] = [];
    for (let i = 0; i < 4; i++) {
      const consumer = crypto.randomUUID();
      const res = await cloud.call(SITE, 'PUT', `/allocations/${consumer}`, claimOf(host, PROJECT));
      expect(res.status, await res.clone().text()).toBe(204);
      mine.push(consumer);
    }
    const status = await cloud.siteStatus(SITE);
    expect(status.limit_slices_remaining[PROJECT]!.VCPU).toBe(0);
    expect(status.slice_remaining[host]!.resources.VCPU).toBe(4);
    // Beyond the project's slice: slice_exhausted, naming the project's slice.
    const beyond = await cloud.call(SITE, 'PUT', `/allocations/${crypto.randomUUID()}`, claimOf(host, PROJECT));
    expect(beyond.status).toBe(409);
    const refusal = await codeOf(beyond);
    expect(refusal.code).toBe('placement.ext.slice_exhausted');
    expect(refusal.detail).toMatch(new RegExp(`project '${PROJECT}''s limit slice here has 0 of 4 'VCPU' left`));
    // A project without a limit claims within the capacity slice alone.
    expect((await cloud.call(SITE, 'PUT', `/allocations/${crypto.randomUUID()}`, claimOf(host, OTHER))).status).toBe(204);

    // The primary, meanwhile, refuses to spend the slice: the project has LIMIT - 4 left there.
    let granted = 0;
    for (;;) {
      const res = await cloud.call(PRIMARY, 'PUT', `/allocations/${crypto.randomUUID()}`, claimOf(elsewhere, PROJECT));
      if (res.status !== 204) {
        expect(res.status).toBe(409);
        const held = await codeOf(res);
        expect(held.code).toBe('placement.ext.limit_exceeded');
        expect(held.detail).toMatch(/held for edge sites/);
        break;
      }
      granted += 1;
    }
    expect(granted).toBe(LIMIT - 4);

    cloud.link!.resume();
    await waitUntil('the journal is replayed and the site connected', async () => {
      const s = await cloud.siteStatus(SITE);
      return s.link === 'connected' && s.journal_depth === 0;
    });
    expect((await cloud.siteStatus(SITE)).replay_conflicts).toBe(0);
    // The slice became the project's usage: exactly its limit, never over it.
    expect(await limitUsage()).toBe(LIMIT);
    for (const consumer of mine) {
      const res = (await (await cloud.call(PRIMARY, 'GET', `/allocations/${consumer}`)).json()) as { project_id: string };
      expect(res.project_id).toBe(PROJECT);
    }
    // What the site's consumer frees goes back to its slice, not to the primary's claims.
    expect((await cloud.call(PRIMARY, 'DELETE', `/allocations/${mine[0]}`)).status).toBe(204);
    expect(await limitUsage()).toBe(LIMIT - 1);
    const taken = await cloud.call(PRIMARY, 'PUT', `/allocations/${crypto.randomUUID()}`, claimOf(elsewhere, PROJECT));
    expect(taken.status).toBe(409);
    await waitUntil('the site has its slice back', async () => (await cloud.siteStatus(SITE)).limit_slices_remaining[PROJECT]?.VCPU === 1);
    expect((await cloud.call(SITE, 'PUT', `/allocations/${crypto.randomUUID()}`, claimOf(host, PROJECT))).status).toBe(204);
    expect(await limitUsage()).toBe(LIMIT);
  });
});
