// What only a Keystone under the test's control shows: how many times it is
// asked (one validation per new token, shared by concurrent requests, none
// while cached), the bound on the cache, renewal of the service's own token,
// and the configuration check. The fake Keystone is test/helpers/fake-keystone.ts;
// the same behaviour against a real Keystone is openstack-cloud.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keystoneValidator } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { KeystoneUnavailable } from '../../src/http/keystone/client.js';
import { KeystoneTokenValidator } from '../../src/http/keystone/validator.js';
import { FakeKeystone, fakeKeystoneEnv } from '../helpers/fake-keystone.js';
import { passwordCredentials } from '../helpers/keystone-credentials.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const AUTH_URL = 'http://keystone.test:5000/v3';
const VALIDATE = 'GET /v3/auth/tokens';
const PASSWORD_AUTH = 'POST /v3/auth/tokens';

function validatorFor(ks: FakeKeystone, clock: { now: number }, opts: { cacheSeconds?: number; cacheSize?: number } = {}) {
  return new KeystoneTokenValidator(
    {
      authUrl: AUTH_URL,
      credentials: passwordCredentials(),
      cacheSeconds: opts.cacheSeconds ?? 300,
      cacheSize: opts.cacheSize ?? 100,
      timeoutMs: 1000,
      wwwAuthenticateUri: AUTH_URL,
    },
    ks.fetch,
    () => clock.now,
  );
}

describe('Keystone token validation', () => {
  it('asks Keystone once for concurrent requests with one new token, then not while it is cached', async () => {
    const clock = { now: Date.now() };
    const ks = new FakeKeystone(3_600_000, () => clock.now);
    ks.addUser('tok-a', { userId: 'u-a', projectId: 'p-a', roles: ['reader'] });
    const validator = validatorFor(ks, clock);
    const verdicts = await Promise.all(Array.from({ length: 20 }, () => validator.validate('tok-a')));
    expect(verdicts.every((v) => v.valid && v.identity.projectId === 'p-a')).toBe(true);
    expect(ks.count(PASSWORD_AUTH)).toBe(1);
    expect(ks.count(VALIDATE)).toBe(1);
    await validator.validate('tok-a');
    expect(ks.count(VALIDATE)).toBe(1);
    // After the cache time, Keystone is asked again: a revoked token is refused.
    ks.revoke('tok-a');
    clock.now += 299_000;
    expect((await validator.validate('tok-a')).valid).toBe(true);
    clock.now += 2_000;
    expect((await validator.validate('tok-a')).valid).toBe(false);
    expect(ks.count(VALIDATE)).toBe(2);
  });

  it('keeps a token no longer than it lives, however long the cache time', async () => {
    const clock = { now: Date.now() };
    const ks = new FakeKeystone(3_600_000, () => clock.now);
    ks.addUser('short', { userId: 'u', projectId: 'p', roles: ['reader'], expiresAt: clock.now + 10_000 });
    const validator = validatorFor(ks, clock);
    expect((await validator.validate('short')).valid).toBe(true);
    clock.now += 10_001;
    expect((await validator.validate('short')).valid).toBe(false);
    expect(ks.count(VALIDATE)).toBe(2);
  });

  it('remembers at most PLACEMENT_KEYSTONE_TOKEN_CACHE_SIZE tokens, the least recently used leaving first', async () => {
    const clock = { now: Date.now() };
    const ks = new FakeKeystone(3_600_000, () => clock.now);
    for (const t of ['t1', 't2', 't3']) ks.addUser(t, { userId: t, projectId: 'p', roles: ['reader'] });
    const validator = validatorFor(ks, clock, { cacheSize: 2 });
    await validator.validate('t1');
    await validator.validate('t2');
    await validator.validate('t1'); // t1 used last: t2 leaves for t3
    await validator.validate('t3');
    expect(validator.cachedTokens).toBe(2);
    expect(ks.count(VALIDATE)).toBe(3);
    await validator.validate('t1');
    expect(ks.count(VALIDATE)).toBe(3);
    await validator.validate('t2');
    expect(ks.count(VALIDATE)).toBe(4);
    // A thousand distinct bad tokens never hold more than the bound.
    for (let i = 0; i < 1000; i++) await validator.validate(`bogus-${i}`);
    expect(validator.cachedTokens).toBe(2);
  });

  it('renews its own token before it expires, and once more when Keystone refuses it', async () => {
    const clock = { now: Date.now() };
    const ks = new FakeKeystone(600_000, () => clock.now);
    ks.addUser('u1', { userId: 'u1', projectId: 'p', roles: ['reader'] });
    ks.addUser('u2', { userId: 'u2', projectId: 'p', roles: ['reader'] });
    ks.addUser('u3', { userId: 'u3', projectId: 'p', roles: ['reader'] });
    const validator = validatorFor(ks, clock, { cacheSeconds: 0 });
    await validator.validate('u1');
    expect(ks.count(PASSWORD_AUTH)).toBe(1);
    clock.now += 545_000; // 55 s left: renewed before use
    await validator.validate('u2');
    expect(ks.count(PASSWORD_AUTH)).toBe(2);
    ks.revoke('svc-2'); // revoked behind our back: refused (401), renewed, asked again
    expect((await validator.validate('u3')).valid).toBe(true);
    expect(ks.count(PASSWORD_AUTH)).toBe(3);
  });

  it('answers cached tokens while Keystone is down and throws KeystoneUnavailable for new ones', async () => {
    const clock = { now: Date.now() };
    const ks = new FakeKeystone(3_600_000, () => clock.now);
    ks.addUser('known', { userId: 'u', projectId: 'p', roles: ['reader'] });
    ks.addUser('new', { userId: 'u', projectId: 'p', roles: ['reader'] });
    const validator = validatorFor(ks, clock);
    await validator.validate('known');
    ks.down = true;
    expect((await validator.validate('known')).valid).toBe(true);
    await expect(validator.validate('new')).rejects.toBeInstanceOf(KeystoneUnavailable);
    // Not remembered as refused: once Keystone is back, the token works.
    ks.down = false;
    expect((await validator.validate('new')).valid).toBe(true);
  });
});

