// A real Keystone for tests: Debian's python3-keystone under uwsgi, on a
// sqlite database and fernet keys in a temp dir, bootstrapped with
// `keystone-manage bootstrap` (admin user and project, RegionOne, the
// identity endpoint) on a free loopback port. keystoneMissing() names the
// package to install when it cannot run here (`.ci/run` installs them).
//
// In a vitest run (test/keystone-run.ts names a folder for the run) the
// bootstrap runs once and each Keystone starts from a copy of its database and
// keys, and sharedKeystone() is one Keystone for every file of the run that
// can share it: started by the first file that asks, behind a lock, and
// stopped when the run ends. Files on it make their own users, projects and
// endpoints; one that must cut Keystone off puts a pausable link in front.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KeystoneUser } from './keystone-credentials.js';
import { waitUntil } from './wait.js';

const run = promisify(execFile);

const KEYSTONE_MANAGE = '/usr/bin/keystone-manage';
const KEYSTONE_WSGI = '/usr/bin/keystone-wsgi-public';
const UWSGI = '/usr/bin/uwsgi';
const UWSGI_PYTHON3 = '/usr/lib/uwsgi/plugins/python3_plugin.so';
/** Debian's interpreter, where python3-keystone lives (not a python3 earlier on PATH). */
const PYTHON = '/usr/bin/python3';
const SETUP = join(import.meta.dirname, 'keystone-setup.py');
/** Keystone's WSGI application with a token life per port (sharedKeystone). */
const SHARED_WSGI = join(import.meta.dirname, 'keystone-wsgi.py');
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

