// Nova's token renewed before it expires, against a real Keystone issuing
// short-lived tokens ([token] expiration = 24 s): every token the service
// would send Nova is one Keystone still accepts, with at least a quarter of its
// life left, across several renewals. Renewing only once a token has expired
// (or in its last seconds) would pass a test that waits past the expiry, as a
// 401 and a new sign-in cover for it: here nothing covers.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { novaIdentity, SERVICE_USER } from '../helpers/keystone-credentials.js';
import { keystoneMissing, startKeystone, type Keystone } from '../helpers/keystone.js';
import { describeWithPart } from '../helpers/parts.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN_LIFE_S = 24;

describeWithPart(keystoneMissing(), "Nova's token from a Keystone issuing 24 s tokens", () => {
  let ks: Keystone;
  beforeAll(async () => {
    ks = await startKeystone({ tokenExpirationSeconds: TOKEN_LIFE_S });
    await ks.projectUser(SERVICE_USER, ['service']);
    const compute = (await ks.json<{ service: { id: string } }>('POST', '/services', { service: { name: 'nova', type: 'compute' } }))
      .service.id;
    await ks.json('POST', '/endpoints', {
      endpoint: { service_id: compute, interface: 'internal', region_id: 'RegionOne', url: 'http://nova.invalid/v2.1' },
    });
  }, 240_000);
  afterAll(() => ks?.close());

  /** When Keystone says `token` expires (ms since the epoch); it fails the test if Keystone refuses it. */
  async function expiryOf(token: string): Promise<number> {
    const res = await ks.api('GET', '/auth/tokens?nocatalog', undefined, { 'x-subject-token': token });
    expect(res.status, `Keystone refused a token the service handed out: ${res.status}`).toBe(200);
    return Date.parse(((await res.json()) as { token: { expires_at: string } }).token.expires_at);
  }

  it('is renewed before it expires: every token handed out has at least a quarter of its life left, through two renewals', async () => {
    // Keystone answers in seconds on a loaded machine: its own time limit well above that.
    const identity = novaIdentity(ks.url, { timeoutMs: 60_000 });
    const tokens = new Set<string>();
    let leastLeftMs = Number.POSITIVE_INFINITY;
    await waitUntil(
      'two renewals of the Nova token',
      async () => {
        const access = await identity.access();
        expect(access.url).toBe('http://nova.invalid/v2.1');
        tokens.add(access.token!);
        // Measured after Keystone answered: what is left is at most what was left when the token was handed out.
        const left = (await expiryOf(access.token!)) - Date.now();
        leastLeftMs = Math.min(leastLeftMs, left);
        expect(left, `a token handed out with ${left} ms of ${TOKEN_LIFE_S} s left`).toBeGreaterThan((TOKEN_LIFE_S * 1000) / 4);
        return tokens.size >= 3;
      },
      4 * TOKEN_LIFE_S * 1000,
      500,
    );
    // Used for a while, not renewed at each call.
    expect(leastLeftMs).toBeLessThan(TOKEN_LIFE_S * 1000 * 0.75);
  }, 240_000);
});
