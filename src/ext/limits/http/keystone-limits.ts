// Keystone's unified limits read as oslo.limit reads them: with a
// SYSTEM-scoped token of the service user (a project-scoped token sees only
// its own project's limits), GET /v3/registered_limits and GET /v3/limits for
// one service (resolved by name, type or id through GET /v3/services) and,
// when given, one region. Through the service's one Keystone client and token
// source (src/http/keystone/: the same renewal as token validation and Nova's
// identity), over any `fetch` (Node or workerd). Built by ../extension.ts, given to
// the limits (../service.ts) as their source.
import * as z from 'zod';
import {
  KeystoneClient,
  KeystoneCredentialsRefused,
  KeystoneForbidden,
  KeystoneUnavailable,
  ServiceTokenRefused,
  v3Url,
} from '../../../http/keystone/client.js';
import { ServiceTokenSource } from '../../../http/keystone/service-token.js';
import { LimitsAccessRefused, LimitsMisconfigured, LimitsUnavailable, READER_ROLE_COMMAND } from '../keystone.js';
import { classOfResourceName, type LimitSet } from '../model.js';

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
export class KeystoneLimitsReader {
  private readonly base: string;
  private readonly client: KeystoneClient;
  private readonly systemToken: ServiceTokenSource;
  private serviceId: string | undefined;

  constructor(private readonly options: KeystoneLimitsOptions) {
    this.base = v3Url(options.authUrl);
    this.client = new KeystoneClient(options.authUrl, options.fetcher, options.timeoutMs, this.describe());
    const { username, password, userDomainName } = options;
    this.systemToken = new ServiceTokenSource(this.client, { username, password, userDomainName, system: 'all' }, options.now);
  }

  /** Where the limits come from, for messages. */
  describe(): string {
    return `Keystone at ${v3Url(this.options.authUrl)}, service ${this.options.service}${this.options.region ? `, region ${this.options.region}` : ''}`;
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

  /** GET /v3{path} with the system token; refused once (revoked, or expired early), signed in again and asked once more. */
  private async get<T>(path: string, schema: z.ZodType<T>): Promise<T> {
    try {
      const held = await this.systemToken.token();
      try {
        return await this.client.read(path, held.token, schema);
      } catch (err) {
        if (!(err instanceof ServiceTokenRefused)) throw err;
        const renewed = await this.systemToken.renewAfterRefusal(held.token);
        return await this.client.read(path, renewed.token, schema);
      }
    } catch (err) {
      throw this.limitsError(err, `GET /v3${path.split('?')[0]}`);
    }
  }

  /** The client's error, as a start or a refresh words it. */
  private limitsError(err: unknown, what: string): unknown {
    const role = `give the user the reader role on the system: ${READER_ROLE_COMMAND(this.options.username, this.options.userDomainName)}`;
    if (err instanceof KeystoneCredentialsRefused) {
      return new LimitsAccessRefused(`${err.message}: check PLACEMENT_KEYSTONE_PASSWORD, and ${role}`);
    }
    if (err instanceof KeystoneForbidden || err instanceof ServiceTokenRefused) {
      const status = err instanceof KeystoneForbidden ? 403 : 401;
      return new LimitsAccessRefused(
        `${this.describe()} does not let user ${this.options.username} read ${what} (HTTP ${status}): ${role}`,
      );
    }
    if (err instanceof KeystoneUnavailable) return new LimitsUnavailable(err.message, { cause: err });
    return err;
  }
}