/** placement-admin's sign-in options for the admin of the Keystone at `authUrl` (project admin). */
export function adminLoginArgs(authUrl: string): string[] {
  return [
    '--keystone-auth-url',
    authUrl,
    '--keystone-username',
    'admin',
    '--keystone-password',
    ADMIN_PASSWORD,
    '--keystone-project-name',
    'admin',
  ];
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
  /**
   * Stops uwsgi (the test of Keystone going down mid-run); the files stay until close().
   * The shared Keystone refuses: its other files still use it (cut a pausable link instead).
   */
  stop(): Promise<void>;
  /** Stops Keystone if it runs and removes its files (nothing for the shared one: the run's end stops it). */
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
    // bcrypt's fewest rounds: each password sign-in cost Keystone 0.2 s of CPU at the default 12,
    // under 1 ms at 4; a wrong password is refused all the same.
    '[identity]',
    'password_hash_rounds = 4',
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
  await waitUntil(
    `Keystone answering at ${url}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`uwsgi exited with ${child.exitCode}:\n${log()}`);
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
        await res.body?.cancel();
        return res.status === 200;
      } catch {
        return false; // not listening yet
      }
    },
    120_000,
    100,
  );
}

/** The variable naming this vitest run's folder of Keystone parts (set by test/keystone-run.ts). */
export const KEYSTONE_RUN_VAR = 'PLACEMENT_TEST_KEYSTONE_RUN';

const runDir = (): string | undefined => process.env[KEYSTONE_RUN_VAR] || undefined;

/**
 * Runs `make` once per run folder, whichever process asks first (a lock folder); the others
 * wait for it to finish, and fail with its error when it failed.
 */
async function once(dir: string, name: string, make: () => Promise<void>): Promise<void> {
  const done = join(dir, `${name}.done`);
  const failed = join(dir, `${name}.failed`);
  try {
    mkdirSync(join(dir, `${name}.lock`));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    await waitUntil(`${name} made by another test file`, () => existsSync(done) || existsSync(failed), 300_000, 100);
    if (existsSync(failed)) throw new Error(`${name} failed in another test file: ${readFileSync(failed, 'utf8')}`);
    return;
  }
  try {
    await make();
    writeFileSync(done, '');
  } catch (err) {
    writeFileSync(failed, err instanceof Error ? (err.stack ?? err.message) : String(err));
    throw err;
  }
}

/** `keystone-manage` db_sync, fernet and credential keys and bootstrap into `dir` (one Python process). */
async function bootstrap(dir: string, url: string): Promise<void> {
  mkdirSync(join(dir, 'fernet-keys'));
  mkdirSync(join(dir, 'credential-keys'));
  const conf = join(dir, 'keystone.conf');
  writeFileSync(conf, keystoneConf(dir, {}));
  const { username, gid } = userInfo();
  await run(PYTHON, [SETUP, conf, username, String(gid), ADMIN_PASSWORD, url], { cwd: dir, timeout: 240_000 });
}

/**
 * A bootstrapped Keystone's database and keys in `dir`, its identity endpoint at `url`:
 * copied from the run's bootstrap when in a run (made by the first to ask), else bootstrapped here.
 */
async function prepare(dir: string, url: string): Promise<void> {
  const run_ = runDir();
  if (!run_) return bootstrap(dir, url);
  const template = join(run_, 'bootstrapped');
  await once(run_, 'bootstrapped', async () => {
    mkdirSync(template);
    await bootstrap(template, 'http://127.0.0.1:1/v3');
  });
  for (const part of ['keystone.db', 'fernet-keys', 'credential-keys']) cpSync(join(template, part), join(dir, part), { recursive: true });
  // The bootstrap's identity endpoint (public, internal, admin) moves to this Keystone's URL.
  await run(PYTHON, [
    '-c',
    'import sqlite3, sys\ndb = sqlite3.connect(sys.argv[1])\ndb.execute("UPDATE endpoint SET url = ?", (sys.argv[2],))\ndb.commit()\ndb.close()',
    join(dir, 'keystone.db'),
    url,
  ]);
}

function uwsgiArgs(wsgiFile: string, ports: number[], processes = 1): string[] {
  return [
    '--plugin',
    'python3',
    ...ports.flatMap((port) => ['--http-socket', `127.0.0.1:${port}`]),
    // uwsgi closes each connection after its answer: say so, or a client reusing the
    // connection for a POST fails (RemoteDisconnected, and POSTs are not retried).
    '--add-header',
    'Connection: close',
    '--wsgi-file',
    wsgiFile,
    '--master',
    // One thread per process: a sqlite connection opened in one thread and closed by
    // another keeps its lock. The app is loaded in each worker itself (--lazy-apps), so no
    // connection is shared across the fork.
    '--processes',
    String(processes),
    '--lazy-apps',
    // The default 4 s for reading a request is too short on a loaded machine, where
    // Keystone takes seconds per request: the answer was an empty 500.
    '--socket-timeout',
    '120',
    '--die-on-term',
    '--need-app',
  ];
}

/** Sets up and starts a Keystone of this file's own: in a run, about 4 s of CPU (Python importing Keystone); else twice that. */
export async function startKeystone(options: KeystoneOptions = {}): Promise<Keystone> {
  const missing = keystoneMissing();
  if (missing) throw new Error(missing);
  const dir = mkdtempSync(join(tmpdir(), 'keystone-'));
  const conf = join(dir, 'keystone.conf');
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}/v3`;
  const t0 = Date.now();
  const step = (name: string) => {
    if (process.env.KEYSTONE_DEBUG) console.error(`keystone: ${name} after ${Date.now() - t0} ms`);
  };
  try {
    await prepare(dir, url);
    writeFileSync(conf, keystoneConf(dir, options));
    step('bootstrap');
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }

  let output = '';
  const child = spawn(UWSGI, uwsgiArgs(KEYSTONE_WSGI, [port]), {
    cwd: dir,
    env: { ...process.env, OS_KEYSTONE_CONFIG_FILES: conf },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
  return keystoneClient(url, dir, options, {
    serverLog: () => output,
    stop,
    async close() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

/** The token lives the shared Keystone issues, one port each; another life needs a Keystone of the file's own. */
export const SHARED_TOKEN_LIVES = [3600, 60, 45, 24] as const;

interface SharedState {
  /** Port per token life (seconds). */
  ports: Record<string, number>;
  pid: number;
  watchdog: number;
  dir: string;
}

/**
 * The run's one Keystone, at the port issuing tokens of `tokenExpirationSeconds` (one of
 * SHARED_TOKEN_LIVES, default 3600). Outside a run (no KEYSTONE_RUN_VAR), a Keystone of the file's own.
 */
export async function sharedKeystone(options: { tokenExpirationSeconds?: (typeof SHARED_TOKEN_LIVES)[number] } = {}): Promise<Keystone> {
  const run_ = runDir();
  if (!run_) return startKeystone(options);
  const missing = keystoneMissing();
  if (missing) throw new Error(missing);
  const life = options.tokenExpirationSeconds ?? 3600;
  const stateFile = join(run_, 'shared.json');
  await once(run_, 'shared', async () => {
    const dir = join(run_, 'shared');
    mkdirSync(dir);
    const lives = Object.fromEntries(await Promise.all(SHARED_TOKEN_LIVES.map(async (s) => [String(await freePort()), s] as const)));
    const ports = Object.keys(lives).map(Number);
    // The bootstrap's identity endpoint is the default life's port.
    const url = (port: number) => `http://127.0.0.1:${port}/v3`;
    await prepare(dir, url(ports[0]!));
    const conf = join(dir, 'keystone.conf');
    writeFileSync(conf, keystoneConf(dir, {}));
    // Its own process group, its output in a file: it outlives the test file that started it.
    const log = openSync(join(dir, 'uwsgi.log'), 'a');
    // Four processes: the files of a run ask it at once, and one process answered them in turn; on a
    // loaded machine each process is also a share of the CPU (at load 15-20 two left requests past 10 s).
    const child = spawn(UWSGI, uwsgiArgs(SHARED_WSGI, ports, 4), {
      cwd: dir,
      env: { ...process.env, OS_KEYSTONE_CONFIG_FILES: conf, KEYSTONE_TOKEN_LIVES: JSON.stringify(lives) },
      stdio: ['ignore', log, log],
      detached: true,
    });
    child.unref();
    // Should the run die without its teardown (test/keystone-run.ts), Keystone goes with it.
    const owner = readFileSync(join(run_, 'owner.pid'), 'utf8').trim();
    const watchdog = spawn('sh', ['-c', `while kill -0 ${owner} 2>/dev/null; do sleep 2; done; kill -TERM -${child.pid}`], {
      detached: true,
      stdio: 'ignore',
    });
    watchdog.unref();
    const state: SharedState = {
      ports: Object.fromEntries(Object.entries(lives).map(([p, s]) => [String(s), Number(p)])),
      pid: child.pid!,
      watchdog: watchdog.pid!,
      dir,
    };
    writeFileSync(stateFile, JSON.stringify(state));
    const serverLog = () => readFileSync(join(dir, 'uwsgi.log'), 'utf8').slice(-20_000);
    for (const port of ports) await waitForKeystone(url(port), child, serverLog);
  });
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as SharedState;
  const port = state.ports[String(life)];
  if (port === undefined) throw new Error(`the shared Keystone issues tokens of ${SHARED_TOKEN_LIVES.join(', ')} s, not ${life} s`);
  return keystoneClient(`http://127.0.0.1:${port}/v3`, state.dir, options, {
    serverLog: () => readFileSync(join(state.dir, 'uwsgi.log'), 'utf8').slice(-20_000),
    stop: () =>
      Promise.reject(
        new Error('the shared Keystone serves other test files: cut a pausable link in front of it (test/helpers/pausable-link.ts)'),
      ),
    close: async () => {},
  });
}

/** Stops the run's shared Keystone, if a file started it (test/keystone-run.ts, at the run's end). */
export async function stopSharedKeystone(run_: string): Promise<void> {
  const stateFile = join(run_, 'shared.json');
  if (!existsSync(stateFile)) return;
  const { pid, watchdog } = JSON.parse(readFileSync(stateFile, 'utf8')) as SharedState;
  const alive = (p: number) => {
    try {
      process.kill(p, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const p of [watchdog, pid]) if (alive(p)) process.kill(-p, 'SIGTERM');
  await waitUntil('the shared Keystone to stop', () => !alive(pid), 10_000, 50).catch(() => {
    if (alive(pid)) process.kill(-pid, 'SIGKILL');
  });
}

/** The admin's and any user's ways into the Keystone at `url`, with `own` (log, stop, close) of whoever runs it. */
function keystoneClient(url: string, dir: string, options: KeystoneOptions, own: Pick<Keystone, 'serverLog' | 'stop' | 'close'>): Keystone {
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
  /** The first thing `find` answers, else what `make` makes; made meanwhile by another file (409), found again. */
  const findOrMake = async (find: () => Promise<string | undefined>, make: () => Promise<Response>, pick: (body: unknown) => string) => {
    const found = await find();
    if (found) return found;
    const res = await make();
    if (res.status === 409) {
      await res.body?.cancel();
      const again = await find();
      if (again) return again;
    }
    if (res.status >= 300) throw new Error(`Keystone: ${res.status} ${await res.text()}`);
    return pick(await res.json());
  };
  const projectUser = async ({ username, password, project }: KeystoneUser, roles: string[]) => {
    const projectId = await findOrMake(
      async () =>
        (await json<{ projects: { id: string }[] }>('GET', `/projects?name=${encodeURIComponent(project)}&domain_id=default`)).projects[0]
          ?.id,
      () => api('POST', '/projects', { project: { name: project, domain_id: 'default' } }),
      (body) => (body as { project: { id: string } }).project.id,
    );
    // On the shared Keystone another file may have made the same user (the same name, the same password).
    const userId = await findOrMake(
      async () =>
        (await json<{ users: { id: string }[] }>('GET', `/users?name=${encodeURIComponent(username)}&domain_id=default`)).users[0]?.id,
      () => api('POST', '/users', { user: { name: username, domain_id: 'default', password } }),
      (body) => (body as { user: { id: string } }).user.id,
    );
    for (const role of roles) {
      const roleId = await findOrMake(
        async () => (await json<{ roles: { id: string }[] }>('GET', `/roles?name=${encodeURIComponent(role)}`)).roles[0]?.id,
        () => api('POST', '/roles', { role: { name: role } }),
        (body) => (body as { role: { id: string } }).role.id,
      );
      await json('PUT', `/projects/${projectId}/users/${userId}/roles/${roleId}`);
    }
    return { projectId, userId };
  };
  return { url, dir, token, adminToken, api, json, projectUser, ...own };
}
