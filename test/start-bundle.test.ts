// `npm start` runs a bundle of the current sources (scripts/start.mjs), built by `npm ci`'s
// `prepare` script: a start on an up-to-date bundle serves at once without building, saying
// nothing of a build; a start after a source changed says it rebuilds, rebuilds and serves; a
// production install without esbuild prepares nothing and says why. Each start's cache lives
// in its own folder under node_modules/.cache (where the bundle finds libSQL's binding).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from './helpers/wait.js';

const ROOT = join(import.meta.dirname, '..');
const START = join(ROOT, 'scripts', 'start.mjs');

/** scripts/start.mjs's hash of a bundle's inputs (with package-lock.json and scripts/build.ts). */
function launcherHash(inputs: string[]): string {
  const hash = createHash('sha256');
  for (const path of [...inputs, 'package-lock.json', 'scripts/build.ts']) {
    const content = readFileSync(join(ROOT, path));
    hash.update(`${path}\0${content.length}\0`);
    hash.update(content);
  }
  return hash.digest('hex');
}

/** `node scripts/start.mjs` on a new database; resolves with what it said once `GET /` answered, and stops it. */
async function startAndAsk(cache: string): Promise<{ log: string; version: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'start-bundle-'));
  const child = spawn(process.execPath, [START], {
    cwd: ROOT,
    env: {
      ...process.env,
      PLACEMENT_START_CACHE: cache,
      HOST: '127.0.0.1',
      PORT: '0',
      PLACEMENT_DB_URL: `file:${join(dir, 'placement.db')}`,
      PLACEMENT_WORKERS: '1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  try {
    let url = '';
    await waitUntil(
      `the server to listen (its log: ${log.slice(-2000)})`,
      () => {
        if (child.exitCode !== null) throw new Error(`start.mjs exited ${child.exitCode}:\n${log}`);
        url = /"url":"(http:\/\/[^"]+)"/.exec(log)?.[1] ?? '';
        return url !== '';
      },
      120_000,
      50,
    );
    const root = (await (await fetch(`${url}/`)).json()) as { versions: { max_version: string }[] };
    return { log, version: root.versions[0]!.max_version };
  } finally {
    const gone = new Promise((resolve) => child.once('exit', resolve));
    if (child.exitCode === null) child.kill('SIGTERM');
    await gone;
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('npm start from a bundle of the current sources', () => {
  let cache: string;
  let scratch: string;
  beforeAll(() => {
    mkdirSync(join(ROOT, 'node_modules', '.cache'), { recursive: true });
    cache = mkdtempSync(join(ROOT, 'node_modules', '.cache', 'placement-edge-test-'));
    mkdirSync(join(ROOT, '.scratch'), { recursive: true });
    scratch = mkdtempSync(join(ROOT, '.scratch', 'start-bundle-'));
  });
  afterAll(() => {
    rmSync(cache, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
  });

  it('package.json: npm start runs the launcher, and npm ci prepares its bundle', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toMatch(/node .*scripts\/start\.mjs$/);
    expect(pkg.scripts.prepare).toBe('node scripts/start.mjs --prepare');
  });

  it('prepare bundles the server, saying so; a second prepare finds it up to date and says nothing', () => {
    const first = spawnSync(process.execPath, [START, '--prepare'], { cwd: ROOT, env: { ...process.env, PLACEMENT_START_CACHE: cache } });
    expect(first.status, first.stderr.toString()).toBe(0);
    expect(first.stderr.toString()).toMatch(/bundling the server from the sources for the first start/);
    const manifest = JSON.parse(readFileSync(join(cache, 'manifest.json'), 'utf8')) as { inputs: string[] };
    expect(manifest.inputs).toEqual(expect.arrayContaining(['src/entry/node.ts', 'src/app.ts']));
    const again = spawnSync(process.execPath, [START, '--prepare'], { cwd: ROOT, env: { ...process.env, PLACEMENT_START_CACHE: cache } });
    expect(again.status).toBe(0);
    expect(again.stderr.toString()).toBe('');
  }, 120_000);

  it('a start on the prepared bundle serves without building', async () => {
    const { log, version } = await startAndAsk(cache);
    expect(version).toBe('1.39');
    expect(log).not.toMatch(/bundling/);
    expect(log).toMatch(/"msg":"placement-edge starting"/);
  }, 120_000);

  it('a start after one of its sources changed says so, bundles again and serves', async () => {
    // One more input, a file of our own, stamped into the manifest by the launcher's rule (the
    // start before the change finds it up to date, so the rule here is the launcher's), then changed.
    const input = join(scratch, 'input.ts');
    writeFileSync(input, 'export {};\n');
    const manifestFile = join(cache, 'manifest.json');
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as { inputs: string[]; hash: string };
    const inputs = [...manifest.inputs, relative(ROOT, input)];
    writeFileSync(manifestFile, JSON.stringify({ inputs, hash: launcherHash(inputs) }));
    expect((await startAndAsk(cache)).log).not.toMatch(/bundling/);
    writeFileSync(input, 'export const changed = 1;\n');
    const stale = await startAndAsk(cache);
    expect(stale.log).toMatch(/the sources changed since the last start: bundling the server again/);
    expect(stale.version).toBe('1.39');
    const fresh = await startAndAsk(cache);
    expect(fresh.log).not.toMatch(/bundling/);
  }, 300_000);

  it('a bundle that cannot be written: says so and serves from the sources through tsx', async () => {
    const blocker = join(scratch, 'a-file');
    writeFileSync(blocker, '');
    const { log, version } = await startAndAsk(join(blocker, 'cache'));
    expect(log).toMatch(/bundling failed: /);
    expect(log).toMatch(/starting the server from the sources through tsx instead/);
    expect(version).toBe('1.39');
  }, 180_000);

  it('a production install without esbuild: prepare builds nothing, says why, and succeeds', () => {
    const empty = mkdtempSync(join(ROOT, 'node_modules', '.cache', 'placement-edge-test-'));
    try {
      // Hide esbuild from the launcher: run a copy of it in a checkout-like folder whose node_modules has none.
      const root = mkdtempSync(join(tmpdir(), 'start-prod-'));
      mkdirSync(join(root, 'scripts'));
      mkdirSync(join(root, 'node_modules'));
      writeFileSync(join(root, 'scripts', 'start.mjs'), readFileSync(START));
      const result = spawnSync(process.execPath, [join(root, 'scripts', 'start.mjs'), '--prepare'], {
        env: { ...process.env, PLACEMENT_START_CACHE: empty },
      });
      rmSync(root, { recursive: true, force: true });
      expect(result.status).toBe(0);
      expect(result.stderr.toString()).toMatch(/not building the server for npm start: esbuild is not installed/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
