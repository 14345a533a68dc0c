import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

describe('version document and negotiation', () => {
  it('serves the root without a token at 1.0 by default', async () => {
    const res = await t.app.request('/');
    expect(res.status).toBe(200);
    expect(res.headers.get('openstack-api-version')).toBe('placement 1.0');
    expect(res.headers.get('vary')).toBe('openstack-api-version');
    expect(res.headers.get('x-openstack-request-id')).toMatch(/^req-[0-9a-f-]{36}$/);
    const body = (await res.json()) as { versions: Record<string, string>[] };
    expect(body.versions[0]).toMatchObject({ id: 'v1.0', min_version: '1.0', max_version: '1.39' });
  });

  it('answers latest with the maximum and sets cache headers from 1.15', async () => {
    const res = await t.call('GET', '/');
    expect(res.headers.get('openstack-api-version')).toBe('placement 1.39');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('last-modified')).toMatch(/GMT$/);
  });

  it('refuses a malformed version with 400 and an unknown one with 406 carrying min/max', async () => {
    const bad = await t.call('GET', '/', { version: 'pony.horse' });
    expect(bad.status).toBe(400);
    const out = await t.call('GET', '/', { version: '1.40' });
    expect(out.status).toBe(406);
    const body = (await out.json()) as { errors: Record<string, string>[] };
    expect(body.errors[0]).toMatchObject({ max_version: '1.39', min_version: '1.0', title: 'Not Acceptable' });
  });

  it('gives 405 with Allow for a wrong method, in the error envelope', async () => {
    const res = await t.call('DELETE', '/');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    const body = (await res.json()) as { errors: Record<string, string>[] };
    expect(body.errors[0].code).toBe('placement.undefined_code');
  });

  it('requires a token outside the root', async () => {
    const res = await t.app.request('/resource_providers');
    expect(res.status).toBe(401);
  });
});

describe('standard names', () => {
  it('syncs every standard resource class at its positional id and every standard trait', async () => {
    const rc = await t.deps.store.client.execute("SELECT id FROM resource_classes WHERE name = 'DISK_GB'");
    expect(Number(rc.rows[0]![0])).toBe(2);
    const traits = await t.deps.store.client.execute('SELECT count(*) FROM traits');
    expect(Number(traits.rows[0]![0])).toBe(377);
  });
});
