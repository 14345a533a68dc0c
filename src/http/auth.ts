// Who is calling. Three strategies:
//  - noauth2 (local use, tests): as upstream placement's NoAuthMiddleware: an
//    x-auth-token is required; "user:project" sets ids; token "admin" is admin,
//    otherwise X-Roles lists roles; X-Project-Id overrides the project.
//  - token: bearer tokens from configuration, each mapped to roles and project.
//  - keystone: as keystonemiddleware's auth_token: X-Auth-Token validated by
//    Keystone (keystone/validator.ts, held in deps.keystone); a refusal names
//    Keystone in WWW-Authenticate, Keystone being down is 503.
// All set the request's credentials (c.get('credentials')); the root document needs no token.
//
// A service token (X-Service-Token, as keystonemiddleware reads it) rides
// beside the user's token: its roles become credentials.serviceRoles. In
// token mode it is any configured token (its roles); in noauth2 its roles are
// X-Service-Roles, the header keystonemiddleware sets for a valid one. In
// keystone mode, beside a valid service token with the service role, an
// expired (not revoked) user token still authenticates (allow_expired).
import { createMiddleware } from 'hono/factory';
import * as z from 'zod';
import { ApiError, webobDetail } from './api-error.js';
import type { AppEnv } from './env.js';
import { KeystoneUnavailable } from './keystone/client.js';
import type { KeystoneTokenValidator } from './keystone/validator.js';
import type { Credentials } from './policy.js';

const TokenEntry = z.object({
  roles: z.array(z.string()).default([]),
  project_id: z.string().nullable().default(null),
  user_id: z.string().nullable().default(null),
});
type TokenEntry = z.infer<typeof TokenEntry>;
export const TokenTableJson = z.record(z.string(), TokenEntry);

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

/** Compares two digests in time that does not depend on where they differ. */
function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ (b[i] ?? 0);
  return diff === 0;
}

/**
 * The configured tokens (token mode). Only the table's own entries count (a
 * token like "__proto__" finds nothing), and a presented token is hashed and
 * compared with every configured digest, so the answer's timing says nothing
 * about how much of a token was right.
 */
export class TokenTable {
  private digests: Promise<{ digest: Uint8Array; entry: TokenEntry }[]> | undefined;

  constructor(private readonly entries: ReadonlyMap<string, TokenEntry>) {}

  async lookup(token: string): Promise<TokenEntry | undefined> {
    this.digests ??= Promise.all([...this.entries].map(async ([key, entry]) => ({ digest: await sha256(key), entry })));
    const [known, presented] = await Promise.all([this.digests, sha256(token)]);
    let found: TokenEntry | undefined;
    for (const { digest, entry } of known) if (sameDigest(digest, presented)) found = entry;
    return found;
  }
}

/** PLACEMENT_AUTH_TOKENS: JSON {"<token>": {"roles": [...], "project_id": ..., "user_id": ...}}. */
export function parseTokenTable(json: string | undefined): TokenTable {
  if (!json) return new TokenTable(new Map());
  return new TokenTable(new Map(Object.entries(TokenTableJson.parse(JSON.parse(json)))));
}

const unauthorized = (headers?: Record<string, string>) => new ApiError(401, webobDetail(401, 'Authentication required'), { headers });

function rolesHeader(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
}

export function noauthCredentials(headers: Headers): Credentials | null {
  const token = headers.get('x-auth-token');
  if (token === null) return null;
  const sep = token.indexOf(':');
  const userId = sep < 0 ? token : token.slice(0, sep);
  const tokenProject = sep < 0 ? userId : token.slice(sep + 1) || userId;
  const systemScope = headers.get('openstack-system-scope');
  const roles = userId === 'admin' ? ['admin', 'member', 'reader'] : rolesHeader(headers.get('x-roles') ?? undefined);
  const projectId = systemScope ? null : (headers.get('x-project-id') ?? tokenProject);
  const serviceRoles = headers.get('x-service-token') === null ? [] : rolesHeader(headers.get('x-service-roles') ?? undefined);
  return { userId: headers.get('x-user-id') ?? userId, projectId, roles, systemScope, serviceRoles };
}

