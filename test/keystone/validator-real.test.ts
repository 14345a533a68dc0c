// The Keystone strategy's own parts against a real Keystone (Debian's
// python3-keystone, the run's shared one, test/helpers/keystone.ts) at its port
// issuing 45 s tokens, where
// token-validation.test.ts uses the fake: one Keystone request for concurrent
// requests with one new token (shared validation); the cache's bound
// (PLACEMENT_KEYSTONE_TOKEN_CACHE_SIZE), an evicted token asked again and
// still accepted; the service's own token (ServiceTokenSource) renewed before
// Keystone lets it expire; and X-Service-Token as keystonemiddleware reads it:
// counted with the service role only, a bad one refusing the request, and,
// beside one with the service role, a user token that has expired (not one
// that was revoked) still accepted (allow_expired). Keystone's requests are
// counted on the way to it: every answer is the real Keystone's.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { keystoneValidator } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { KeystoneClient, ServiceTokenRefused } from '../../src/http/keystone/client.js';
import { ServiceTokenSource } from '../../src/http/keystone/service-token.js';
import { ADMIN_PASSWORD, keystoneMissing, sharedKeystone, type Keystone } from '../helpers/keystone.js';
import { keystoneEnv, PROJECT_USER, passwordCredentials, SERVICE_USER } from '../helpers/keystone-credentials.js';
import { describeWithPart } from '../helpers/parts.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

// Long enough for the cache test's ten Keystone requests at seconds each on a loaded machine (30 s was cut close).
const TOKEN_LIFE_S = 45;
const VALIDATE = 'GET /v3/auth/tokens';
const SIGN_IN = 'POST /v3/auth/tokens';
const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

/** `fetch` to the real Keystone, each request written down as "METHOD /path STATUS". */
function countingFetch() {
  const seen: string[] = [];
  const counted: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : String(input));
    seen.push(`${init?.method ?? 'GET'} ${url.pathname} ${res.status}`);
    return res;
  };
  return { fetch: counted, seen, count: (call: string) => seen.filter((s) => s.startsWith(`${call} `)).length };
}

