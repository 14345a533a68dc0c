// The two auth strategies and the policy modes, seen from a client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

describe('token strategy', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'true',
      PLACEMENT_AUTH_TOKENS: JSON.stringify({
        's3cret-admin': { roles: ['admin'], project_id: 'ops' },
        's3cret-nova': { roles: ['service'], project_id: 'service' },
        's3cret-reader': { roles: ['reader'], project_id: 'tenant-a' },
      }),
    });
  });
  afterAll(() => t.close());

  const get = (path: string, token?: string) => t.app.request(path, { headers: token ? { 'x-auth-token': token } : {} });

  it('maps configured tokens to roles; unknown or missing tokens get 401', async () => {
    expect((await get('/resource_providers', 's3cret-admin')).status).toBe(200);
    expect((await get('/resource_providers', 's3cret-nova')).status).toBe(200);
    expect((await get('/resource_providers', 'admin')).status).toBe(401);
    expect((await get('/resource_providers')).status).toBe(401);
    expect((await get('/')).status).toBe(200);
  });

  it('looks tokens up as configured keys only: inherited property names get 401', async () => {
    for (const token of ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 's3cret-admi', 's3cret-admin2']) {
      expect((await get('/resource_providers', token)).status, token).toBe(401);
      const accel = await t.app.request('/accelerator/v2/device_profiles', { headers: { 'x-auth-token': token } });
      expect(accel.status, token).toBe(401);
      const bearer = await t.app.request('/resource_providers', { headers: { authorization: `Bearer ${token}` } });
      expect(bearer.status, token).toBe(401);
    }
  });

  it('accepts a bearer Authorization header', async () => {
    const res = await t.app.request('/resource_providers', { headers: { authorization: 'Bearer s3cret-admin' } });
    expect(res.status).toBe(200);
  });

  it('applies secure defaults: a project reader sees only its own usages', async () => {
    expect((await get('/resource_providers', 's3cret-reader')).status).toBe(403);
    const own = await t.app.request('/usages?project_id=tenant-a', {
      headers: { 'x-auth-token': 's3cret-reader', 'openstack-api-version': 'placement 1.9' },
    });
    expect(own.status).toBe(200);
    const other = await t.app.request('/usages?project_id=tenant-b', {
      headers: { 'x-auth-token': 's3cret-reader', 'openstack-api-version': 'placement 1.9' },
    });
    expect(other.status).toBe(403);
  });
});

describe('noauth2 with secure defaults', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await makeTestApp({ PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'true' });
  });
  afterAll(() => t.close());

  it('lets only the service role reshape, and refuses system-scoped tokens', async () => {
    const reshape = (roles: string) =>
      t.app.request('/reshaper', {
        method: 'POST',
        headers: {
          'x-auth-token': 'user',
          'x-roles': roles,
          'openstack-api-version': 'placement 1.39',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ inventories: {}, allocations: {} }),
      });
    expect((await reshape('admin')).status).toBe(403);
    expect((await reshape('service')).status).not.toBe(403);
    const system = await t.app.request('/resource_providers', {
      headers: { 'x-auth-token': 'user', 'x-roles': 'admin', 'openstack-system-scope': 'all' },
    });
    expect(system.status).toBe(403);
  });
});
