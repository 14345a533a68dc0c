// A service user's own Keystone token (keystoneauth's password plugin): got
// on first use, renewed before it expires, one request to Keystone however
// many callers ask at once. Every Keystone user of the service holds its token
// here (token validation, Nova's identity, the system-scoped limits reader):
// one renewal rule. The CLI can use it alone for --os-* options.
import type { IssuedToken, KeystoneClient, SignInCredentials } from './client.js';

/**
 * Renew this long before expiry (keystoneauth renews 30 s before; a slow
 * Keystone gets more room), or after half the token's life where Keystone
 * issues tokens shorter than two minutes (`[token] expiration`), so a
 * short-lived token is still used, not renewed on every call.
 */
const RENEW_BEFORE_MS = 60_000;

export class ServiceTokenSource {
  private current: IssuedToken | undefined;
  /** When the held token was received (its life is measured from then, on this clock). */
  private receivedAt = 0;
  private pending: Promise<IssuedToken> | undefined;

  constructor(
    private readonly client: KeystoneClient,
    private readonly credentials: SignInCredentials,
    private readonly now: () => number = () => Date.now(),
    /** Told of each failed sign-in (refused credentials, Keystone not answering): a metric counts them. */
    private readonly onFailure: (err: unknown) => void = () => {},
  ) {}

  /** A token with at least a minute left, renewed when needed. */
  async token(): Promise<IssuedToken> {
    const held = this.current;
    if (held && !this.stale(held)) return held;
    return this.renew();
  }

  /** Forgets the held token (Keystone refused it) and gets a new one, sharing a renewal already under way. */
  async renewAfterRefusal(refused: string): Promise<IssuedToken> {
    if (this.current?.token === refused) this.current = undefined;
    return this.current ?? this.renew();
  }

  /** Signs in again now, whatever is held (a readiness check after a failure: Keystone may be back, or gone). */
  async renewNow(): Promise<IssuedToken> {
    return this.renew();
  }

  private stale(held: IssuedToken): boolean {
    const life = held.identity.expiresAt - this.receivedAt;
    const left = held.identity.expiresAt - this.now();
    return left < Math.min(RENEW_BEFORE_MS, life / 2);
  }

  private renew(): Promise<IssuedToken> {
    this.pending ??= this.client
      .passwordAuth(this.credentials)
      .then((issued) => {
        this.current = issued;
        this.receivedAt = this.now();
        return issued;
      })
      .catch((err: unknown) => {
        this.onFailure(err);
        throw err;
      })
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }
}
