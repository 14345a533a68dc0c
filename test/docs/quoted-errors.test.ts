// The errors the docs quote are the ones the service prints. Each quote is a
// fenced block after `<!-- error-test: NAME -->` (README.md, docs/*.md); this
// test makes the real error for each NAME (a real `node src/entry/node.ts`
// start, or a real request) and compares it with the quote, word for word.
// docs/keystone.md once quoted a refusal the service had stopped printing.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { KeystoneTokenValidator } from '../../src/http/keystone/validator.js';
import { FakeKeystone } from '../helpers/fake-keystone.js';
import { passwordCredentials, SERVICE_USER } from '../helpers/keystone-credentials.js';
import { freePort } from '../helpers/sqld.js';
import { makeTestApp } from '../helpers/test-app.js';

const ROOT = join(import.meta.dirname, '..', '..');
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href;
const ENTRY = join(ROOT, 'src', 'entry', 'node.ts');
const dir = mkdtempSync(join(tmpdir(), 'quoted-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Quote {
  file: string;
  name: string;
  text: string;
}

/** Every `<!-- error-test: NAME -->` marker and the fenced block after it. */
function quotes(): Quote[] {
  const files = [
    'README.md',
    ...readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const found: Quote[] = [];
  for (const file of files) {
    const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
    lines.forEach((line, i) => {
      const marker = /^\s*<!--\s*error-test:\s*([a-z0-9-]+)\s*-->\s*$/.exec(line);
      if (!marker) return;
      const open = lines.findIndex((l, j) => j > i && /^\s*```/.test(l));
      const close = lines.findIndex((l, j) => j > open && /^\s*```\s*$/.test(l));
      if (open < 0 || close < 0) throw new Error(`${file}:${i + 1}: no fenced block after the marker`);
      found.push({
        file,
        name: marker[1]!,
        text: lines
          .slice(open + 1, close)
          .map((l) => l.trim())
          .join('\n'),
      });
    });
  }
  return found;
}

/** The one line a refused start prints (stderr, without the JSON log lines). */
function refusal(env: Record<string, string>): Promise<string> {
  const cwd = mkdtempSync(join(dir, 'cwd-'));
  const base = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: '0', PLACEMENT_WORKERS: '1' };
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', TSX_LOADER, ENTRY], { cwd, env: { ...base, ...env }, timeout: 110_000 }, (_err, _out, stderr) =>
      resolve(
        stderr
          .split('\n')
          .filter((l) => l.trim() !== '' && !l.startsWith('{'))
          .join('\n'),
      ),
    );
  });
}

/** How each quoted error is made for real. */
const REAL: Record<string, () => Promise<string>> = {
  'token-without-tokens': () => refusal({ PLACEMENT_AUTH_STRATEGY: 'token' }),
  'keystone-credentials-missing': () =>
    refusal({ PLACEMENT_AUTH_STRATEGY: 'keystone', PLACEMENT_KEYSTONE_AUTH_URL: 'http://controller:5000/v3' }),
  'db-scheme': () => refusal({ PLACEMENT_DB_URL: 'postgres://placement:PLACEMENT_DBPASS@controller/placement' }),
  'db-missing-directory': async () => {
    expect(existsSync('/var/lib/placement-edeg')).toBe(false);
    return refusal({ PLACEMENT_DB_URL: 'file:/var/lib/placement-edeg/placement.db' });
  },
  // The docs name sqld's usual port; nothing may listen on the one used here.
  'db-server-not-answering': async () => {
    const port = await freePort();
    return (await refusal({ PLACEMENT_DB_URL: `http://127.0.0.1:${port}` })).split(String(port)).join('8080');
  },
  // /readyz's reason (the same code in both runtimes), from a Keystone that refuses the password.
  'keystone-sign-in-refused': async () => {
    const authUrl = 'http://controller:5000/v3';
    const validator = new KeystoneTokenValidator(
      {
        authUrl,
        credentials: passwordCredentials(SERVICE_USER, 'not-the-password'),
        cacheSeconds: 300,
        cacheSize: 10,
        timeoutMs: 1000,
        wwwAuthenticateUri: authUrl,
      },
      new FakeKeystone().fetch,
    );
    const readiness = await validator.readiness();
    return readiness.ready ? 'ready' : readiness.reason;
  },
  'keystone-unavailable-detail': async () => {
    const port = await freePort();
    const t = await makeTestApp({
      PLACEMENT_AUTH_STRATEGY: 'keystone',
      PLACEMENT_KEYSTONE_AUTH_URL: `http://127.0.0.1:${port}/v3`,
      PLACEMENT_KEYSTONE_USERNAME: 'placement',
      PLACEMENT_KEYSTONE_PASSWORD: 'placement-pw',
      PLACEMENT_KEYSTONE_PROJECT_NAME: 'service',
    });
    try {
      const res = await t.call('GET', '/resource_providers', { headers: { 'x-auth-token': 'a-user-token' } });
      expect(res.status).toBe(503);
      // webob's detail: its status text, a blank line, then the service's own sentence (the one quoted).
      const detail = ((await res.json()) as { errors: { detail: string }[] }).errors[0]!.detail;
      return detail
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
        .at(-1)!;
    } finally {
      t.close();
    }
  },
};

describe('errors quoted in the docs', () => {
  const all = quotes();

  it('every quote names an error this test makes, and every error made is quoted', () => {
    expect(all.map((q) => q.name).filter((name) => !(name in REAL))).toEqual([]);
    expect(Object.keys(REAL).filter((name) => !all.some((q) => q.name === name))).toEqual([]);
  });

  it.concurrent.each(all.map((q) => [`${q.file}: ${q.name}`, q] as const))(
    '%s is the real one',
    async (_title, quote) => {
      expect(await REAL[quote.name]!()).toBe(quote.text);
    },
    120_000,
  );
});
