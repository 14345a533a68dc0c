// Keystone's identity API v3, as much as a service needs: password
// authentication, project- or system-scoped (POST /v3/auth/tokens), token
// validation (GET /v3/auth/tokens with X-Subject-Token) and reading a
// resource with the service's token (the limits: GET /v3/registered_limits),
// over any `fetch` (Node or workerd). The one client of every Keystone user in
// the service: token validation, Nova's identity and the project limits, each
// with its own ServiceTokenSource (service-token.ts: one renewal rule). No
// Hono here: the CLI imports the password part too.
import * as z from 'zod';

/** Keystone could not be asked (refused connection, timeout, 5xx, an unreadable answer): not the token's fault. */
export class KeystoneUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KeystoneUnavailable';
  }
}

/** Keystone refused the credentials we authenticate with (wrong password, unknown user or project). */
export class KeystoneCredentialsRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeystoneCredentialsRefused';
  }
}

const Named = z.object({ id: z.string(), name: z.string().optional() });
const WithDomain = Named.extend({ domain: Named.optional() });

/** The parts of a token body we read (keystone/token/token_formatters + render_token). */
const TokenBody = z.object({
  token: z.object({
    expires_at: z.string(),
    user: WithDomain,
    project: WithDomain.optional(),
    domain: Named.optional(),
    system: z.record(z.string(), z.boolean()).optional(),
    roles: z.array(z.object({ name: z.string() })).default([]),
    catalog: z
      .array(
        z.object({
          type: z.string(),
          endpoints: z.array(z.object({ interface: z.string(), url: z.string(), region_id: z.string().nullish() })),
        }),
      )
      .optional(),
  }),
});
type TokenBody = z.infer<typeof TokenBody>;

/** Who a token speaks for, as keystonemiddleware passes it on (X-User-Id, X-Project-Id, X-Roles, ...). */
export interface TokenIdentity {
  userId: string;
  userDomainId: string | null;
  /** Project-scoped tokens only. */
  projectId: string | null;
  projectDomainId: string | null;
  /** Domain-scoped tokens only. */
  domainId: string | null;
  /** 'all' for a system-scoped token (OpenStack-System-Scope). */
  systemScope: string | null;
  roles: string[];
  /** When the token stops being valid, in ms since the epoch. */
  expiresAt: number;
}

export interface CatalogEntry {
  type: string;
  endpoints: { interface: string; url: string; region: string | null }[];
}

export interface IssuedToken {
  token: string;
  identity: TokenIdentity;
  catalog: CatalogEntry[];
}

/** A user and its password, in its domain. */
export interface UserCredentials {
  username: string;
  password: string;
  userDomainName: string;
}

/** keystoneauth's v3 password plugin options (the [keystone_authtoken] / [placement] names): a project-scoped token. */
export interface PasswordCredentials extends UserCredentials {
  projectName: string;
  projectDomainName: string;
}

/** The same user signing in for a system-scoped token (oslo.limit's `system_scope = all`): what reads every project's limits. */
export interface SystemCredentials extends UserCredentials {
  system: 'all';
}

export type SignInCredentials = PasswordCredentials | SystemCredentials;

/** Keystone does not let the token read a resource (HTTP 403): a role is missing. */
export class KeystoneForbidden extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeystoneForbidden';
  }
}

export type Validation = { valid: true; identity: TokenIdentity } | { valid: false };

function identityOf(body: TokenBody): TokenIdentity {
  const t = body.token;
  const expiresAt = Date.parse(t.expires_at);
  if (Number.isNaN(expiresAt)) throw new KeystoneUnavailable(`Keystone answered a token with an unreadable expires_at: ${t.expires_at}`);
  return {
    userId: t.user.id,
    userDomainId: t.user.domain?.id ?? null,
    projectId: t.project?.id ?? null,
    projectDomainId: t.project?.domain?.id ?? null,
    domainId: t.domain?.id ?? null,
    systemScope: t.system?.all ? 'all' : null,
    roles: t.roles.map((r) => r.name),
    expiresAt,
  };
}

/** "http://ks:5000/v3", "http://ks:5000/v3/" and "http://ks:5000" all name the same v3 API. */
export function v3Url(authUrl: string): string {
  const trimmed = authUrl.replace(/\/+$/, '');
  return /\/v3$/.test(trimmed) ? trimmed : `${trimmed}/v3`;
}

export class KeystoneClient {
  private readonly base: string;
  /** Who is asked, in messages ("Keystone at <url>", or what a caller says it asks for). */
  readonly label: string;

  constructor(
    authUrl: string,
    private readonly fetcher: typeof fetch = (input, init) => fetch(input, init),
    private readonly timeoutMs = 10_000,
    label?: string,
  ) {
    this.base = v3Url(authUrl);
    this.label = label ?? `Keystone at ${this.base}`;
  }

