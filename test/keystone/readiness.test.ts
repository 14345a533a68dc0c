// GET /readyz tells the truth about Keystone: with PLACEMENT_AUTH_STRATEGY=keystone
// every request needs a token validated with the service user's own token, so
// a wrong PLACEMENT_KEYSTONE_PASSWORD or a Keystone that is down makes the
// service unable to serve: /readyz is 503 with the reason (it was 200 while
// every request got 503), and placement_keystone_sign_in_failures_total counts
// the failed sign-ins. A real Keystone (test/helpers/keystone.ts).
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ADMIN_PASSWORD, keystoneMissing, startKeystone, type Keystone } from '../helpers/keystone.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';
import { describeWithPart } from '../helpers/parts.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const SCRAPE = 'scrape-token';

describeWithPart(keystoneMissing(), '/readyz and the sign-in metric against a real Keystone', () => {
  let ks: Keystone;
  const apps: TestApp[] = [];
  beforeAll(async () => {
    ks = await startKeystone();
  }, 240_000);
  afterAll(async () => {
    for (const app of apps) app.close();
    await ks?.close();
  });

  async function serviceApp(password: string): Promise<TestApp> {
    const app = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'keystone',
      PLACEMENT_KEYSTONE_AUTH_URL: ks.url,
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

  const readyz = async (app: TestApp) => {
    const res = await app.app.request('/readyz');
    return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
  };

  const signInFailures = async (app: TestApp, reason: string) => {
    const res = await app.app.request('/metrics', { headers: { authorization: `Bearer ${SCRAPE}` } });
    expect(res.status).toBe(200);
    return sampleValue(parseSamples(await res.text()), 'placement_keystone_sign_in_failures_total', { reason }) ?? 0;
  };

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
    await ks.stop();
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
