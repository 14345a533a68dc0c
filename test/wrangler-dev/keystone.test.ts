// The Worker's Keystone strategy in real workerd against a real Keystone:
// `npm run dev:worker` (real sqld and `wrangler dev`) with
// PLACEMENT_AUTH_STRATEGY=keystone validating, over workerd's own fetch, the
// tokens Debian's Keystone (test/helpers/keystone.ts) issues. The Worker pool
// (test/worker/keystone.test.ts) counts round trips against the fake; here
// every answer is Keystone's: 401 without a token or with one Keystone does
// not know, 200 and 403 as the policy reads a real token's roles, a revoked
// token refused once the cache time has passed, X-Service-Token counted with
// the service role, and an expired user token let through beside one (as
// keystonemiddleware's allow_expired). The expired token is an application
// credential's, whose expiry Keystone gives to its tokens.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type DevWorker, startDevWorker } from '../helpers/dev-worker.js';
import { ADMIN_PASSWORD, keystoneMissing, sharedKeystone, type Keystone } from '../helpers/keystone.js';
import { keystoneEnv, PROJECT_USER, SERVICE_USER } from '../helpers/keystone-credentials.js';
import { describeWithPart } from '../helpers/parts.js';
import { SQLD_MISSING } from '../helpers/sqld.js';

const CACHE_SECONDS = 3;
/** How long the application credential, and so its token, lives from when it is made (its two Keystone requests take seconds on a loaded machine). */
const SHORT_LIFE_MS = 20_000;
const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

