// A real Keystone for tests: Debian's python3-keystone under uwsgi, on a
// sqlite database and fernet keys in a temp dir, bootstrapped with
// `keystone-manage bootstrap` (admin user and project, RegionOne, the
// identity endpoint) on a free loopback port. keystoneMissing() names the
// package to install when it cannot run here (`.ci/run` installs them).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KeystoneUser } from './keystone-credentials.js';
import { UWSGI, UWSGI_PYTHON3, uwsgiHttpArgs } from './uwsgi.js';

const run = promisify(execFile);

const KEYSTONE_MANAGE = '/usr/bin/keystone-manage';
const KEYSTONE_WSGI = '/usr/bin/keystone-wsgi-public';
/** Debian's interpreter, where python3-keystone lives (not a python3 earlier on PATH). */
const PYTHON = '/usr/bin/python3';
const SETUP = join(import.meta.dirname, 'keystone-setup.py');
export const ADMIN_PASSWORD = 'keystone-admin-pw';

/** The `openstack` CLI's environment for the admin of the Keystone at `authUrl` (project admin, RegionOne). */
export function adminCliEnv(authUrl: string): Record<string, string> {
  return {
    OS_AUTH_URL: authUrl,
    OS_IDENTITY_API_VERSION: '3',
    OS_USERNAME: 'admin',
    OS_PASSWORD: ADMIN_PASSWORD,
    OS_PROJECT_NAME: 'admin',
    OS_USER_DOMAIN_NAME: 'Default',
    OS_PROJECT_DOMAIN_NAME: 'Default',
    OS_REGION_NAME: 'RegionOne',
  };
}

/** Why a real Keystone cannot run here (naming the Debian package), or undefined when it can. */
export function keystoneMissing(): string | undefined {
  if (!existsSync(KEYSTONE_MANAGE) || !existsSync(KEYSTONE_WSGI))
    return 'python3-keystone is not installed (keystone-manage, keystone-wsgi-public)';
  if (!existsSync(UWSGI)) return 'uwsgi is not installed';
  if (!existsSync(UWSGI_PYTHON3)) return 'uwsgi-plugin-python3 is not installed';
  return undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface Keystone {
  /** The identity v3 URL, http://127.0.0.1:PORT/v3. */
  url: string;
  dir: string;
  /** A project-scoped token for `user` (password auth), as any client gets one. */
  token(user: string, password: string, project: string, domain?: string): Promise<string>;
  /** A token of the bootstrap admin (project admin). */
  adminToken(): Promise<string>;
  /** A JSON call to the identity API as the bootstrap admin. */
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** A JSON call to the identity API as the bootstrap admin that must succeed (status < 300); its body ({} for 204). */
  json<T>(method: string, path: string, body?: unknown): Promise<T>;
  /**
   * `user` (keystone-credentials.ts: name, password, project) made, holding `roles` on its project,
   * in the Default domain; the project and any role Keystone lacks (such as `service`) are made when missing.
   */
  projectUser(user: KeystoneUser, roles: string[]): Promise<{ projectId: string; userId: string }>;
  /** The end of uwsgi's output (its request log and errors), for a failing test's message. */
  serverLog(): string;
  /** Stops uwsgi (the test of Keystone going down mid-run); the files stay until close(). */
  stop(): Promise<void>;
  /** Stops Keystone if it runs and removes its files. */
  close(): Promise<void>;
}

export interface KeystoneOptions {
  /** `[token] expiration`: how long a token Keystone issues lives (default 3600 s). */
  tokenExpirationSeconds?: number;
  /** The loopback port to listen on (default a free one). */
  port?: number;
}

function keystoneConf(dir: string, options: KeystoneOptions): string {
  return [
    '[DEFAULT]',
    `log_file = ${join(dir, 'keystone.log')}`,
    '[database]',
    `connection = sqlite:///${join(dir, 'keystone.db')}`,
    '[token]',
    'provider = fernet',
    `expiration = ${options.tokenExpirationSeconds ?? 3600}`,
    '[fernet_tokens]',
    `key_repository = ${join(dir, 'fernet-keys')}`,
    '[fernet_receipts]',
    `key_repository = ${join(dir, 'fernet-keys')}`,
    '[credential]',
    `key_repository = ${join(dir, 'credential-keys')}`,
    // Keystone's own cache would answer a revoked token as valid for a while: off, so
    // what the tests see of revocation is placement-edge's cache alone.
    '[cache]',
    'enabled = false',
    '',
  ].join('\n');
}

async function waitForKeystone(url: string, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`uwsgi exited with ${child.exitCode}:\n${log()}`);
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`Keystone did not answer at ${url} within 120 s:\n${log()}`);
}

