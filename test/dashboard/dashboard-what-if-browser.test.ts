// The dashboard's "what if" panel in a real browser (Debian's chromium,
// playwright-core) against a real `npm start`: an operator picks a change,
// runs it with a query, and the panel shows what POST /ext/simulate answers
// for that change (headroom before and after, the dashboard's figures, the
// consumers that would no longer fit and where they could go), with nothing
// written. Saves test-artifacts/dashboard-what-if.png. Fails, naming the
// package, where chromium is absent.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';
import { CLOUD, seedCloud } from './seed.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noChromium = existsSync(CHROMIUM) ? undefined : `Debian package chromium (no browser at ${CHROMIUM}; or set CHROMIUM_PATH)`;
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');

interface Answer {
  queries: { before: { total: number }; after: { total: number } }[];
  displaced: { consumer_uuid: string; reason: string; could_go: unknown }[];
  dashboard: Record<'before' | 'after', { resource_classes: Record<string, { capacity: number }> }>;
}

describeWithPart(noChromium, 'dashboard: the what-if panel in chromium', () => {
  let dir: string;
  let server: ServerProcess;
  let browser: Browser;

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement latest' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return text ? (JSON.parse(text) as unknown) : undefined;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-what-if-'));
    [server, browser] = await Promise.all([
      startServer(`file:${join(dir, 'placement.db')}`, { JOBS_SWEEP_INTERVAL_MS: '3600000' }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] }),
    ]);
    await seedCloud((method, path, body) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement latest' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const newPage = async (): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    page.on('pageerror', (err) => {
      throw err;
    });
    await page.goto(`${server.url}/dashboard`);
    await expect.poll(() => page.locator('.tree').count()).toBe(3);
    return page;
  };

  it("shows a ratio change's simulated answer: headroom and figures before and after, who no longer fits, nothing written", async () => {
    const page = await newPage();
    const query = 'resources=VCPU:2';
    const generations = await call('GET', '/resource_providers');
    await page.selectOption('#what-if-kind', 'ratio');
    await page.fill('#what-if-aggregate', CLOUD.aggregate);
    await page.fill('#what-if-class', 'VCPU');
    await page.fill('#what-if-ratio', '4');
    await page.fill('#what-if-query', query);
    await page.click('#what-if-form button[type=submit]');
    await page.locator('#what-if .headline').waitFor();

    const expected = (await call('POST', '/ext/simulate', {
      changes: [{ op: 'set_inventory', aggregate: CLOUD.aggregate, resource_class: 'VCPU', allocation_ratio: 4 }],
      queries: [{ name: 'query', query }],
    })) as Answer;
    // compute-1 (in the aggregate) goes from 16 x 2 to 16 x 4 VCPU: more fit after.
    expect(expected.queries[0]!.after.total).toBeGreaterThan(expected.queries[0]!.before.total);
    const row = page.locator('#what-if tr[data-query="query"]');
    expect(Number(await row.locator('td[data-before]').getAttribute('data-before'))).toBe(expected.queries[0]!.before.total);
    expect(Number(await row.locator('td[data-after]').getAttribute('data-after'))).toBe(expected.queries[0]!.after.total);
    const vcpu = page.locator('#what-if tr[data-figure="VCPU capacity"] td.num');
    expect(await vcpu.nth(0).innerText()).toBe(expected.dashboard.before.resource_classes.VCPU!.capacity.toLocaleString('en-US'));
    expect(await vcpu.nth(1).innerText()).toBe(expected.dashboard.after.resource_classes.VCPU!.capacity.toLocaleString('en-US'));
    // compute-2 (outside the aggregate) stays over capacity: its consumer still does not fit there.
    expect(expected.displaced.map((d) => d.consumer_uuid)).toEqual([CLOUD.consumers.vm2]);
    expect(Number(await page.locator('#what-if .headline').getAttribute('data-displaced'))).toBe(1);
    expect(await page.locator(`#what-if tr[data-consumer="${CLOUD.consumers.vm2}"]`).innerText()).toContain('over capacity');
    expect(await call('GET', '/resource_providers')).toEqual(generations);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.locator('#what-if-panel').screenshot({ path: join(ARTIFACTS, 'dashboard-what-if.png') });
    await page.close();
  });

  it('removes the providers with a trait (their trees) and shows the consumers displaced; bad input shows the service words', async () => {
    const page = await newPage();
    await page.selectOption('#what-if-kind', 'remove-trait');
    await page.fill('#what-if-trait', 'HW_CPU_X86_AVX2');
    await page.fill('#what-if-query', 'resources=VGPU:1');
    await page.click('#what-if-form button[type=submit]');
    await page.locator('#what-if .headline').waitFor();
    const expected = (await call('POST', '/ext/simulate', {
      changes: [{ op: 'remove_trees', providers: [CLOUD.compute1.uuid] }],
      queries: [{ name: 'query', query: 'resources=VGPU:1' }],
    })) as Answer;
    expect(expected.queries[0]!.after.total).toBe(0);
    const row = page.locator('#what-if tr[data-query="query"]');
    expect(Number(await row.locator('td[data-after]').getAttribute('data-after'))).toBe(0);
    for (const d of expected.displaced) expect(await page.locator(`#what-if tr[data-consumer="${d.consumer_uuid}"]`).count()).toBe(1);
    expect(await page.locator(`#what-if tr[data-consumer="${CLOUD.consumers.vm1}"]`).innerText()).toContain('its tree removed');

    await page.selectOption('#what-if-kind', 'resize');
    await page.fill('#what-if-from', 'VCPU:3');
    await page.fill('#what-if-to', 'VCPU:4');
    await page.click('#what-if-form button[type=submit]');
    await expect.poll(() => page.locator('#what-if-error').innerText()).toContain('change 0 (resize) matches no consumer');
    await page.close();
  });
});
