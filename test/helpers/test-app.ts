// A fresh app on a temp-file database for each test file (never :memory:, see
// README). `call()` wraps app.request with placement's usual headers.
import { constants, copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@libsql/client';
import { createApp } from '../../src/app.js';
import { loadConfig, type AppConfig } from '../../src/config.js';
import { EPOCH, HOLD_EPOCH } from '../../src/db/columns.js';
import type { Deps, Logger } from '../../src/deps.js';
import { buildNodeDeps, openStore } from '../../src/entry/node-service.js';

export interface TestApp {
  app: ReturnType<typeof createApp>;
  deps: Deps;
  dbUrl: string;
  dir: string;
  /** JSON request as admin at `version` (default latest). */
  call(method: string, path: string, opts?: { body?: unknown; version?: string; headers?: Record<string, string> }): Promise<Response>;
  close(): void;
}

const silent = process.env.TEST_LOG ? console : { debug() {}, info() {}, warn() {}, error() {} };

const TEMPLATE = Symbol.for('placement-edge.test-app.prepared-database');
type WithTemplate = typeof globalThis & { [TEMPLATE]?: Promise<string> };

/**
 * A database file prepared once per test process (migrations applied, standard names synced),
 * which each new app's database starts as a copy of: preparing is most of a new app's cost,
 * and the suite makes thousands. A copy is what the service finds at a start after its first
 * (prepare-database.ts: already prepared), so every app still opens through buildNodeDeps.
 */
function preparedDatabase(): Promise<string> {
  const holder = globalThis as WithTemplate;
  holder[TEMPLATE] ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'placement-template-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'placement.db');
    const store = await openStore(loadConfig({ PLACEMENT_DB_URL: `file:${path}` }), {}, silent);
    // Everything in the main file: a copy of it alone is the whole database.
    await store.client.execute('PRAGMA wal_checkpoint(TRUNCATE)');
    store.close();
    if (existsSync(`${path}-wal`) && statSync(`${path}-wal`).size > 0) throw new Error(`${path}-wal kept pages after the checkpoint`);
    return path;
  })();
  return holder[TEMPLATE];
}

/**
 * A copy is another database: it gets identities of its own, as a restore does (admin/backup.ts).
 * Caches shared by every app of a process (the holds read hook) key what they keep by them, so two
 * copies that went through the same writes would otherwise read each other's state.
 */
async function newIdentities(url: string): Promise<void> {
  const client = createClient({ url });
  try {
    // A test's file: nothing to make durable, so no sync to wait for.
    await client.executeMultiple(`PRAGMA synchronous = OFF;
      UPDATE placement_epoch SET ${EPOCH.token} = lower(hex(randomblob(8)));
      UPDATE ext_holds_epoch SET ${HOLD_EPOCH.database} = lower(hex(randomblob(8)));`);
  } finally {
    client.close();
  }
}

/** `env` may name another database (PLACEMENT_DB_URL); `log` receives the app's log lines. */
export async function makeTestApp(env: Record<string, string> = {}, log: Logger = silent): Promise<TestApp> {
  const dir = mkdtempSync(join(tmpdir(), 'placement-test-'));
  if (env.PLACEMENT_DB_URL === undefined) {
    copyFileSync(await preparedDatabase(), join(dir, 'placement.db'), constants.COPYFILE_FICLONE);
    await newIdentities(`file:${join(dir, 'placement.db')}`);
  }
  const config: AppConfig = loadConfig({
    PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`,
    PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
    ...env,
  });
  const deps = await buildNodeDeps(config, log);
  return testAppOf(deps, config.PLACEMENT_DB_URL, dir, () => rmSync(dir, { recursive: true, force: true }));
}

/**
 * A second app on `first`'s database file, as another process would open it: what either writes,
 * the other's caches learn only through the database. On `clock` (ms) when given; close() closes
 * its store only (`first` owns the file).
 */
export async function sameDatabaseApp(first: TestApp, clock?: () => number, log: Logger = silent): Promise<TestApp> {
  const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: first.dbUrl, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), log);
  if (clock) deps.clock = () => new Date(clock());
  return testAppOf(deps, first.dbUrl, first.dir, () => {});
}

function testAppOf(deps: Deps, dbUrl: string, dir: string, removeFiles: () => void): TestApp {
  const app = createApp(deps);
  return {
    app,
    deps,
    dbUrl,
    dir,
    call(method, path, opts = {}) {
      const headers: Record<string, string> = {
        'x-auth-token': 'admin',
        accept: 'application/json',
        'openstack-api-version': `placement ${opts.version ?? 'latest'}`,
        ...opts.headers,
      };
      let body: string | undefined;
      if (opts.body !== undefined) {
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      return Promise.resolve(app.request(path, { method, headers, body }));
    },
    close() {
      deps.store.close();
      removeFiles();
    },
  };
}

/** The one error object of a placement error envelope. */
export interface PlacementError {
  status: number;
  title?: string;
  detail: string;
  code?: string;
}

export async function errorOf(res: Response): Promise<PlacementError> {
  return ((await res.json()) as { errors: PlacementError[] }).errors[0]!;
}
