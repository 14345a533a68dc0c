// Reading Keystone's unified limits (extension, docs/limits.md) as oslo.limit reads
// them: with a SYSTEM-scoped token of the service user (a project-scoped
// token sees only its own project's limits), GET /v3/registered_limits and
// GET /v3/limits for one service (resolved by name, type or id through
// GET /v3/services) and, when given, one region. Over any `fetch` (Node or
// workerd); no Hono, no database.
import { z } from 'zod';
import { classOfResourceName, type LimitSet } from './model.js';

/** The role assignment the service user needs, as oslo.limit documents it. */
export const READER_ROLE_COMMAND = (user: string, domain: string) =>
  `openstack role add --user ${user} --user-domain ${domain} --system all reader`;

/** Keystone will not let the service user read the limits: a start refuses, naming the role. */
export class LimitsAccessRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LimitsAccessRefused';
  }
}

/** The limits cannot be read as configured (no such service, a name repeated across regions): a start refuses. */
export class LimitsMisconfigured extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'LimitsMisconfigured';
  }
}

/** Keystone did not answer (down, timeout, 5xx): the last limits stay in force. */
export class LimitsUnavailable extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LimitsUnavailable';
  }
}

export interface KeystoneLimitsOptions {
  authUrl: string;
  username: string;
  password: string;
  userDomainName: string;
  /** Service name, type or id. */
  service: string;
  region?: string;
  timeoutMs: number;
  fetcher?: typeof fetch;
  now?: () => number;
}

const Services = z.object({ services: z.array(z.object({ id: z.string(), name: z.string().nullish(), type: z.string().nullish() })) });
const RegisteredLimits = z.object({
  registered_limits: z.array(z.object({ resource_name: z.string(), default_limit: z.number().int(), region_id: z.string().nullish() })),
});
const ProjectLimits = z.object({
  limits: z.array(
    z.object({
      resource_name: z.string(),
      resource_limit: z.number().int(),
      project_id: z.string().nullish(),
      region_id: z.string().nullish(),
    }),
  ),
});
const IssuedToken = z.object({ token: z.object({ expires_at: z.string() }) });

/** Renew the system token this long before it expires. */
const RENEW_BEFORE_MS = 60_000;

export class KeystoneLimitsReader {
  private readonly base: string;
  private readonly fetcher: typeof fetch;
  private readonly now: () => number;
  private token: { value: string; expiresAt: number } | undefined;
  private serviceId: string | undefined;

  constructor(private readonly options: KeystoneLimitsOptions) {
    const trimmed = options.authUrl.replace(/\/+$/, '');
    this.base = /\/v3$/.test(trimmed) ? trimmed : `${trimmed}/v3`;
    this.fetcher = options.fetcher ?? ((input, init) => fetch(input, init));
    this.now = options.now ?? (() => Date.now());
  }

  /** Where the limits come from, for messages. */
  describe(): string {
    return `Keystone at ${this.base}, service ${this.options.service}${this.options.region ? `, region ${this.options.region}` : ''}`;
  }

  /** The registered and project limits of the service (and region), by resource class. */
  async read(): Promise<LimitSet> {
    const service = await this.service();
    const query = new URLSearchParams({ service_id: service });
    if (this.options.region) query.set('region_id', this.options.region);
    const [registered, projects] = await Promise.all([
      this.get(`/registered_limits?${query}`, RegisteredLimits),
      this.get(`/limits?${query}`, ProjectLimits),
    ]);
    const defaults = new Map<string, number>();
    for (const limit of registered.registered_limits) {
      const rc = classOfResourceName(limit.resource_name);
      if (rc === undefined) continue;
      if (defaults.has(rc)) throw this.repeated(limit.resource_name);
      defaults.set(rc, limit.default_limit);
    }
    const overrides = new Map<string, Map<string, number>>();
    for (const limit of projects.limits) {
      const rc = classOfResourceName(limit.resource_name);
      // Domain limits (project_id null) are not project limits: oslo.limit's flat model ignores them too.
      if (rc === undefined || !limit.project_id) continue;
      const classes = overrides.get(limit.project_id) ?? new Map<string, number>();
      if (classes.has(rc)) throw this.repeated(limit.resource_name, limit.project_id);
      classes.set(rc, limit.resource_limit);
      overrides.set(limit.project_id, classes);
    }
    return { registered: defaults, projects: overrides };
  }

