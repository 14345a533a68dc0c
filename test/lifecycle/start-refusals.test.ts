// A start that cannot work stops with ONE line on stderr naming the setting
// and the fix, and a non-zero exit code; --help and --version answer without
// starting a server or creating ./data. Real `node src/entry/node.ts`
// processes (through tsx, as `npm start`), in temporary directories.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TREE_CACHE_DEFAULTS } from '../../src/config.js';
import { startServer } from '../helpers/node-server.js';

const ROOT = join(import.meta.dirname, '..', '..');
// tsx's loader in this process (as `npm start` does), not its CLI's extra child process.
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href;
const ENTRY = join(ROOT, 'src', 'entry', 'node.ts');

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'placement-start-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the server entry with `env` (over a clean base) and `args`, in a fresh working directory. */
function start(env: Record<string, string>, args: string[] = []): Promise<Outcome & { cwd: string }> {
  const cwd = mkdtempSync(join(dir, 'cwd-'));
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: '0' };
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, ENTRY, ...args],
      { cwd, env: { ...base, ...env }, timeout: 110_000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr, cwd });
      },
    );
  });
}

const lines = (text: string) => text.split('\n').filter((l) => l.trim() !== '');

/**
 * Exactly one line, naming `setting` and a fix, and no stack trace. The JSON
 * start line with the configuration (docs/monitoring.md) may come before it
 * when the refusal comes from the machine (port, path) rather than a setting.
 */
function expectOneLine(outcome: Outcome, setting: string): string {
  const [line, ...more] = lines(outcome.stderr).filter((l) => !/"msg":"placement-edge (starting|configuration)"/.test(l));
  expect(more, outcome.stderr).toEqual([]);
  expect(line).toMatch(new RegExp(`^placement-edge: cannot start: ${setting}: .+ Fix: .+`));
  expect(outcome.stderr).not.toMatch(/\n\s+at |SyntaxError|ZodError/);
  return line!;
}

// Several processes starting at once, each compiling the server: seconds alone, far longer
// when the suite's other files compute beside them. The timeout only catches a hang.
const STARTS = { timeout: 120_000 };

// Each case is its own process in its own directory: they run side by side (the starts are
// mostly Node and tsx loading, one core each).
describe.concurrent('settings that cannot work', STARTS, () => {
  it('token mode without tokens', async () => {
    const out = await start({ PLACEMENT_DB_URL: `file:${join(dir, 'a.db')}`, PLACEMENT_AUTH_STRATEGY: 'token' });
    expect(out.code).toBe(78);
    expect(expectOneLine(out, 'PLACEMENT_AUTH_TOKENS')).toContain('no token is configured');
    expect(existsSync(join(dir, 'a.db'))).toBe(false);
  });

  it('token mode with an empty table', async () => {
    const out = await start({ PLACEMENT_AUTH_STRATEGY: 'token', PLACEMENT_AUTH_TOKENS: '{}' });
    expect(out.code).toBe(78);
    expect(expectOneLine(out, 'PLACEMENT_AUTH_TOKENS')).toContain('table is empty');
  });

  it('malformed PLACEMENT_AUTH_TOKENS: bad JSON, a wrong shape; the token itself is never printed', async () => {
    const json = await start({ PLACEMENT_AUTH_STRATEGY: 'token', PLACEMENT_AUTH_TOKENS: '{"hunter2-secret": [' });
    expect(json.code).toBe(78);
    expect(expectOneLine(json, 'PLACEMENT_AUTH_TOKENS')).toContain('not valid JSON');
    const shape = await start({
      PLACEMENT_AUTH_STRATEGY: 'token',
      PLACEMENT_AUTH_TOKENS: '{"ok":{"roles":["admin"]},"hunter2-secret":{"roles":"admin"}}',
    });
    expect(shape.code).toBe(78);
    expect(expectOneLine(shape, 'PLACEMENT_AUTH_TOKENS')).toContain('token #2 field roles');
    expect(json.stderr + shape.stderr).not.toContain('hunter2');
  });

  it('keystone without its credentials names each one missing', async () => {
    const out = await start({ PLACEMENT_AUTH_STRATEGY: 'keystone', PLACEMENT_KEYSTONE_AUTH_URL: 'http://127.0.0.1:5000/v3' });
    expect(out.code).toBe(78);
    const line = expectOneLine(out, 'PLACEMENT_KEYSTONE_USERNAME');
    for (const key of ['PLACEMENT_KEYSTONE_USERNAME', 'PLACEMENT_KEYSTONE_PASSWORD', 'PLACEMENT_KEYSTONE_PROJECT_NAME'])
      expect(line).toContain(key);
    expect(line).not.toContain('PLACEMENT_KEYSTONE_AUTH_URL,');
  });

  it('a value of the wrong type, with the default as the fix', async () => {
    const out = await start({ PORT: 'eighty' });
    expect(out.code).toBe(78);
    expect(expectOneLine(out, 'PORT')).toContain('unset it for the default (8778)');
  });

  it("a wrong tree cache limit names a Node process's own default as the fix, not a Worker's", async () => {
    const out = await start({ PLACEMENT_CANDIDATE_TREE_CACHE: 'lots' });
    expect(out.code).toBe(78);
    expect(expectOneLine(out, 'PLACEMENT_CANDIDATE_TREE_CACHE')).toContain(`unset it for the default (${TREE_CACHE_DEFAULTS.node})`);
  });

  it('an unreadable policy file', async () => {
    const out = await start({ PLACEMENT_POLICY_FILE: join(dir, 'absent.json') });
    expect(out.code).toBe(1);
    expect(expectOneLine(out, 'PLACEMENT_POLICY_FILE')).toContain('ENOENT');
  });
});

