// What a browser test of a dashboard panel starts from: a real `npm start` on a
// fresh database holding the sample cloud (seed.ts), Debian's chromium
// (playwright-core), an admin caller of the API, and pages opened on the
// dashboard once its trees are shown (a page error fails the test).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { type ServerProcess, startServer } from '../helpers/node-server.js';
import { adminCall, seedCloud } from './seed.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Why the browser tests cannot run here (for describeWithPart), or undefined. */
export const noChromium = existsSync(CHROMIUM) ? undefined : `Debian package chromium (no browser at ${CHROMIUM}; or set CHROMIUM_PATH)`;
export const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');

export interface SeededDashboard {
  server: ServerProcess;
  browser: Browser;
  /** An admin request; throws on a status of 300 or more; the JSON answer. */
  call(method: string, path: string, body?: unknown): Promise<unknown>;
  /** A page on the dashboard, once the seed's three trees are shown. */
  newPage(height?: number): Promise<Page>;
  close(): Promise<void>;
}

export async function seededDashboard(prefix: string, env: Record<string, string> = {}): Promise<SeededDashboard> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const [server, browser] = await Promise.all([
    startServer(`file:${join(dir, 'placement.db')}`, env),
    chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] }),
  ]);
  const send = adminCall((path, init) => fetch(`${server.url}${path}`, init));
  await seedCloud(send);
  return {
    server,
    browser,
    async call(method, path, body) {
      const res = await send(method, path, body);
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? (JSON.parse(text) as unknown) : undefined;
    },
    async newPage(height = 1200) {
      const page = await browser.newPage({ viewport: { width: 1280, height } });
      page.on('pageerror', (err) => {
        throw err;
      });
      await page.goto(`${server.url}/dashboard`);
      await expect.poll(() => page.locator('.tree').count()).toBe(3);
      return page;
    },
    async close() {
      await browser.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
