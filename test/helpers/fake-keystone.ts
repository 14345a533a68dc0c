// A stand-in for Keystone's two token calls, for what a real Keystone cannot
// show cheaply: exact round-trip counts, Keystone refusing our own token,
// tokens expiring in seconds, and Worker mode (workerd cannot run Keystone;
// test/worker/fake-keystone-setup.ts serves this over HTTP). Everything
// else is tested against the real one (test/keystone/openstack-cloud.test.ts).
// The bodies are shaped as Keystone 22's.
import { keystoneEnv, SERVICE_USER } from './keystone-credentials.js';

export interface FakeUser {
  userId: string;
  projectId?: string;
  domainId?: string;
  system?: boolean;
  roles: string[];
  /** ms since the epoch; default an hour from when it was added. */
  expiresAt?: number;
}

export class FakeKeystone {
  /** Requests seen, as "METHOD /path". */
  readonly calls: string[] = [];
  /** While true every request fails as a refused connection would. */
  down = false;
  /** The catalog in the tokens password authentication issues (v3's shape). */
  catalog: { type: string; endpoints: { interface: string; url: string; region_id: string }[] }[] = [];
  private readonly users = new Map<string, Required<Pick<FakeUser, 'expiresAt'>> & FakeUser>();
  private readonly serviceTokens = new Map<string, number>();
  private issued = 0;

  constructor(
    /** How long the service user's tokens live. */
    private serviceTokenMs = 3_600_000,
    private readonly now: () => number = () => Date.now(),
  ) {}

  addUser(token: string, user: FakeUser): void {
    this.users.set(token, { ...user, expiresAt: user.expiresAt ?? this.now() + 3_600_000 });
  }

  revoke(token: string): void {
    this.users.delete(token);
    this.serviceTokens.delete(token);
  }

  count(call: string): number {
    return this.calls.filter((c) => c === call).length;
  }

  readonly fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    if (this.down) throw new TypeError('fetch failed: connect ECONNREFUSED');
    return this.handle(request);
  };

  async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    this.calls.push(`${request.method} ${url.pathname}`);
    // The version document, as Keystone answers GET /v3 (the service's readiness check asks it).
    if (url.pathname === '/v3' && request.method === 'GET') {
      return Response.json({ version: { id: 'v3.14', status: 'stable', links: [{ rel: 'self', href: url.href }] } });
    }
    if (url.pathname !== '/v3/auth/tokens') return new Response('{"error": {"code": 404}}', { status: 404 });
    if (request.method === 'POST') return this.passwordAuth(request);
    if (request.method === 'GET') return this.validate(request);
    return new Response(null, { status: 405 });
  }

  private async passwordAuth(request: Request): Promise<Response> {
    const body = (await request.json()) as {
      auth: { identity: { password: { user: { name: string; password: string } } }; scope: { project: { name: string } } };
    };
    const user = body.auth.identity.password.user;
    if (user.name !== SERVICE_USER.username || user.password !== SERVICE_USER.password) {
      return Response.json({ error: { code: 401, title: 'Unauthorized' } }, { status: 401 });
    }
    const token = `svc-${++this.issued}`;
    const expiresAt = this.now() + this.serviceTokenMs;
    this.serviceTokens.set(token, expiresAt);
    const issued = this.tokenBody({ userId: 'placement-user', projectId: 'service-project', roles: ['service'], expiresAt });
    return Response.json(
      { token: { ...issued.token, catalog: this.catalog } },
      {
        status: 201,
        headers: { 'x-subject-token': token },
      },
    );
  }

  private validate(request: Request): Response {
    const service = request.headers.get('x-auth-token') ?? '';
    const serviceExpiry = this.serviceTokens.get(service);
    if (serviceExpiry === undefined || serviceExpiry <= this.now()) {
      return Response.json({ error: { code: 401, title: 'Unauthorized' } }, { status: 401 });
    }
    const subject = request.headers.get('x-subject-token') ?? '';
    const user = this.users.get(subject);
    if (!user || user.expiresAt <= this.now()) {
      return Response.json({ error: { code: 404, message: `Could not find token: ${subject}` } }, { status: 404 });
    }
    return Response.json(this.tokenBody(user));
  }

  private tokenBody(user: FakeUser & { expiresAt: number }) {
    return {
      token: {
        methods: ['password'],
        user: { id: user.userId, name: user.userId, domain: { id: 'default', name: 'Default' } },
        ...(user.projectId ? { project: { id: user.projectId, name: user.projectId, domain: { id: 'default', name: 'Default' } } } : {}),
        ...(user.domainId ? { domain: { id: user.domainId, name: user.domainId } } : {}),
        ...(user.system ? { system: { all: true } } : {}),
        roles: user.roles.map((name, i) => ({ id: `role-${i}`, name })),
        expires_at: new Date(user.expiresAt).toISOString().replace('Z', '000Z'),
        issued_at: new Date(this.now()).toISOString(),
      },
    };
  }
}

/** PLACEMENT_KEYSTONE_* for the fake's service user. */
export const fakeKeystoneEnv = (authUrl: string, extra: Record<string, string> = {}): Record<string, string> => keystoneEnv(authUrl, extra);
