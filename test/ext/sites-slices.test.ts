// /ext/sites/{site} on the primary (docs/sites.md): a site's capacity slice is
// an open-ended hold owned by the site, on providers of its aggregate; no
// ordinary claim and no other site's slice can take it, candidates do not
// offer it, and it is refused where it does not fit beside allocations.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { candidates, claim } from './helpers.js';

const AGG_A = 'aaaaaaaa-0000-4000-8000-00000000000a';
const AGG_B = 'bbbbbbbb-0000-4000-8000-00000000000b';

let t: TestApp;
let edge: string;
let core: string;

beforeEach(async () => {
  t = await makeTestApp();
  edge = await provider(t, { inventory: { VCPU: { total: 16 } }, aggregates: [AGG_A] });
  core = await provider(t, { inventory: { VCPU: { total: 16 } }, aggregates: [AGG_B] });
});
afterEach(() => t.close());

const slice = (rp: string, vcpu: number, aggregate = AGG_A) => ({ aggregate, capacity: { [rp]: { resources: { VCPU: vcpu } } } });

describe("a site's slice on the primary", () => {
  it('is set, read back, and kept from every ordinary claim and from candidates', async () => {
    const put = await t.call('PUT', '/ext/sites/site-a', { body: slice(edge, 10) });
    expect(put.status, await put.clone().text()).toBe(200);
    const body = (await put.json()) as { site: string; generation: number; capacity: unknown; hold_uuid: string };
    expect(body).toMatchObject({ site: 'site-a', generation: 1, capacity: { [edge]: { resources: { VCPU: 10 } } } });
    const got = await t.call('GET', '/ext/sites/site-a');
    expect(await got.json()).toEqual(body);
    // the hold behind it is the site's, without an end
    const hold = (await (await t.call('GET', `/ext/holds/${body.hold_uuid}`)).json()) as { project_id: string; end: string };
    expect(hold).toMatchObject({ project_id: 'site:site-a', end: '9999-12-31T23:59:59.999Z' });

    // 16 - 10 held: an ordinary claim of 7 is refused, 6 granted
    expect((await claim(t, { [edge]: { resources: { VCPU: 7 } } })).status).toBe(409);
    expect((await claim(t, { [edge]: { resources: { VCPU: 6 } } })).status).toBe(204);
    expect(await candidates(t, 'resources=VCPU:1&member_of=' + AGG_A)).toEqual([]);
  });

  it('is not given to another site, and is refused where it does not fit', async () => {
    expect((await t.call('PUT', '/ext/sites/site-a', { body: slice(edge, 10) })).status).toBe(200);
    const other = await t.call('PUT', '/ext/sites/site-b', { body: slice(edge, 7) });
    expect(other.status).toBe(409);
    expect((await errorOf(other)).code).toBe('placement.ext.hold_unsatisfiable');
    expect((await t.call('PUT', '/ext/sites/site-b', { body: slice(edge, 6) })).status).toBe(200);
  });

  it('is replaced by a second PUT (the same hold, a new generation), shrinking or growing within capacity', async () => {
    const first = (await (await t.call('PUT', '/ext/sites/site-a', { body: slice(edge, 10) })).json()) as { hold_uuid: string };
    const second = await t.call('PUT', '/ext/sites/site-a', { body: slice(edge, 4) });
    expect(await second.json()).toMatchObject({
      hold_uuid: first.hold_uuid,
      generation: 2,
      capacity: { [edge]: { resources: { VCPU: 4 } } },
    });
    expect((await claim(t, { [edge]: { resources: { VCPU: 12 } } })).status).toBe(204);
  });

  it('refuses providers outside the aggregate, bad names and bodies, and answers 404 for an unknown site', async () => {
    const outside = await t.call('PUT', '/ext/sites/site-a', { body: slice(core, 1) });
    expect(outside.status).toBe(400);
    expect((await errorOf(outside)).detail).toContain('not a member');
    expect((await t.call('PUT', '/ext/sites/site-a', { body: { aggregate: AGG_A } })).status).toBe(400);
    expect((await t.call('PUT', '/ext/sites/-bad', { body: slice(edge, 1) })).status).toBe(400);
    expect((await t.call('GET', '/ext/sites/nowhere')).status).toBe(404);
    expect((await t.call('GET', '/ext/holds')).status).toBe(200);
    expect(((await (await t.call('GET', '/ext/holds')).json()) as { holds: unknown[] }).holds).toEqual([]);
  });
});
