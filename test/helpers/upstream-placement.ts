// The real OpenStack Placement 8.0.0 (Debian's placement-api package) under
// uwsgi on its own sqlite file, noauth2, on a free loopback port: the source
// the import tests and bench/import.ts read from. `UPSTREAM_PLACEMENT_MISSING`
// says why it cannot run here (the package to install), for describeWithPart.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './sqld.js';

const WSGI_SCRIPT = '/usr/bin/placement-api';
const PLACEMENT_MANAGE = '/usr/bin/placement-manage';
const UWSGI = '/usr/bin/uwsgi';
const UWSGI_PYTHON3 = '/usr/lib/uwsgi/plugins/python3_plugin.so';

function missing(): string | undefined {
  if (!existsSync(WSGI_SCRIPT) || !existsSync(PLACEMENT_MANAGE))
    return 'Debian package placement-api (OpenStack Placement 8.0.0) is not installed';
  if (!existsSync(UWSGI)) return 'Debian package uwsgi is not installed';
  if (!existsSync(UWSGI_PYTHON3)) return 'Debian package uwsgi-plugin-python3 is not installed';
  return undefined;
}

/** Why the real Placement cannot be started here, or undefined when it can. */
export const UPSTREAM_PLACEMENT_MISSING = missing();

export interface UpstreamPlacement {
  url: string;
  dir: string;
  /** Its sqlite database (upstream's own schema). */
  dbFile: string;
  /** Stops uwsgi (the API becomes unreachable); the files stay until remove(). */
  stop(): Promise<void>;
  remove(): void;
}

export interface UpstreamOptions {
  /** uwsgi worker processes (1: sqlite writes never wait on each other's locks). */
  processes?: number;
  threads?: number;
  /** Called after `db sync`, before the API starts: a loader may fill dbFile directly. */
  beforeStart?: (dbFile: string) => Promise<void>;
}

export async function startUpstreamPlacement(options: UpstreamOptions = {}): Promise<UpstreamPlacement> {
  const why = UPSTREAM_PLACEMENT_MISSING;
  if (why) throw new Error(why);
  const dir = mkdtempSync(join(tmpdir(), 'upstream-placement-'));
  const dbFile = join(dir, 'placement.db');
  writeFileSync(
    join(dir, 'placement.conf'),
    ['[DEFAULT]', 'debug = false', '[api]', 'auth_strategy = noauth2', '[placement_database]', `connection = sqlite:///${dbFile}`, ''].join(
      '\n',
    ),
  );
  await promisify(execFile)(PLACEMENT_MANAGE, ['--config-file', join(dir, 'placement.conf'), 'db', 'sync'], {
    env: { ...process.env, OS_PLACEMENT_CONFIG_DIR: dir },
    timeout: 120_000,
  });
  await options.beforeStart?.(dbFile);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = '';
  const child: ChildProcess = spawn(
    UWSGI,
    [
      '--plugin',
      'python3',
      '--http-socket',
      `127.0.0.1:${port}`,
      // As Debian's placement-api-uwsgi.ini: uwsgi's http-socket does not keep connections alive, so say so.
      '--add-header',
      'Connection: close',
      '--wsgi-file',
      WSGI_SCRIPT,
      '--master',
      '--processes',
      String(options.processes ?? 1),
      '--threads',
      String(options.threads ?? 4),
      '--die-on-term',
      '--buffer-size',
      '65535',
    ],
    { cwd: dir, env: { ...process.env, OS_PLACEMENT_CONFIG_DIR: dir }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    log = (log + chunk).slice(-4000);
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
    });
  const remove = () => rmSync(dir, { recursive: true, force: true });
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(`${url}/`)).ok) return { url, dir, dbFile, stop, remove };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  await stop();
  remove();
  throw new Error(`OpenStack Placement did not come up at ${url}:\n${log}`);
}

/** One admin request to a Placement (upstream or ours) at `version`; throws on an unexpected status. */
export async function placementCall(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  { version = '1.39', expect = [200, 201, 204] }: { version?: string; expect?: number[] } = {},
): Promise<unknown> {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      'x-auth-token': 'admin',
      accept: 'application/json',
      'openstack-api-version': `placement ${version}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!expect.includes(res.status)) throw new Error(`${method} ${path}: HTTP ${res.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}