describeWithPart(keystoneMissing() ?? SQLD_MISSING, 'the Keystone strategy in wrangler dev (real workerd, sqld and Keystone)', () => {
  const data = mkdtempSync(join(tmpdir(), 'dev-worker-keystone-'));
  let ks: Keystone;
  let dev: DevWorker;
  let alice: { projectId: string; userId: string };
  /** alice's token from an application credential expiring SHORT_LIFE_MS after it was made. */
  let short: { token: string; expiresAt: number };

  const aliceToken = () => ks.token(PROJECT_USER.username, PROJECT_USER.password, PROJECT_USER.project);

  beforeAll(async () => {
    ks = await sharedKeystone();
    await ks.projectUser(SERVICE_USER, ['service']);
    alice = await ks.projectUser(PROJECT_USER, ['member', 'reader']);
    // alice makes the credential with her own token; Keystone caps its tokens' expiry to its own.
    const own = await aliceToken();
    const made = await fetch(`${ks.url}/users/${alice.userId}/application_credentials`, {
      method: 'POST',
      headers: { 'x-auth-token': own, 'content-type': 'application/json' },
      body: JSON.stringify({
        application_credential: { name: 'short', expires_at: new Date(Date.now() + SHORT_LIFE_MS).toISOString().replace('Z', '') },
      }),
    });
    if (made.status !== 201) throw new Error(`application credential: ${made.status} ${await made.text()}`);
    const { application_credential: cred } = (await made.json()) as { application_credential: { id: string; secret: string } };
    const auth = await fetch(`${ks.url}/auth/tokens?nocatalog`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ auth: { identity: { methods: ['application_credential'], application_credential: cred } } }),
    });
    if (auth.status !== 201) throw new Error(`application credential sign-in: ${auth.status} ${await auth.text()}`);
    const body = (await auth.json()) as { token: { expires_at: string } };
    short = { token: auth.headers.get('x-subject-token')!, expiresAt: Date.parse(body.token.expires_at) };
    expect(short.expiresAt - Date.now()).toBeLessThan(SHORT_LIFE_MS);

    // The strategy goes in the environment (scripts/dev-worker.sh passes it on), the rest as --var.
    const { PLACEMENT_AUTH_STRATEGY, ...vars } = keystoneEnv(ks.url, {
      PLACEMENT_KEYSTONE_TOKEN_CACHE_SECONDS: String(CACHE_SECONDS),
      // Keystone under uwsgi takes seconds per request on a loaded machine.
      PLACEMENT_KEYSTONE_TIMEOUT_MS: '30000',
    });
    dev = await startDevWorker(
      join(data, 'db'),
      Object.entries(vars).flatMap(([name, value]) => ['--var', `${name}:${value}`]),
      { PLACEMENT_AUTH_STRATEGY: PLACEMENT_AUTH_STRATEGY! },
    );
  }, 240_000);
  afterAll(async () => {
    await dev?.stop();
    await ks?.close();
    rmSync(data, { recursive: true, force: true });
  });

  const call = (path: string, headers: Record<string, string> = {}, init: { method?: string; body?: unknown } = {}) =>
    fetch(`${dev.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { 'openstack-api-version': 'placement 1.39', 'content-type': 'application/json', ...headers },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
  const usages = () => `/usages?project_id=${alice.projectId}`;

  // Side by side: each waits on a time of its own (the cache's, the short token's) with tokens of its own.
  it.concurrent('401 without a token or with one Keystone does not know, naming Keystone; a real token answered by its roles', async () => {
    for (const headers of [{}, { 'x-auth-token': 'gAAAAAB-not-a-token' }] as Record<string, string>[]) {
      const res = await call('/resource_providers', headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe(`Keystone uri="${ks.url}"`);
      expect(((await res.json()) as { errors: { title: string }[] }).errors[0]!.title).toBe('Unauthorized');
    }
    const admin = await ks.token('admin', ADMIN_PASSWORD, 'admin');
    expect((await call('/resource_providers', { 'x-auth-token': admin })).status).toBe(200);
    const reader = await aliceToken();
    expect((await call(usages(), { 'x-auth-token': reader })).status).toBe(200);
    // A project member may not list providers (admin only), nor read another project's usages.
    expect((await call('/resource_providers', { 'x-auth-token': reader })).status).toBe(403);
    expect((await call(`/usages?project_id=${crypto.randomUUID().replaceAll('-', '')}`, { 'x-auth-token': reader })).status).toBe(403);
  }, 60_000);

  it.concurrent('a revoked token is refused once the cache time has passed', async () => {
    const token = await aliceToken();
    expect((await call(usages(), { 'x-auth-token': token })).status).toBe(200);
    const cachedAt = Date.now();
    expect((await ks.api('DELETE', '/auth/tokens', undefined, { 'x-subject-token': token })).status).toBe(204);
    await sleepUntil(cachedAt + CACHE_SECONDS * 1000 + 500);
    const refused = await call(usages(), { 'x-auth-token': token });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toBe(`Keystone uri="${ks.url}"`);
  }, 60_000);

  it.concurrent('X-Service-Token counts with the service role; beside one, an expired user token is accepted, alone it is refused', async () => {
    const user = await aliceToken();
    const service = await ks.token(SERVICE_USER.username, SERVICE_USER.password, SERVICE_USER.project);
    const bind = (headers: Record<string, string>) => call('/accelerator/v2/accelerator_requests', headers, { method: 'PATCH', body: {} });
    expect((await bind({ 'x-auth-token': user })).status).toBe(403);
    expect((await bind({ 'x-auth-token': user, 'x-service-token': service })).status).toBe(400);
    expect((await bind({ 'x-auth-token': user, 'x-service-token': 'gAAAAAB-not-a-token' })).status).toBe(401);

    await sleepUntil(short.expiresAt + 1_000);
    expect((await call(usages(), { 'x-auth-token': short.token })).status).toBe(401);
    const beside = await call(usages(), { 'x-auth-token': short.token, 'x-service-token': service });
    expect(beside.status, await beside.clone().text()).toBe(200);
    const admin = await ks.token('admin', ADMIN_PASSWORD, 'admin');
    expect((await call(usages(), { 'x-auth-token': short.token, 'x-service-token': admin })).status).toBe(401);
  }, 60_000);

  it('wrangler dev logged no error through the tests above', () => {
    expect(`${dev.stdout()}${dev.stderr()}`).not.toMatch(/\[ERROR\]/);
  });
});
