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
}

export class KeystoneTokenValidator {
  readonly wwwAuthenticate: string;
  private readonly client: KeystoneClient;
  private readonly serviceToken: ServiceTokenSource;
  private readonly cache: TokenCache;
  private readonly inFlight = new Map<string, Promise<Verdict>>();

  constructor(
    settings: KeystoneSettings,
    fetcher: typeof fetch = (input, init) => fetch(input, init),
    private readonly now: () => number = () => Date.now(),
  ) {
    this.wwwAuthenticate = `Keystone uri="${settings.wwwAuthenticateUri}"`;
    this.client = new KeystoneClient(settings.authUrl, fetcher, settings.timeoutMs);
    this.serviceToken = new ServiceTokenSource(this.client, settings.credentials, now);
    this.cache = new TokenCache(settings.cacheSeconds * 1000, settings.cacheSize, now);
  }

  /** Tokens whose verdicts are remembered now. */
  get cachedTokens(): number {
    return this.cache.size;
  }

  /** The verdict on `token`; throws KeystoneUnavailable when Keystone cannot say and nothing is remembered. */
  async validate(token: string): Promise<Verdict> {
    const digest = await tokenDigest(token);
    const known = this.cache.get(digest);
    if (known) return known;
    let asking = this.inFlight.get(digest);
    if (!asking) {
      asking = this.ask(token)
        .then((verdict) => {
          this.cache.set(digest, verdict);
          return verdict;
        })
        .finally(() => this.inFlight.delete(digest));
      this.inFlight.set(digest, asking);
    }
    return asking;
  }

  private async ask(token: string): Promise<Verdict> {
    try {
      let service = await this.serviceToken.token();
      let verdict: Verdict;
      try {
        verdict = await this.client.validate(service.token, token);
      } catch (err) {
        if (!(err instanceof ServiceTokenRefused)) throw err;
        // Our own token was revoked or expired early: one fresh one, one more try.
        service = await this.serviceToken.renewAfterRefusal(service.token);
        verdict = await this.client.validate(service.token, token);
      }
      if (verdict.valid && verdict.identity.expiresAt <= this.now()) return { valid: false };
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
