// Nova's token renewed before it expires, against a real Keystone issuing
// short-lived tokens ([token] expiration = 24 s: the run's shared Keystone at its
// port for that life, with a user and a catalog of this file's own): every token the service
// would send Nova is one Keystone still accepts, with at least a quarter of its
// life left, across several renewals. Renewing only once a token has expired
// (or in its last seconds) would pass a test that waits past the expiry, as a
// 401 and a new sign-in cover for it: here nothing covers.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type KeystoneUser, novaIdentity, passwordCredentials } from '../helpers/keystone-credentials.js';
import { keystoneMissing, sharedKeystone, type Keystone } from '../helpers/keystone.js';
import { describeWithPart } from '../helpers/parts.js';
import { waitUntil } from '../helpers/wait.js';

const TOKEN_LIFE_S = 24;
/** The service's user here, in a project whose catalog has this file's compute endpoint only. */
const RENEWAL_USER: KeystoneUser = { username: 'nova-renewal', password: 'nova-renewal-pw', project: 'nova-renewal' };

describeWithPart(keystoneMissing(), "Nova's token from a Keystone issuing 24 s tokens", () => {
  let ks: Keystone;
  beforeAll(async () => {
    ks = await sharedKeystone({ tokenExpirationSeconds: TOKEN_LIFE_S });
    const { projectId } = await ks.projectUser(RENEWAL_USER, ['service']);
    const compute = (await ks.json<{ service: { id: string } }>('POST', '/services', { service: { name: 'nova', type: 'compute' } }))
      .service.id;
    const { endpoint } = await ks.json<{ endpoint: { id: string } }>('POST', '/endpoints', {
      endpoint: { service_id: compute, interface: 'internal', region_id: 'RegionOne', url: 'http://nova.invalid/v2.1' },
    });
    // The project's catalog: this endpoint only (OS-EP-FILTER), whatever other files register.
    await ks.json('PUT', `/OS-EP-FILTER/projects/${projectId}/endpoints/${endpoint.id}`);
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
    const identity = novaIdentity(ks.url, { timeoutMs: 60_000, credentials: passwordCredentials(RENEWAL_USER) });
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