  private async call(path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetcher(`${this.base}${path}`, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new KeystoneUnavailable(`${this.label} did not answer: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
  }

  private async tokenBody(res: Response): Promise<TokenBody> {
    const parsed = TokenBody.safeParse(await res.json().catch(() => undefined));
    if (!parsed.success) throw new KeystoneUnavailable(`${this.label} answered a token body that is not v3's`);
    return parsed.data;
  }

  /** Keystone answers its v3 version document (GET /v3): reachable and serving; else KeystoneUnavailable. */
  async ping(): Promise<void> {
    const res = await this.call('', { method: 'GET', headers: { accept: 'application/json' } });
    await res.body?.cancel();
    if (res.status !== 200) throw new KeystoneUnavailable(`${this.label} answered GET /v3 with HTTP ${res.status}`);
  }

  /** v3 password authentication (keystoneauth's `password` plugin), project-scoped, or system-scoped for SystemCredentials. */
  async passwordAuth(credentials: SignInCredentials): Promise<IssuedToken> {
    const system = 'system' in credentials;
    const body = {
      auth: {
        identity: {
          methods: ['password'],
          password: {
            user: { name: credentials.username, domain: { name: credentials.userDomainName }, password: credentials.password },
          },
        },
        scope: system
          ? { system: { all: true } }
          : { project: { name: credentials.projectName, domain: { name: credentials.projectDomainName } } },
      },
    };
    const res = await this.call('/auth/tokens', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status === 401 || res.status === 403 || res.status === 404) {
      await res.body?.cancel();
      // Keystone answers 401 alike for a wrong password and for a user without any role on the scope.
      const scope = system ? 'a system-scoped token' : `for project ${credentials.projectName} (domain ${credentials.projectDomainName})`;
      throw new KeystoneCredentialsRefused(
        `${this.label} refused user ${credentials.username} (domain ${credentials.userDomainName}) ${scope}: HTTP ${res.status}`,
      );
    }
    if (res.status !== 201 && res.status !== 200) {
      await res.body?.cancel();
      throw new KeystoneUnavailable(`${this.label} answered password authentication with HTTP ${res.status}`);
    }
    const token = res.headers.get('x-subject-token');
    if (!token) throw new KeystoneUnavailable(`${this.label} issued a token without X-Subject-Token`);
    const parsed = await this.tokenBody(res);
    const catalog = (parsed.token.catalog ?? []).map((entry) => ({
      type: entry.type,
      endpoints: entry.endpoints.map((e) => ({ interface: e.interface, url: e.url, region: e.region_id ?? null })),
    }));
    return { token, identity: identityOf(parsed), catalog };
  }

  /**
   * Validates `subject` with the service's own token (GET /v3/auth/tokens, no
   * catalog). Unknown, expired and revoked tokens are `{valid: false}`; a
   * refused service token throws ServiceTokenRefused so the caller renews it.
   * With `allowExpired` (keystonemiddleware's, beside a service token with the
   * service role) Keystone also answers a token that has expired, within its
   * `[token] allow_expired_window`: the identity then has `expiresAt` in the past.
   */
  async validate(serviceToken: string, subject: string, allowExpired = false): Promise<Validation> {
    const res = await this.call(`/auth/tokens?nocatalog${allowExpired ? '&allow_expired=1' : ''}`, {
      method: 'GET',
      headers: { 'x-auth-token': serviceToken, 'x-subject-token': subject, accept: 'application/json' },
    });
    if (res.status === 200) return { valid: true, identity: identityOf(await this.tokenBody(res)) };
    await res.body?.cancel();
    // 404: not a token Keystone knows (any more); 400: not even shaped as one.
    if (res.status === 404 || res.status === 400) return { valid: false };
    if (res.status === 401) throw new ServiceTokenRefused();
    if (res.status === 403) {
      throw new KeystoneUnavailable(
        `${this.label} does not let the service user validate tokens (HTTP 403): give it the service (or admin) role`,
      );
    }
    throw new KeystoneUnavailable(`${this.label} answered token validation with HTTP ${res.status}`);
  }

  /**
   * GET /v3{path} with `token`, its JSON body as `schema` reads it. 401:
   * ServiceTokenRefused (the caller renews its token and asks once more);
   * 403: KeystoneForbidden; any other answer but 200, or a body that is not
   * v3's: KeystoneUnavailable.
   */
  async read<T>(path: string, token: string, schema: z.ZodType<T>): Promise<T> {
    const what = `GET /v3${path.split('?')[0]}`;
    const res = await this.call(path, { method: 'GET', headers: { 'x-auth-token': token, accept: 'application/json' } });
    if (res.status !== 200) {
      await res.body?.cancel();
      if (res.status === 401) throw new ServiceTokenRefused();
      if (res.status === 403) throw new KeystoneForbidden(`${this.label} does not let the token read ${what} (HTTP 403)`);
      throw new KeystoneUnavailable(`${this.label} answered ${what} with HTTP ${res.status}`);
    }
    const parsed = schema.safeParse(await res.json().catch(() => undefined));
    if (!parsed.success) throw new KeystoneUnavailable(`${this.label} answered ${what} with a body that is not v3's`);
    return parsed.data;
  }
}

/** Keystone refused the service's own token (revoked, or expired early): authenticate again. */
export class ServiceTokenRefused extends Error {
  constructor() {
    super('Keystone refused the service token');
    this.name = 'ServiceTokenRefused';
  }
}

/** The first endpoint of `serviceType` on `iface` (and in `region` when given), as keystoneauth picks it. */
export function endpointFromCatalog(catalog: CatalogEntry[], serviceType: string, iface = 'public', region?: string): string | undefined {
  for (const entry of catalog) {
    if (entry.type !== serviceType) continue;
    const found = entry.endpoints.find((e) => e.interface === iface && (region === undefined || e.region === region));
    if (found) return found.url;
  }
  return undefined;
}
