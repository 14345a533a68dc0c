// PLACEMENT_DB_URL as a new user gets it wrong: each refusal is one line that
// names the setting, the cause (with the URL, its password hidden) and a fix
// that fits that cause, not advice about a writable file for a server that
// does not answer. A file: URL set explicitly whose directory does not exist
// is refused (a typo would otherwise serve a new, empty cloud); the default
// ./data/placement.db is still created. Real `node src/entry/node.ts` processes.
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/sqld.js';

const ROOT = join(import.meta.dirname, '..', '..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href;
const ENTRY = join(ROOT, 'src', 'entry', 'node.ts');
const dir = mkdtempSync(join(tmpdir(), 'placement-db-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = () => ({
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? '',
  HOST: '127.0.0.1',
  PORT: '0',
  PLACEMENT_WORKERS: '1',
  PLACEMENT_WARM_UP_MS: '0',
});

function start(env: Record<string, string>): Promise<{ code: number | null; line: string; stderr: string; cwd: string }> {
  const cwd = mkdtempSync(join(dir, 'cwd-'));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, ENTRY],
      { cwd, env: { ...base(), ...env }, timeout: 110_000 },
      (err, _out, stderr) => {
        const lines = stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, line: lines.join('\n'), stderr, cwd });
      },
    );
  });
}

const STARTS = { timeout: 120_000 };

describe.concurrent('PLACEMENT_DB_URL refusals name the cause and the fix that fits', STARTS, () => {
  it('a scheme the service does not speak: the schemes it does, and the password never echoed', async () => {
    const out = await start({ PLACEMENT_DB_URL: 'postgres://placement:s3cret@db.example/placement' });
    expect(out.code).toBe(78);
    expect(out.line).toMatch(/^placement-edge: cannot start: PLACEMENT_DB_URL: the scheme postgres: is not one placement-edge speaks/);
    expect(out.line).toContain('file:, libsql:, http:, https:, ws:, wss:');
    expect(out.line).toMatch(/Fix: set PLACEMENT_DB_URL to file:.+placement-admin import/);
    expect(out.stderr).not.toContain('s3cret');
    expect(out.line).not.toMatch(/writable|volume/);
  });

  it('a libSQL server that does not answer: says so with the URL, and how to fix it', async () => {
    const port = await freePort();
    const out = await start({ PLACEMENT_DB_URL: `http://127.0.0.1:${port}` });
    expect(out.code).toBe(1);
    expect(out.line).toContain(`PLACEMENT_DB_URL: no libSQL server answers at http://127.0.0.1:${port} (ECONNREFUSED`);
    expect(out.line).toMatch(/Fix: start the libSQL server .+ or correct the host and port in PLACEMENT_DB_URL/);
    expect(out.line).not.toMatch(/writable|volume/);
  });

  it('http://127.0.0.1:1: a port fetch refuses, said so', async () => {
    const out = await start({ PLACEMENT_DB_URL: 'http://127.0.0.1:1' });
    expect(out.code).toBe(1);
    expect(out.line).toContain('no libSQL server answers at http://127.0.0.1:1 (bad port)');
    expect(out.line).toMatch(/Fix: use another port/);
  });

  it('an explicit file: URL whose directory does not exist is refused, naming it, and nothing is created', async () => {
    const missing = join(dir, 'no-such-dir', 'nested');
    const out = await start({ PLACEMENT_DB_URL: `file:${join(missing, 'p.db')}` });
    expect(out.code).toBe(78);
    expect(out.line).toContain(`PLACEMENT_DB_URL: the directory ${missing} of the database file does not exist`);
    expect(out.line).toContain(`Fix: create it (mkdir -p ${missing}`);
    expect(existsSync(join(dir, 'no-such-dir'))).toBe(false);
  });
});

it('npm run sync (docs/worker.md applies the migrations with it) says the same in one line', STARTS, async () => {
  const port = await freePort();
  const out = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', TSX_LOADER, join(ROOT, 'src', 'entry', 'cli.ts'), 'sync'],
      { cwd: dir, env: { ...base(), PLACEMENT_DB_URL: `https://127.0.0.1:${port}` }, timeout: 110_000 },
      (err, _out, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
    );
  });
  expect(out.code).toBe(1);
  expect(out.stderr.trim()).toMatch(
    new RegExp(
      `^placement-edge sync: PLACEMENT_DB_URL: no libSQL server answers at https://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED.*\\. Fix: start the libSQL server`,
    ),
  );
});

it('the default database, ./data/placement.db, is still created for a new user', STARTS, async () => {
  const cwd = mkdtempSync(join(dir, 'new-user-'));
  const child = spawn(process.execPath, ['--import', TSX_LOADER, ENTRY], { cwd, env: base(), stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    for (let i = 0; i < 1000 && !log.includes('"msg":"placement-edge listening"') && child.exitCode === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(log).toContain('"msg":"placement-edge listening"');
    expect(existsSync(join(cwd, 'data', 'placement.db'))).toBe(true);
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
});