async function tokenCredentials(headers: Headers, tokens: TokenTable): Promise<Credentials | null> {
  const presented = headers.get('x-auth-token') ?? headers.get('authorization')?.replace(/^Bearer\s+/i, '');
  const entry = presented ? await tokens.lookup(presented) : undefined;
  if (!entry) return null;
  // As keystonemiddleware: a service token that does not authenticate fails the request.
  const serviceToken = headers.get('x-service-token');
  const service = serviceToken === null ? undefined : await tokens.lookup(serviceToken);
  if (serviceToken !== null && !service) return null;
  return { userId: entry.user_id, projectId: entry.project_id, roles: entry.roles, systemScope: null, serviceRoles: service?.roles ?? [] };
}

/** The service role makes a service token count (keystonemiddleware's service_token_roles). */
const SERVICE_ROLE = 'service';

async function keystoneCredentials(headers: Headers, keystone: KeystoneTokenValidator): Promise<Credentials | null> {
  const token = headers.get('x-auth-token');
  if (!token) return null;
  const serviceToken = headers.get('x-service-token');
  const [user, service] = await Promise.all([
    keystone.validate(token),
    serviceToken === null ? undefined : keystone.validate(serviceToken),
  ]);
  // As keystonemiddleware: a service token that does not authenticate fails the request.
  if (service?.valid === false) return null;
  const serviceRoles = service?.valid && service.identity.roles.some((r) => r.toLowerCase() === SERVICE_ROLE) ? service.identity.roles : [];
  // keystonemiddleware's allow_expired: beside a service token with the service role, a user token that
  // has expired still authenticates (Nova finishing a long operation a user started), not a revoked one.
  const checked = !user.valid && serviceRoles.length > 0 ? await keystone.validate(token, { allowExpired: true }) : user;
  if (!checked.valid) return null;
  const { identity } = checked;
  return {
    userId: identity.userId,
    projectId: identity.projectId,
    roles: identity.roles,
    systemScope: identity.systemScope,
    serviceRoles,
    domainId: identity.domainId,
    userDomainId: identity.userDomainId,
    projectDomainId: identity.projectDomainId,
  };
}

export type AuthStrategy = 'noauth2' | 'token' | 'keystone';

export function authenticate(opts: { strategy: AuthStrategy; tokens: TokenTable; publicPaths: RegExp }) {
  return createMiddleware<AppEnv>(async function authMiddleware(c, next) {
    if (c.req.method === 'OPTIONS' || opts.publicPaths.test(c.req.path)) return next();
    const headers = c.req.raw.headers;
    if (opts.strategy === 'keystone') {
      const keystone = c.get('deps').keystone;
      if (!keystone) throw new Error('PLACEMENT_AUTH_STRATEGY=keystone but the deps carry no Keystone validator');
      let creds: Credentials | null;
      try {
        creds = await keystoneCredentials(headers, keystone);
      } catch (err) {
        if (!(err instanceof KeystoneUnavailable)) throw err;
        c.get('deps').log.warn('Keystone unavailable: token not validated', { requestId: c.get('requestId'), err: err.message });
        throw new ApiError(503, webobDetail(503, 'The identity service (Keystone) could not validate the token; try again later.'));
      }
      if (!creds) throw unauthorized({ 'www-authenticate': keystone.wwwAuthenticate });
      c.set('credentials', creds);
      return next();
    }
    const creds = opts.strategy === 'noauth2' ? noauthCredentials(headers) : await tokenCredentials(headers, opts.tokens);
    if (!creds) throw unauthorized();
    c.set('credentials', creds);
    return next();
  });
}