describe('PLACEMENT_AUTH_STRATEGY=keystone configuration', () => {
  it('stops the start naming the first missing PLACEMENT_KEYSTONE_* variable', () => {
    const full = fakeKeystoneEnv(AUTH_URL);
    for (const name of [
      'PLACEMENT_KEYSTONE_AUTH_URL',
      'PLACEMENT_KEYSTONE_USERNAME',
      'PLACEMENT_KEYSTONE_PASSWORD',
      'PLACEMENT_KEYSTONE_PROJECT_NAME',
    ]) {
      const env = { ...full, [name]: '' };
      expect(() => loadConfig(env)).toThrow(
        new RegExp(`^invalid configuration: ${name}: required when PLACEMENT_AUTH_STRATEGY=keystone\\. Fix: set it .+`),
      );
    }
    expect(() => loadConfig({ ...full, PLACEMENT_KEYSTONE_AUTH_URL: 'keystone:5000' })).toThrow(
      /PLACEMENT_KEYSTONE_AUTH_URL: not an http\(s\) URL/,
    );
    const config = loadConfig(full);
    expect(config).toMatchObject({
      PLACEMENT_KEYSTONE_USER_DOMAIN_NAME: 'Default',
      PLACEMENT_KEYSTONE_PROJECT_DOMAIN_NAME: 'Default',
      PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS: 300,
    });
    expect(keystoneValidator(config).wwwAuthenticate).toBe(`Keystone uri="${AUTH_URL}"`);
    const other = loadConfig({ ...full, PLACEMENT_KEYSTONE_WWW_AUTHENTICATE_URI: 'https://keystone.example.com/v3' });
    expect(keystoneValidator(other).wwwAuthenticate).toBe('Keystone uri="https://keystone.example.com/v3"');
  });
});