  private repeated(name: string, project?: string): LimitsMisconfigured {
    return new LimitsMisconfigured(
      'PLACEMENT_LIMITS_REGION',
      `${this.describe()} has more than one ${project ? `limit of project ${project}` : 'registered limit'} for ${name} (one per region): name the region whose limits apply`,
    );
  }

  private async service(): Promise<string> {
    if (this.serviceId) return this.serviceId;
    const { services } = await this.get('/services', Services);
    const wanted = this.options.service;
    const byId = services.find((s) => s.id === wanted);
    const matches = byId ? [byId] : services.filter((s) => s.name === wanted || s.type === wanted);
    if (matches.length !== 1) {
      throw new LimitsMisconfigured(
        'PLACEMENT_LIMITS_SERVICE',
        `Keystone at ${this.base} has ${matches.length === 0 ? 'no' : `${matches.length}`} service${matches.length === 1 ? '' : 's'} named ${JSON.stringify(wanted)} (by id, name or type): ${services.map((s) => `${s.name ?? '?'} (${s.type ?? '?'})`).join(', ') || 'none'}`,
      );
    }
    this.serviceId = matches[0]!.id;
    return this.serviceId;
  }

  private async call(path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.fetcher(`${this.base}${path}`, { ...init, signal: AbortSignal.timeout(this.options.timeoutMs) });
    } catch (err) {
      throw new LimitsUnavailable(`${this.describe()} did not answer: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
  }

  private async get<T>(path: string, schema: z.ZodType<T>, retried = false): Promise<T> {
    const token = await this.systemToken();
    const res = await this.call(path, { method: 'GET', headers: { 'x-auth-token': token, accept: 'application/json' } });
    if (res.status === 401 && !retried) {
      // Revoked or expired early: sign in again, once.
      await res.body?.cancel();
      this.token = undefined;
      return this.get(path, schema, true);
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      throw new LimitsAccessRefused(
        `${this.describe()} does not let user ${this.options.username} read GET /v3${path.split('?')[0]} (HTTP ${res.status}): give it the reader role on the system: ${this.roleCommand()}`,
      );
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new LimitsUnavailable(`${this.describe()} answered GET /v3${path.split('?')[0]} with HTTP ${res.status}`);
    }
    const parsed = schema.safeParse(await res.json().catch(() => undefined));
    if (!parsed.success)
      throw new LimitsUnavailable(`${this.describe()} answered GET /v3${path.split('?')[0]} with a body that is not v3's`);
    return parsed.data;
  }

  private roleCommand(): string {
    return READER_ROLE_COMMAND(this.options.username, this.options.userDomainName);
  }

  /** A system-scoped token of the service user (password authentication), renewed before it expires. */
  private async systemToken(): Promise<string> {
    if (this.token && this.token.expiresAt - this.now() > RENEW_BEFORE_MS) return this.token.value;
    const { username, password, userDomainName } = this.options;
    const res = await this.call('/auth/tokens?nocatalog', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { name: username, domain: { name: userDomainName }, password } } },
          scope: { system: { all: true } },
        },
      }),
    });
    if (res.status === 401 || res.status === 403 || res.status === 404) {
      await res.body?.cancel();
      // Keystone answers 401 alike for a wrong password and for a user without any role on the system.
      throw new LimitsAccessRefused(
        `Keystone at ${this.base} refused a system-scoped token to user ${username} (domain ${userDomainName}) (HTTP ${res.status}): check PLACEMENT_KEYSTONE_PASSWORD, and give the user the reader role on the system: ${this.roleCommand()}`,
      );
    }
    const value = res.headers.get('x-subject-token');
    const body = IssuedToken.safeParse(await res.json().catch(() => undefined));
    if (res.status !== 201 || !value || !body.success) {
      throw new LimitsUnavailable(`Keystone at ${this.base} answered the service user's sign-in with HTTP ${res.status}`);
    }
    const expiresAt = Date.parse(body.data.token.expires_at);
    this.token = { value, expiresAt: Number.isNaN(expiresAt) ? this.now() + RENEW_BEFORE_MS * 2 : expiresAt };
    return value;
  }
}
