// What the Worker's bundle (`wrangler deploy --dry-run`, wrangler.toml as
// committed) carries: every module in it is parsed when an isolate starts, so
// code the Worker never runs costs each new isolate. zod's namespace object
// (`import { z } from 'zod'`) makes esbuild keep every export of zod, its
// ~50 message translations among them; `import * as z from 'zod'` lets it
// keep only what is called. One file importing it the other way brings them
// all back, so the bundle itself is checked.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'worker-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Metafile {
  outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
}

it('the Worker bundle leaves out zod translations the service never uses', async () => {
  await run(
    join(ROOT, 'node_modules', '.bin', 'wrangler'),
    ['deploy', '--dry-run', '--outdir', join(dir, 'out'), '--metafile', join(dir, 'meta.json')],
    { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CLOUDFLARE_CF_FETCH_ENABLED: 'false' }, timeout: 120_000 },
  );
  const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as Metafile;
  const worker = Object.entries(meta.outputs).find(([name]) => name.endsWith('worker.js'));
  expect(worker).toBeDefined();
  const inputs = Object.entries(worker![1].inputs)
    .filter(([, input]) => input.bytesInOutput > 0)
    .map(([name]) => name);
  // The service's own code is there (a sanity check that the metafile was read).
  expect(inputs.some((name) => name.endsWith('src/entry/worker.ts'))).toBe(true);
  // English is zod's default messages; no other translation is reachable.
  const locales = inputs.filter((name) => /zod\/v4\/locales\//.test(name)).map((name) => name.replace(/^.*locales\//, ''));
  expect(locales).toEqual(['en.js']);
}, 150_000);