describe.concurrent('a machine the start cannot use', STARTS, () => {
  let holder: Server;
  let port: number;
  beforeAll(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    port = (holder.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

  it.each(['1', '2'])('a port in use (PLACEMENT_WORKERS=%s)', async (workers) => {
    const out = await start({
      PORT: String(port),
      PLACEMENT_WORKERS: workers,
      PLACEMENT_DB_URL: `file:${join(dir, `port-${workers}.db`)}`,
    });
    expect(out.code).toBe(1);
    expect(expectOneLine(out, 'PORT')).toContain(`127.0.0.1:${port} is already in use`);
  });

  it('a database path under a file', async () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'x');
    const out = await start({ PLACEMENT_DB_URL: `file:${join(file, 'placement.db')}` });
    expect(out.code).toBe(1);
    expect(expectOneLine(out, 'PLACEMENT_DB_URL')).toContain('is not a directory');
  });

  it('a database path the kernel refuses (/proc)', async () => {
    const out = await start({ PLACEMENT_DB_URL: 'file:/proc/placement-edge-test.db', PLACEMENT_WORKERS: '1' });
    expect(out.code).toBe(1);
    expect(expectOneLine(out, 'PLACEMENT_DB_URL')).toContain('cannot open the database');
  });
});

describe.concurrent('--help and --version', STARTS, () => {
  it('--help lists the settings and starts nothing: no ./data, no listening line', async () => {
    const out = await start({}, ['--help']);
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^placement-edge \d+\.\d+\.\d+/);
    for (const key of [
      'PLACEMENT_DB_URL=file:./data/placement.db',
      'PLACEMENT_AUTH_TOKENS',
      'PLACEMENT_SHUTDOWN_GRACE_MS=10000',
      // A Node process's own default (a Worker isolate keeps fewer trees).
      `PLACEMENT_CANDIDATE_TREE_CACHE=${TREE_CACHE_DEFAULTS.node}`,
    ]) {
      expect(out.stdout).toContain(key);
    }
    expect(out.stderr).toBe('');
    expect(existsSync(join(out.cwd, 'data'))).toBe(false);
  });

  it('--version prints the package version', async () => {
    const out = await start({}, ['--version']);
    const { version } = JSON.parse((await import('node:fs')).readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(out).toMatchObject({ code: 0, stdout: `placement-edge ${version}\n` });
  });

  it('an unknown argument is a usage error, and starts nothing', async () => {
    const out = await start({}, ['--port=9']);
    expect(out.code).toBe(2);
    expect(lines(out.stderr)).toHaveLength(1);
    expect(existsSync(join(out.cwd, 'data'))).toBe(false);
  });
});

it('a working configuration still starts (token mode with a token)', STARTS, async () => {
  const server = await startServer(`file:${join(dir, 'ok.db')}`, {
    PLACEMENT_AUTH_STRATEGY: 'token',
    PLACEMENT_AUTH_TOKENS: JSON.stringify({ t: { roles: ['admin'] } }),
  });
  try {
    expect((await fetch(`${server.url}/`, { headers: { 'x-auth-token': 't' } })).status).toBe(200);
    // Its configuration line: the tree cache at a Node process's default, the setting left unset.
    expect(server.startLog).toContain(`"PLACEMENT_CANDIDATE_TREE_CACHE":${TREE_CACHE_DEFAULTS.node}`);
  } finally {
    await server.stop();
  }
});
