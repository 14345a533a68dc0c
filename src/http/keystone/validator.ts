// keystonemiddleware's auth_token, without the middleware: validates a
// user's (or service's) token against Keystone with the service's own token,
// remembers the verdict (token-cache.ts), and asks Keystone once for
// concurrent requests carrying the same new token. Keystone being down is
// KeystoneUnavailable (the caller answers 503), never a refusal.
import {
  KeystoneClient,
  KeystoneCredentialsRefused,
  KeystoneUnavailable,
  ServiceTokenRefused,
  type PasswordCredentials,
} from './client.js';
import { ServiceTokenSource } from './service-token.js';
import { TokenCache, tokenDigest, type Verdict } from './token-cache.js';

export interface KeystoneSettings {
  /** The identity v3 URL, e.g. http://keystone:5000/v3. */
  authUrl: string;
  credentials: PasswordCredentials;
  /** How long a verdict is reused (token_cache_time); 0 asks Keystone every time. */
  cacheSeconds: number;
  /** Most tokens remembered at once. */
  cacheSize: number;
  /** One Keystone request's time limit. */
  timeoutMs: number;
  /** Where a refused client is sent to get a token (www_authenticate_uri). */
  wwwAuthenticateUri: string;
  /** Called at each failed sign-in of the service user: Keystone refused it, or did not answer. */
  onSignInFailure?: (reason: SignInFailure) => void;
}

/** Why the service could not sign in: its credentials were refused, or Keystone could not be asked. */
export type SignInFailure = 'refused' | 'unreachable';

/** Whether the service can sign in to Keystone now, and if not, why (for GET /readyz). */
export type KeystoneReadiness = { ready: true } | { ready: false; reason: string };

/** A failed sign-in is tried again by /readyz at most this often; until then its reason stands. */
const RECHECK_MS = 5_000;

export class KeystoneTokenValidator {
  readonly wwwAuthenticate: string;
  private readonly client: KeystoneClient;
  private readonly serviceToken: ServiceTokenSource;
  private readonly cache: TokenCache;
  private readonly inFlight = new Map<string, Promise<Verdict>>();
  /** The last failure to reach or sign in to Keystone, until a call to it succeeds again. */
  private problem: { reason: string; at: number } | undefined;
  /** When readiness last found Keystone answering. */
  private lastReady: number | undefined;

  constructor(
    settings: KeystoneSettings,
    fetcher: typeof fetch = (input, init) => fetch(input, init),
    private readonly now: () => number = () => Date.now(),
  ) {
    this.wwwAuthenticate = `Keystone uri="${settings.wwwAuthenticateUri}"`;
    this.client = new KeystoneClient(settings.authUrl, fetcher, settings.timeoutMs);
    const onSignInFailure = settings.onSignInFailure ?? (() => {});
    this.serviceToken = new ServiceTokenSource(this.client, settings.credentials, now, (err) =>
      onSignInFailure(err instanceof KeystoneCredentialsRefused ? 'refused' : 'unreachable'),
    );
    this.cache = new TokenCache(settings.cacheSeconds * 1000, settings.cacheSize, now);
  }

  /**
   * Whether tokens can be validated now: the service user signs in (its token
   * held, or a new one got) and Keystone answers. Keystone is asked at most
   * every RECHECK_MS; until then the last answer stands. After a failure the
   * check is a new sign-in (a wrong password stays wrong; Keystone may be back).
   */
  async readiness(): Promise<KeystoneReadiness> {
    const now = this.now();
    const known = this.problem;
    if (known && now - known.at < RECHECK_MS) return { ready: false, reason: known.reason };
    if (!known && this.lastReady !== undefined && now - this.lastReady < RECHECK_MS) return { ready: true };
    try {
      if (known) await this.serviceToken.renewNow();
      else {
        await this.serviceToken.token();
        await this.client.ping();
      }
      this.problem = undefined;
      this.lastReady = now;
      return { ready: true };
    } catch (err) {
      return { ready: false, reason: this.note(err) };
    }
  }

  /** Records a failure to reach or sign in to Keystone (kept for readiness); its reason. */
  private note(err: unknown): string {
    const refused = err instanceof KeystoneCredentialsRefused || err instanceof ServiceTokenRefused;
    if (!(refused || err instanceof KeystoneUnavailable)) return err instanceof Error ? err.message : String(err);
    const cause = err instanceof KeystoneUnavailable && err.cause instanceof KeystoneCredentialsRefused ? err.cause : err;
    const reason =
      cause instanceof KeystoneCredentialsRefused
        ? `the service cannot sign in to Keystone: ${cause.message}; check PLACEMENT_KEYSTONE_USERNAME, PLACEMENT_KEYSTONE_PASSWORD, PLACEMENT_KEYSTONE_PROJECT_NAME and their domains`
        : `the service cannot validate tokens with Keystone: ${(err as Error).message}`;
    this.problem = { reason, at: this.now() };
    this.lastReady = undefined;
    return reason;
  }

  /** Tokens whose verdicts are remembered now. */
  get cachedTokens(): number {
    return this.cache.size;
  }

  /**
   * The verdict on `token`; throws KeystoneUnavailable when Keystone cannot say and nothing is remembered.
   * With `allowExpired` (a user token beside a service token with the service role, as keystonemiddleware
   * does) a token that has expired is still valid: Keystone is asked with allow_expired, past a remembered
   * refusal, and such a verdict is not remembered (the cache keeps no token past its expiry).
   */
  async validate(token: string, options: { allowExpired?: boolean } = {}): Promise<Verdict> {
    const allowExpired = options.allowExpired === true;
    const digest = await tokenDigest(token);
    const known = this.cache.get(digest);
    if (known && (known.valid || !allowExpired)) return known;
    const key = allowExpired ? `${digest} allow_expired` : digest;
    let asking = this.inFlight.get(key);
    if (!asking) {
      asking = this.ask(token, allowExpired)
        .then((verdict) => {
          this.cache.set(digest, verdict);
          return verdict;
        })
        .finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, asking);
    }
    return asking;
  }

  private async ask(token: string, allowExpired: boolean): Promise<Verdict> {
    try {
      const verdict = await this.askKeystone(token, allowExpired);
      this.problem = undefined;
      return verdict;
    } catch (err) {
      this.note(err);
      throw err;
    }
  }

  private async askKeystone(token: string, allowExpired: boolean): Promise<Verdict> {
    try {
      let service = await this.serviceToken.token();
      let verdict: Verdict;
      try {
        verdict = await this.client.validate(service.token, token, allowExpired);
      } catch (err) {
        if (!(err instanceof ServiceTokenRefused)) throw err;
        // Our own token was revoked or expired early: one fresh one, one more try.
        service = await this.serviceToken.renewAfterRefusal(service.token);
        verdict = await this.client.validate(service.token, token, allowExpired);
      }
      if (!allowExpired && verdict.valid && verdict.identity.expiresAt <= this.now()) return { valid: false };
      return verdict;
    } catch (err) {
      if (err instanceof KeystoneCredentialsRefused) throw new KeystoneUnavailable(err.message, { cause: err });
      if (err instanceof ServiceTokenRefused) {
        throw new KeystoneUnavailable('Keystone refused a service token it had just issued', { cause: err });
      }
      throw err;
    }
  }
}