/** Sets up and starts a Keystone: about 8 s of CPU, mostly Python importing Keystone twice. */
export async function startKeystone(options: KeystoneOptions = {}): Promise<Keystone> {
  const missing = keystoneMissing();
  if (missing) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), 'keystone-'));
  mkdirSync(join(dir, 'fernet-keys'));
  mkdirSync(join(dir, 'credential-keys'));
  const conf = join(dir, 'keystone.conf');
  writeFileSync(conf, keystoneConf(dir, options));
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}/v3`;
  const t0 = Date.now();
  const step = (name: string) => {
    if (process.env.KEYSTONE_DEBUG) console.error(`keystone: ${name} after ${Date.now() - t0} ms`);
  };
  try {
    const { username, gid } = userInfo();
    await run(PYTHON, [SETUP, conf, username, String(gid), ADMIN_PASSWORD, url], { cwd: dir, timeout: 240_000 });
    step('bootstrap');
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  let output = '';
  const child = spawn(
    UWSGI,
    [
      ...uwsgiHttpArgs(port, KEYSTONE_WSGI),
      // One process, one thread: a sqlite connection opened in one thread and closed by
      // another keeps its lock. The app is loaded in the worker itself (--lazy-apps), so no
      // connection is shared across the fork.
      '--processes',
      '1',
      '--lazy-apps',
      // The default 4 s for reading a request is too short on a loaded machine, where
      // Keystone takes seconds per request: the answer was an empty 500.
      '--socket-timeout',
      '120',
      '--die-on-term',
      '--need-app',
    ],
    { cwd: dir, env: { ...process.env, OS_KEYSTONE_CONFIG_FILES: conf }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      const kill = setTimeout(() => child.kill('SIGKILL'), 5_000);
      child.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      child.kill('SIGTERM');
    });
  try {
    await waitForKeystone(url, child, () => output);
    step('uwsgi answering');
  } catch (err) {
    await stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  const token = async (user: string, password: string, project: string, domain = 'Default') => {
    const res = await fetch(`${url}/auth/tokens?nocatalog`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { name: user, domain: { name: domain }, password } } },
          scope: { project: { name: project, domain: { name: domain } } },
        },
      }),
    });
    if (res.status !== 201) throw new Error(`Keystone refused ${user}: ${res.status} ${await res.text()}`);
    return res.headers.get('x-subject-token')!;
  };
  // Renewed after half its life, for a Keystone issuing short-lived tokens.
  const adminLifeMs = ((options.tokenExpirationSeconds ?? 3600) * 1000) / 2;
  let admin: { token: string; at: number } | undefined;
  const adminToken = async () => {
    if (!admin || Date.now() - admin.at > adminLifeMs) admin = { at: Date.now(), token: await token('admin', ADMIN_PASSWORD, 'admin') };
    return admin.token;
  };
  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method,
      headers: { 'x-auth-token': await adminToken(), 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const json = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const res = await api(method, path, body);
    if (res.status >= 300) throw new Error(`Keystone ${method} ${path}: ${res.status} ${await res.text()}`);
    return (res.status === 204 ? {} : await res.json()) as T;
  };
  const projectUser = async ({ username, password, project }: KeystoneUser, roles: string[]) => {
    const found = await json<{ projects: { id: string }[] }>('GET', `/projects?name=${encodeURIComponent(project)}&domain_id=default`);
    const projectId =
      found.projects[0]?.id ??
      (await json<{ project: { id: string } }>('POST', '/projects', { project: { name: project, domain_id: 'default' } })).project.id;
    const userId = (await json<{ user: { id: string } }>('POST', '/users', { user: { name: username, domain_id: 'default', password } }))
      .user.id;
    const known = (await json<{ roles: { id: string; name: string }[] }>('GET', '/roles')).roles;
    for (const role of roles) {
      const roleId =
        known.find((r) => r.name === role)?.id ??
        (await json<{ role: { id: string } }>('POST', '/roles', { role: { name: role } })).role.id;
      await json('PUT', `/projects/${projectId}/users/${userId}/roles/${roleId}`);
    }
    return { projectId, userId };
  };
  return {
    url,
    dir,
    token,
    adminToken,
    api,
    json,
    projectUser,
    serverLog: () => output,
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