describe('keystone strategy in both APIs', () => {
  let t: TestApp;
  const ks = new FakeKeystone();
  beforeAll(async () => {
    t = await makeTestApp({ ...fakeKeystoneEnv(AUTH_URL), PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'true' });
    t.deps.keystone = keystoneValidator(t.deps.config, ks.fetch);
    ks.addUser('admin-tok', { userId: 'admin', projectId: 'ops', roles: ['admin', 'member', 'reader'] });
    ks.addUser('nova-tok', { userId: 'nova', projectId: 'service', roles: ['service'] });
    ks.addUser('member-tok', { userId: 'alice', projectId: 'p1', roles: ['member', 'reader'] });
    ks.addUser('system-tok', { userId: 'sys', system: true, roles: ['admin', 'reader'] });
    ks.addUser('domain-tok', { userId: 'dom', domainId: 'd1', roles: ['admin'] });
  });
  afterAll(() => t.close());

  const get = (path: string, headers: Record<string, string>) =>
    t.app.request(path, { headers: { 'openstack-api-version': 'placement 1.39', ...headers } });

  it('maps roles and project to the secure RBAC policy', async () => {
    expect((await get('/resource_providers', { 'x-auth-token': 'admin-tok' })).status).toBe(200);
    expect((await get('/resource_providers', { 'x-auth-token': 'nova-tok' })).status).toBe(200);
    expect((await get('/resource_providers', { 'x-auth-token': 'member-tok' })).status).toBe(403);
    expect((await get('/usages?project_id=p1', { 'x-auth-token': 'member-tok' })).status).toBe(200);
    expect((await get('/usages?project_id=p2', { 'x-auth-token': 'member-tok' })).status).toBe(403);
    // Placement's rules are project-scoped: a system-scoped token is refused, as upstream.
    expect((await get('/resource_providers', { 'x-auth-token': 'system-tok' })).status).toBe(403);
    // A domain-scoped admin has no project: admin_api passes, project rules do not.
    expect((await get('/resource_providers', { 'x-auth-token': 'domain-tok' })).status).toBe(200);
  });

  it('ignores the headers noauth2 reads: roles come from Keystone only', async () => {
    const res = await get('/resource_providers', { 'x-auth-token': 'member-tok', 'x-roles': 'admin', 'x-project-id': 'ops' });
    expect(res.status).toBe(403);
    expect((await get('/resource_providers', { authorization: 'Bearer admin-tok' })).status).toBe(401);
  });

  it('401 names Keystone in WWW-Authenticate, in each API envelope', async () => {
    const placement = await get('/resource_providers', { 'x-auth-token': 'nope' });
    expect(placement.status).toBe(401);
    expect(placement.headers.get('www-authenticate')).toBe(`Keystone uri="${AUTH_URL}"`);
    expect(((await placement.json()) as { errors: { title: string }[] }).errors[0]!.title).toBe('Unauthorized');
    const accel = await t.app.request('/accelerator/v2/device_profiles', { headers: { 'x-auth-token': 'nope' } });
    expect(accel.status).toBe(401);
    expect(accel.headers.get('www-authenticate')).toBe(`Keystone uri="${AUTH_URL}"`);
    expect(JSON.parse(((await accel.json()) as { error_message: string }).error_message)).toMatchObject({ faultcode: 'Client' });
    const dashboard = await t.app.request('/dashboard/api/summary', { headers: {} });
    expect(dashboard.status).toBe(401);
  });

  it('counts X-Service-Token only with the service role, and refuses a bad one', async () => {
    const bind = (headers: Record<string, string>) =>
      t.app.request('/accelerator/v2/accelerator_requests', {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({}),
      });
    // A member alone, or with a non-service token beside: 403 before the body is read.
    expect((await bind({ 'x-auth-token': 'member-tok' })).status).toBe(403);
    expect((await bind({ 'x-auth-token': 'member-tok', 'x-service-token': 'admin-tok' })).status).toBe(403);
    // With Nova's service token the request gets past the service-token check (to the body's 400).
    expect((await bind({ 'x-auth-token': 'member-tok', 'x-service-token': 'nova-tok' })).status).toBe(400);
    const bad = await bind({ 'x-auth-token': 'member-tok', 'x-service-token': 'nope' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe(`Keystone uri="${AUTH_URL}"`);
  });

  it('answers 503 in the envelope (not 401, not 500) when Keystone is down and the token is new', async () => {
    ks.addUser('late-tok', { userId: 'bob', projectId: 'p1', roles: ['reader'] });
    ks.down = true;
    try {
      expect((await get('/resource_providers', { 'x-auth-token': 'admin-tok' })).status).toBe(200);
      const res = await get('/resource_providers', { 'x-auth-token': 'late-tok' });
      expect(res.status).toBe(503);
      const error = ((await res.json()) as { errors: { status: number; title: string; detail: string }[] }).errors[0]!;
      expect(error).toMatchObject({ status: 503, title: 'Service Unavailable' });
      expect(error.detail).toContain('Keystone');
      const accel = await t.app.request('/accelerator/v2/device_profiles', { headers: { 'x-auth-token': 'late-tok' } });
      expect(accel.status).toBe(503);
      expect(JSON.parse(((await accel.json()) as { error_message: string }).error_message)).toMatchObject({ faultcode: 'Server' });
    } finally {
      ks.down = false;
    }
  });
});