describeWithPart(keystoneMissing(), `the Keystone strategy against a real Keystone (${TOKEN_LIFE_S} s tokens)`, () => {
  let ks: Keystone;
  let alice: { projectId: string };
  /** alice's token, got before the tests: expired by the last one. */
  let early: { token: string; expiredAfter: number };
  /** The app in keystone mode, signed in before the tests; its Keystone requests counted. */
  let t: TestApp;
  let appCalls: ReturnType<typeof countingFetch>;

  const aliceToken = () => ks.token(PROJECT_USER.username, PROJECT_USER.password, PROJECT_USER.project);
  /** A token of the service's user: with the service role, also an X-Service-Token (Nova's [service_user] in a cloud). */
  const serviceToken = () => ks.token(SERVICE_USER.username, SERVICE_USER.password, SERVICE_USER.project);

  beforeAll(async () => {
    ks = await sharedKeystone({ tokenExpirationSeconds: TOKEN_LIFE_S });
    await ks.projectUser(SERVICE_USER, ['service']);
    alice = await ks.projectUser(PROJECT_USER, ['member', 'reader']);
    early = { token: await aliceToken(), expiredAfter: Date.now() + TOKEN_LIFE_S * 1000 };
    t = await makeTestApp(
      keystoneEnv(ks.url, {
        // Keystone under uwsgi takes seconds per request on a loaded machine.
        PLACEMENT_KEYSTONE_TIMEOUT_MS: '30000',
        PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'true',
      }),
    );
    appCalls = countingFetch();
    t.deps.keystone = keystoneValidator(t.deps.config, appCalls.fetch);
    const signedIn = await t.app.request(`/usages?project_id=${alice.projectId}`, {
      headers: { 'x-auth-token': await aliceToken(), 'openstack-api-version': 'placement 1.39' },
    });
    expect(signedIn.status).toBe(200);
  }, 240_000);
  afterAll(async () => {
    t?.close();
    await ks?.close();
  });

  // Its time limit: some fifteen requests to a real Keystone, each taking seconds on a loaded 2-core machine.
  it('asks Keystone once for concurrent requests with one new token; holds at most the cache size, an evicted token asked again', async () => {
    const calls = countingFetch();
    // The validator the service builds from its settings, with a cache of two tokens.
    const config = loadConfig(keystoneEnv(ks.url, { PLACEMENT_KEYSTONE_TOKEN_CACHE_SIZE: '2', PLACEMENT_KEYSTONE_TIMEOUT_MS: '30000' }));
    const validator = keystoneValidator(config, calls.fetch);
    const t2MintedBy = Date.now();
    const [t1, t2, t3] = [await aliceToken(), await aliceToken(), await aliceToken()];
    const concurrent = await Promise.all(Array.from({ length: 8 }, () => validator.validate(t1)));
    expect(concurrent.every((v) => v.valid && v.identity.projectId === alice.projectId)).toBe(true);
    expect(calls.count(VALIDATE)).toBe(1);
    for (const token of [t2, t3]) expect((await validator.validate(token)).valid).toBe(true);
    expect(validator.cachedTokens).toBe(2);
    expect(calls.count(VALIDATE)).toBe(3);
    // t1, the least recently used, left when t3 came: Keystone is asked again, and accepts it.
    expect((await validator.validate(t1)).valid).toBe(true);
    expect(calls.count(VALIDATE)).toBe(4);
    // t3 and t1 are the two remembered (a cache holding a third would answer t2 too).
    for (const token of [t3, t1]) expect((await validator.validate(token)).valid).toBe(true);
    expect(calls.count(VALIDATE)).toBe(4);
    // t2 is not among them: Keystone is asked again. Its answer is Keystone's own: on a slow machine these
    // ten Keystone requests can outlast t2's life, and then Keystone refuses it (a lived-out token kept would be the bug).
    const again = await validator.validate(t2);
    expect(calls.count(VALIDATE)).toBe(5);
    const t2Age = Date.now() - t2MintedBy;
    if (t2Age < (TOKEN_LIFE_S - 2) * 1000) expect(again.valid).toBe(true);
    // Tokens Keystone does not know are refused (404), remembered within the same bound.
    for (let i = 0; i < 4; i++) {
      expect((await validator.validate(`gAAAAAB-not-a-token-${i}`)).valid).toBe(false);
      expect(validator.cachedTokens).toBe(2);
    }
    expect(calls.seen.filter((s) => s.startsWith(VALIDATE)).map((s) => s.split(' ')[2])).toEqual([
      ...Array(4).fill('200'),
      again.valid ? '200' : '404',
      ...Array(4).fill('404'),
    ]);
  }, 180_000);

  it('the service token is kept while fresh and renewed past half its life; Keystone takes the new one', async () => {
    const sourceCalls = countingFetch();
    const source = new ServiceTokenSource(new KeystoneClient(ks.url, sourceCalls.fetch), passwordCredentials());
    const first = { issued: await source.token(), receivedAt: Date.now() };
    expect(first.issued.identity.expiresAt - first.receivedAt).toBeLessThanOrEqual(TOKEN_LIFE_S * 1000);
    expect((await source.token()).token).toBe(first.issued.token);
    expect(sourceCalls.count(SIGN_IN)).toBe(1);
    await sleepUntil(first.receivedAt + (TOKEN_LIFE_S * 1000) / 2 + 500);
    const renewed = await source.token();
    expect(renewed.token).not.toBe(first.issued.token);
    expect(sourceCalls.count(SIGN_IN)).toBe(2);
    const validated = await new KeystoneClient(ks.url).validate(renewed.token, await aliceToken());
    expect(validated.valid).toBe(true);
  }, 60_000);

  it('X-Service-Token counts with the service role only, and a bad one refuses the request', async () => {
    const bind = (headers: Record<string, string>) =>
      t.app.request('/accelerator/v2/accelerator_requests', {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({}),
      });
    const user = await aliceToken();
    // Binding needs a service token beside the user's: refused before the body is read without one.
    expect((await bind({ 'x-auth-token': user })).status).toBe(403);
    const admin = await ks.token('admin', ADMIN_PASSWORD, 'admin');
    expect((await bind({ 'x-auth-token': user, 'x-service-token': admin })).status).toBe(403);
    // A service token with the service role: past the check, to the empty body's 400.
    const nova = await serviceToken();
    expect((await bind({ 'x-auth-token': user, 'x-service-token': nova })).status).toBe(400);
    const bad = await bind({ 'x-auth-token': user, 'x-service-token': 'gAAAAAB-not-a-token' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe(`Keystone uri="${ks.url}"`);
  }, 60_000);

  it('an expired user token: refused alone or beside a token without the service role, accepted beside a service token; a revoked one refused', async () => {
    await sleepUntil(early.expiredAfter + 1_000);
    const usages = (headers: Record<string, string>) =>
      t.app.request(`/usages?project_id=${alice.projectId}`, { headers: { 'openstack-api-version': 'placement 1.39', ...headers } });
    const nova = await serviceToken();
    const admin = await ks.token('admin', ADMIN_PASSWORD, 'admin');
    const alone = await usages({ 'x-auth-token': early.token });
    expect(alone.status).toBe(401);
    expect(alone.headers.get('www-authenticate')).toBe(`Keystone uri="${ks.url}"`);
    // keystonemiddleware: a valid service token with the service role lets an expired user token through.
    const beside = await usages({ 'x-auth-token': early.token, 'x-service-token': nova });
    expect(beside.status, await beside.clone().text()).toBe(200);
    expect(await beside.json()).toHaveProperty('usages');
    expect((await usages({ 'x-auth-token': early.token, 'x-service-token': admin })).status).toBe(401);
    // Revoked is not expired: refused even beside a service token.
    const revoked = await aliceToken();
    expect((await ks.api('DELETE', '/auth/tokens', undefined, { 'x-subject-token': revoked })).status).toBe(204);
    expect((await usages({ 'x-auth-token': revoked, 'x-service-token': nova })).status).toBe(401);

    // An expired token is refused as the one a service validates with: why the service renews its own.
    await expect(new KeystoneClient(ks.url).validate(early.token, nova)).rejects.toBeInstanceOf(ServiceTokenRefused);
    // The app signed in before the tests, more than a token's life ago, and renewed in time:
    // Keystone never refused its service token (no 401), it signed in more than once.
    expect(appCalls.seen.filter((s) => s.endsWith(' 401'))).toEqual([]);
    expect(appCalls.count(SIGN_IN)).toBeGreaterThanOrEqual(2);
  }, 120_000);
});
