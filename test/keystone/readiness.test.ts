// GET /readyz tells the truth about Keystone: with PLACEMENT_AUTH_STRATEGY=keystone
// every request needs a token validated with the service user's own token, so
// a wrong PLACEMENT_KEYSTONE_PASSWORD or a Keystone that is down makes the
// service unable to serve: /readyz is 503 with the reason (it was 200 while
// every request got 503), and placement_keystone_sign_in_failures_total counts
// the failed sign-ins; it stays 503 on every probe while the sign-in keeps
// failing, and turns 200 once it works again. A real Keystone (the run's shared
// one, test/helpers/keystone.ts), reached through a link of this file's own
// (test/helpers/pausable-link.ts) that is cut where Keystone goes down.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { keystoneEnv, type KeystoneUser } from '../helpers/keystone-credentials.js';
import { ADMIN_PASSWORD, keystoneMissing, sharedKeystone, type Keystone } from '../helpers/keystone.js';
import { type PausableLink, startPausableLink } from '../helpers/pausable-link.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';
import { describeWithPart } from '../helpers/parts.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { waitUntil } from '../helpers/wait.js';

const SCRAPE = 'scrape-token';

describeWithPart(keystoneMissing(), '/readyz and the sign-in metric against a real Keystone', () => {
  let ks: Keystone;
  /** Keystone as the services here reach it: stopping the link refuses every connection, as a stopped Keystone does. */
  let link: PausableLink;
  let keystoneUrl: string;
  const apps: TestApp[] = [];
  beforeAll(async () => {
    ks = await sharedKeystone();
    link = await startPausableLink(ks.url);
    keystoneUrl = `${link.url}/v3`;
  }, 240_000);
  afterAll(async () => {
    for (const app of apps) app.close();
    link?.stop();
    await ks?.close();
  });

  async function serviceApp(password: string): Promise<TestApp> {
    const app = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'keystone',
      PLACEMENT_KEYSTONE_AUTH_URL: keystoneUrl,
      PLACEMENT_KEYSTONE_USERNAME: 'admin',
      PLACEMENT_KEYSTONE_PASSWORD: password,
      PLACEMENT_KEYSTONE_PROJECT_NAME: 'admin',
      // Keystone under uwsgi takes seconds per token on a loaded machine; a stopped one refuses at once.
      PLACEMENT_KEYSTONE_TIMEOUT_MS: '30000',
      PLACEMENT_METRICS_TOKEN: SCRAPE,
    });
    apps.push(app);
    return app;
  }

  /** /readyz holds no probe past a second: a sign-in still running then (a slow, loaded Keystone) is answered as late. */
  const LATE = /got no answer within \d+ ms/;

  /** /readyz's answer once the service's Keystone check has finished (a late answer is probed again: the check goes on and is kept). */
  const readyz = async (app: TestApp | TestApp['app']) => {
    let answer: { status: number; body: { status: string; reason?: string } } | undefined;
    await waitUntil(
      "the service's Keystone check to finish",
      async () => {
        const res = await ('app' in app ? app.app : app).request('/readyz');
        answer = { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
        return !LATE.test(answer.body.reason ?? '');
      },
      60_000,
      200,
    );
    return answer!;
  };

  const signInFailures = async (app: TestApp, reason: string) => {
    const res = await app.app.request('/metrics', { headers: { authorization: `Bearer ${SCRAPE}` } });
    expect(res.status).toBe(200);
    return sampleValue(parseSamples(await res.text()), 'placement_keystone_sign_in_failures_total', { reason }) ?? 0;
  };

  /** Probes /readyz until `enough` holds, each probe 503 with a reason matching `reason`; how many probes. */
  async function notReadyUntil(app: TestApp['app'], reason: RegExp, what: string, enough: () => Promise<boolean>): Promise<number> {
    let probes = 0;
    await waitUntil(
      what,
      async () => {
        const res = await app.request('/readyz');
        probes += 1;
        expect(res.status).toBe(503);
        const said = ((await res.json()) as { reason: string }).reason;
        // A check still running after a second is answered as late (503 too); the next probe reads its outcome.
        if (!LATE.test(said)) expect(said).toMatch(reason);
        return enough();
      },
      60_000,
      200,
    );
    return probes;
  }

  const failuresOf = async (app: TestApp['app'], reason: string) => {
    const res = await app.request('/metrics', { headers: { authorization: `Bearer ${SCRAPE}` } });
    return sampleValue(parseSamples(await res.text()), 'placement_keystone_sign_in_failures_total', { reason }) ?? 0;
  };

  // These two side by side: each waits on the service's checks, seconds apart, on an app of its own, and they
  // count sign-in failures of different reasons (the process's metrics); the two after count both exactly.
  it.concurrent('a refused sign-in: 503 on every probe, checked again with a new sign-in, until the password is right; then 200', async () => {
    const user: KeystoneUser = { username: 'readiness-probe', password: 'the-new-password', project: 'readiness' };
    const { userId } = await ks.projectUser(user, ['service']);
    const t = await makeTestApp(
      keystoneEnv(
        keystoneUrl,
        { PLACEMENT_KEYSTONE_TIMEOUT_MS: '30000', PLACEMENT_METRICS_TOKEN: SCRAPE },
        { ...user, password: 'the-old-password' },
      ),
    );
    apps.push(t);
    const before = await failuresOf(t.app, 'refused');
    // Past the first refusal and a second sign-in (each after the last answer's 5 s), every probe 503.
    const probes = await notReadyUntil(t.app, /the service cannot sign in to Keystone: .*HTTP 401/, 'two refused sign-ins', async () => {
      return (await failuresOf(t.app, 'refused')) >= before + 2;
    });
    expect(probes).toBeGreaterThan(2);
    // The operator sets the password the service has: ready at the next check.
    await ks.json('PATCH', `/users/${userId}`, { user: { password: 'the-old-password' } });
    await waitUntil('ready once the sign-in works', async () => (await t.app.request('/readyz')).status === 200, 60_000, 200);
    expect(await (await t.app.request('/readyz')).json()).toEqual({ status: 'ready' });
  }, 180_000);

  it.concurrent('Keystone down after a sign-in: 503 on every probe, though the service still holds a token, until Keystone answers again; then 200', async () => {
    const base = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'keystone',
      PLACEMENT_KEYSTONE_AUTH_URL: keystoneUrl,
      PLACEMENT_KEYSTONE_USERNAME: 'admin',
      PLACEMENT_KEYSTONE_PASSWORD: ADMIN_PASSWORD,
      PLACEMENT_KEYSTONE_PROJECT_NAME: 'admin',
      PLACEMENT_KEYSTONE_TIMEOUT_MS: '30000',
      PLACEMENT_METRICS_TOKEN: SCRAPE,
    });
    apps.push(base);
    // The service's way to Keystone, cut as a stopped Keystone or a lost route is: the connection fails.
    let cut = false;
    const keystoneFetch: typeof fetch = (input, init) => (cut ? Promise.reject(new TypeError('fetch failed')) : fetch(input, init));
    const app = createApp(makeDeps(base.deps.store, base.deps.config, { debug() {}, info() {}, warn() {}, error() {} }, { keystoneFetch }));
    // Its first check signs in: a loaded Keystone may take past the second /readyz waits (a late 503, probed again).
    expect((await readyz(app)).status).toBe(200);
    cut = true;
    // At most one check's 5 s may still answer the last ready; from the first 503 on, every probe is 503,
    // through two more sign-ins that find Keystone gone.
    await waitUntil('not ready once Keystone is gone', async () => (await app.request('/readyz')).status === 503, 60_000, 200);
    const before = await failuresOf(app, 'unreachable');
    await notReadyUntil(
      app,
      /the service cannot validate tokens with Keystone: Keystone at .* did not answer/,
      'two sign-ins finding Keystone gone',
      async () => {
        return (await failuresOf(app, 'unreachable')) >= before + 2;
      },
    );
    cut = false;
    await waitUntil('ready once Keystone answers', async () => (await app.request('/readyz')).status === 200, 60_000, 200);
  }, 180_000);

  it('a wrong PLACEMENT_KEYSTONE_PASSWORD: 503 naming the refused sign-in and the settings to check, counted', async () => {
    const app = await serviceApp('not-the-password');
    const before = await signInFailures(app, 'refused');
    const { status, body } = await readyz(app);
    expect(status).toBe(503);
    expect(body.status).toBe('not ready');
    expect(body.reason).toContain('the service cannot sign in to Keystone');
    expect(body.reason).toContain('HTTP 401');
    expect(body.reason).toContain('PLACEMENT_KEYSTONE_PASSWORD');
    expect(await signInFailures(app, 'refused')).toBe(before + 1);
    // Asked again within seconds: the same answer, without asking Keystone again.
    expect((await readyz(app)).status).toBe(503);
    expect(await signInFailures(app, 'refused')).toBe(before + 1);
  }, 120_000);

  it('the right password: ready; Keystone down: 503 naming it, and a new sign-in counted as unreachable', async () => {
    const app = await serviceApp(ADMIN_PASSWORD);
    expect(await readyz(app)).toEqual({ status: 200, body: { status: 'ready' } });
    link.stop();
    const down = /the service cannot validate tokens with Keystone: Keystone at http:\/\/127\.0\.0\.1:\d+\/v3 did not answer/;
    // The service had signed in before Keystone went away: not ready once the check runs again (at most 5 s later).
    await new Promise((r) => setTimeout(r, 5_100));
    const after = await readyz(app);
    expect(after.status).toBe(503);
    expect(after.body.reason).toMatch(down);
    // A service starting while Keystone is down: its sign-in fails, counted as unreachable.
    const fresh = await serviceApp(ADMIN_PASSWORD);
    const before = await signInFailures(fresh, 'unreachable');
    const { status, body } = await readyz(fresh);
    expect(status).toBe(503);
    expect(body.reason).toMatch(down);
    expect(await signInFailures(fresh, 'unreachable')).toBe(before + 1);
  }, 120_000);
});
