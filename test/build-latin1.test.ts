// The server bundle (scripts/build.ts, what `npm start` and dist/ run) holds
// no character above Latin-1: V8 keeps a module's source for its lifetime, at
// two bytes a character once one such character is anywhere in it (~2 MiB
// more per process). The escape keeps what the code means.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { afterAll, expect, it } from 'vitest';
import { buildStartBundle, escapeAboveLatin1 } from '../scripts/build.js';

const dir = mkdtempSync(join(tmpdir(), 'build-latin1-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('the start bundle is Latin-1 throughout', async () => {
  await buildStartBundle(dir);
  const source = readFileSync(join(dir, 'server.mjs'), 'utf8');
  expect(source.length).toBeGreaterThan(100_000);
  expect([...source].filter((ch) => ch.codePointAt(0)! > 0xff)).toEqual([]);
}, 120_000);

it('an escaped character means the same in strings, templates, regular expressions and identifiers', () => {
  const code =
    'const caf\u00e9\u03a9 = "a \u2014 b"; const t = `x\u2014`; const r = /\u2014|\ud83d\ude00/; [caf\u00e9\u03a9, t, r.test("\ud83d\ude00"), r.test("\u2014")]';
  const escaped = escapeAboveLatin1(code);
  expect([...escaped].every((ch) => ch.codePointAt(0)! <= 0xff)).toBe(true);
  // Latin-1 itself is left as it is.
  expect(escaped).toContain('caf\u00e9');
  expect(runInNewContext(escaped)).toEqual(runInNewContext(code));
});
