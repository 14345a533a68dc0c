// The dashboard's extension panels come from the installed extensions'
// declarations (Extension.dashboard's panels): in a real browser (Debian's
// chromium, playwright-core), the page of an app built without an extension
// (or whose settings turn it off: project limits here) shows no panel for it
// and asks nothing of its routes, while the page of the app with every
// extension shows the others. The apps are built in this process
// (one database, seeded through the API), the browser's requests answered by them.
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { EXTENSIONS, makeDeps } from '../../src/compose.js';
import type { DataStore } from '../../src/db/client.js';
import { openStore } from '../../src/entry/node-service.js';
import { taints } from '../../src/ext/taints/extension.js';
import { type Extension, withoutExtensions } from '../../src/extension.js';
import { describeWithPart } from '../helpers/parts.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { adminCall, seedCloud } from './seed.js';
import { CHROMIUM, noChromium } from './seeded-browser.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const ORIGIN = 'http://dashboard.test';
/** Each shipped extension's panel on the page. */
const PANELS = ['headroom-panel', 'what-if-panel', 'holds-panel', 'taints-panel', 'leases-panel', 'limits-panel', 'domains-panel'];

describeWithPart(noChromium, 'dashboard: the panels of the installed extensions only, in chromium', () => {
  let full: TestApp;
  let browser: Browser;
  const stores: DataStore[] = [];

  beforeAll(async () => {
    [full, browser] = await Promise.all([
      makeTestApp(),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] }),
    ]);
    await seedCloud(adminCall((path, init) => full.app.request(path, init)));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    for (const store of stores) store.close();
    full?.close();
  });

  const appWith = async (extensions: readonly Extension[]) => {
    const store = await openStore(full.deps.config, { prepare: false }, silent);
    stores.push(store);
    return createApp(makeDeps(store, full.deps.config, silent, { extensions }));
  };

  /** The dashboard of `app` in a page, once its three trees are shown, with every request the page made and its status. */
  const open = async (app: ReturnType<typeof createApp>): Promise<{ page: Page; asked: string[] }> => {
    const asked: string[] = [];
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on('pageerror', (err) => {
      throw err;
    });
    await page.route(`${ORIGIN}/**`, async (route) => {
      const request = route.request();
      const url = new URL(request.url());
      const res = await app.request(`${url.pathname}${url.search}`, {
        method: request.method(),
        headers: request.headers(),
        body: request.postData() ?? undefined,
      });
      asked.push(`${res.status} ${url.pathname}`);
      await route.fulfill({ status: res.status, headers: Object.fromEntries(res.headers), body: Buffer.from(await res.arrayBuffer()) });
    });
    await page.goto(`${ORIGIN}/dashboard`);
    await expect.poll(() => page.locator('.tree').count()).toBe(3);
    await expect.poll(() => page.locator('#status').innerText()).toMatch(/^updated/);
    return { page, asked };
  };

  const panelsOn = async (page: Page) => {
    const present: string[] = [];
    for (const id of PANELS) if ((await page.locator(`#${id}`).count()) > 0) present.push(id);
    return present;
  };

  it('the app with every extension shows each panel but the one of limits, off by its settings, and asks no route that is not there', async () => {
    const { page, asked } = await open(full.app);
    expect(await panelsOn(page)).toEqual(PANELS.filter((id) => id !== 'limits-panel'));
    expect(asked).toEqual(expect.arrayContaining(['200 /ext/taints', '200 /ext/leases', '200 /ext/holds/timeline']));
    expect(asked.filter((a) => a.endsWith('/ext/limits'))).toEqual([]);
    expect(asked.filter((a) => a.startsWith('404'))).toEqual([]);
    await page.close();
  });

  it('an app without taints (and simulate, which requires it) shows neither panel and never asks for /ext/taints', async () => {
    const { page, asked } = await open(await appWith(withoutExtensions(EXTENSIONS, [taints])));
    expect(await panelsOn(page)).toEqual(PANELS.filter((id) => !['taints-panel', 'what-if-panel', 'limits-panel'].includes(id)));
    expect(asked.filter((a) => a.endsWith('/ext/taints'))).toEqual([]);
    expect(asked).toContain('200 /ext/leases');
    expect(asked.filter((a) => a.startsWith('404'))).toEqual([]);
    // The trees are drawn, unmarked.
    expect(await page.locator('.badge.taint').count()).toBe(0);
    await page.close();
  });

  it('an app without any extension shows no extension panel and asks nothing under /ext', async () => {
    const { page, asked } = await open(await appWith([]));
    expect(await panelsOn(page)).toEqual([]);
    expect(asked.filter((a) => a.includes(' /ext/'))).toEqual([]);
    expect(asked.filter((a) => a.startsWith('404'))).toEqual([]);
    expect(await page.locator('#projects tbody tr').count()).toBeGreaterThan(0);
    await page.close();
  });
});
