// Who is calling. Two strategies:
//  - noauth2 (local use, tests): as upstream placement's NoAuthMiddleware: an
//    x-auth-token is required; "user:project" sets ids; token "admin" is admin,
//    otherwise X-Roles lists roles; X-Project-Id overrides the project.
//  - token: bearer tokens from configuration, each mapped to roles and project.
// Both fill c.var.credentials; the root document needs no token.
import { createMiddleware } from 'hono/factory';
import { z } from 'zod';
import { ApiError, webobDetail } from './api-error.js';
import type { AppEnv } from './env.js';
import type { Credentials } from './policy.js';

const TokenTable = z.record(
  z.string(),
  z.object({
    roles: z.array(z.string()).default([]),
    project_id: z.string().nullable().default(null),
    user_id: z.string().nullable().default(null),
  }),
);
export type TokenTable = z.infer<typeof TokenTable>;

export function parseTokenTable(json: string | undefined): TokenTable {
  if (!json) return {};
  return TokenTable.parse(JSON.parse(json));
}

const unauthorized = () => new ApiError(401, webobDetail(401, 'Authentication required'));

function rolesHeader(value: string | undefined): string[] {
  return (value ?? '').split(',').map((r) => r.trim()).filter(Boolean);
}

export function noauthCredentials(headers: Headers): Credentials | null {
  const token = headers.get('x-auth-token');
  if (token === null) return null;
  const sep = token.indexOf(':');
  const userId = sep < 0 ? token : token.slice(0, sep);
  const tokenProject = sep < 0 ? userId : token.slice(sep + 1) || userId;
  const systemScope = headers.get('openstack-system-scope');
  const roles = userId === 'admin' ? ['admin', 'member', 'reader'] : rolesHeader(headers.get('x-roles') ?? undefined);
  const projectId = systemScope ? null : headers.get('x-project-id') ?? tokenProject;
  return { userId: headers.get('x-user-id') ?? userId, projectId, roles, systemScope };
}

export function authenticate(opts: { strategy: 'noauth2' | 'token'; tokens: TokenTable; publicPaths: RegExp }) {
  return createMiddleware<AppEnv>(async function authMiddleware(c, next) {
    if (c.req.method === 'OPTIONS' || opts.publicPaths.test(c.req.path)) return next();
    let creds: Credentials | null;
    if (opts.strategy === 'noauth2') {
      creds = noauthCredentials(c.req.raw.headers);
    } else {
      const header = c.req.header('x-auth-token') ?? c.req.header('authorization')?.replace(/^Bearer\s+/i, '');
      const entry = header ? opts.tokens[header] : undefined;
      creds = entry
        ? { userId: entry.user_id, projectId: entry.project_id, roles: entry.roles, systemScope: null }
        : null;
    }
    if (!creds) throw unauthorized();
    c.set('credentials', creds);
    return next();
  });
}
