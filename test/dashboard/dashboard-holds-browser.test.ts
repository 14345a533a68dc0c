// The dashboard's time line of holds (docs/holds.md) in a real browser
// (Debian's chromium, playwright-core) against a real `npm start`: three real
// holds (one in its window with a claim drawn from it, two ahead), shown as
// bars per aggregate and provider, held and drawn as GET /ext/holds/timeline
// answers, now marked between the active hold's start and the next one's.
// Saves test-artifacts/dashboard-holds.png. Fails, naming the package, where
// chromium is absent.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';
import { CLOUD, seedCloud } from './seed.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noChromium = existsSync(CHROMIUM) ? undefined : `Debian package chromium (no browser at ${CHROMIUM}; or set CHROMIUM_PATH)`;
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');
const EDGE = { uuid: 'c0000004-0000-4000-8000-000000000004', name: 'edge-1' };
const DRAWN_CONSUMER = 'e0000009-0000-4000-8000-000000000009';
const HOUR = 3600_000;

interface Timeline {
  now: string;
  groups: {
    aggregate_uuid: string | null;
    providers: { uuid: string; name: string; holds: { uuid: string; resources: Record<string, { held: number; drawn: number }> }[] }[];
  }[];
}

describeWithPart(noChromium, 'dashboard: the time line of holds in chromium', () => {
  let dir: string;
  let server: ServerProcess;
  let browser: Browser;
  const holds: Record<'active' | 'gpu' | 'edge', string> = { active: '', gpu: '', edge: '' };

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
  const hold = async (project: string, startMs: number, endMs: number, allocations: Record<string, Record<string, number>>) => {
    const made = (await call('POST', '/ext/holds', {
      project_id: project,
      start: new Date(startMs).toISOString(),
      end: new Date(endMs).toISOString(),
      allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
    })) as { uuid: string };
    return made.uuid;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-holds-'));
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
    // A provider in no aggregate.
    await call('POST', '/resource_providers', EDGE);
    await call('PUT', `/resource_providers/${EDGE.uuid}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 8 } },
    });
    const now = Date.now();
    // In its window now, 40 of its 100 GB drawn by project-beta's claim.
    holds.active = await hold('project-beta', now - 2 * HOUR, now + 2 * HOUR, { [CLOUD.storage.uuid]: { DISK_GB: 100 } });
    await call('PUT', `/allocations/${DRAWN_CONSUMER}?ext_hold=${holds.active}`, {
      allocations: { [CLOUD.storage.uuid]: { resources: { DISK_GB: 40 } } },
      project_id: 'project-beta',
      user_id: 'operator',
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    });
    // Ahead: two of compute-1's GPUs (compute-1 is in the aggregate), and half of edge-1.
    holds.gpu = await hold('project-alpha', now + 3 * HOUR, now + 5 * HOUR, { [CLOUD.gpu0.uuid]: { VGPU: 2 } });
    holds.edge = await hold('project-alpha', now + HOUR, now + 4 * HOUR, { [EDGE.uuid]: { VCPU: 4 } });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('shows each hold as a bar under its aggregate and provider, held and drawn as the API answers, now marked', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1400 } });
    page.on('pageerror', (err) => {
      throw err;
    });
    await page.goto(`${server.url}/dashboard`);
    await expect.poll(() => page.locator('#holds-timeline .hold-bar').count(), { timeout: 30_000 }).toBe(3);

    const timeline = (await call('GET', '/ext/holds/timeline')) as Timeline;
    expect(timeline.groups.map((g) => g.aggregate_uuid)).toEqual([CLOUD.aggregate, null]);
    expect(timeline.groups[0]!.providers.map((p) => p.name)).toEqual([CLOUD.gpu0.name, CLOUD.storage.name]);
    expect(timeline.groups[1]!.providers.map((p) => p.name)).toEqual([EDGE.name]);
    for (const group of timeline.groups) {
      const onPage = page.locator(`.hold-group[data-aggregate="${group.aggregate_uuid ?? ''}"]`);
      for (const provider of group.providers) {
        for (const h of provider.holds) {
          const bar = onPage.locator(`.hold-row[data-uuid="${provider.uuid}"] .hold-bar[data-hold="${h.uuid}"]`);
          const classes = Object.entries(h.resources);
          expect(await bar.getAttribute('data-held')).toBe(classes.map(([rc, r]) => `${rc}:${r.held}`).join(','));
          expect(await bar.getAttribute('data-drawn')).toBe(classes.map(([rc, r]) => `${rc}:${r.drawn}`).join(','));
        }
      }
    }
    // The active hold: 40 of 100 drawn, in its window; the others ahead.
    const active = page.locator(`.hold-bar[data-hold="${holds.active}"]`);
    expect(await active.getAttribute('data-drawn')).toBe('DISK_GB:40');
    expect(await active.getAttribute('class')).toContain('active');
    expect(await active.innerText()).toContain('project-beta · DISK_GB 40/100');
    expect(await page.locator(`.hold-bar[data-hold="${holds.gpu}"]`).getAttribute('class')).not.toContain('active');
    expect(await page.locator('#holds-count').innerText()).toBe('3 holds on 3 provider rows');

    // Now is drawn after the active hold's start and before the next window's, on every provider's track.
    const x = async (selector: string) => (await page.locator(selector).first().boundingBox())!.x;
    const storageRow = `.hold-row[data-uuid="${CLOUD.storage.uuid}"]`;
    const edgeRow = `.hold-row[data-uuid="${EDGE.uuid}"]`;
    expect(await page.locator('.hold-track .hold-now').count()).toBe(3);
    const nowX = await x(`${storageRow} .hold-now`);
    expect(await x(`${storageRow} .hold-bar`)).toBeLessThan(nowX);
    expect(await x(`${edgeRow} .hold-bar`)).toBeGreaterThan(nowX);
    expect(await x(`.hold-bar[data-hold="${holds.gpu}"]`)).toBeGreaterThan(await x(`${edgeRow} .hold-bar`));
    // The drawn share fills 40% of the active bar.
    const [bar, drawn] = await Promise.all([active.boundingBox(), active.locator('.hold-drawn').boundingBox()]);
    expect(drawn!.width / bar!.width).toBeCloseTo(0.4, 1);

    // A hold removed: the next refresh drops its bar.
    await call('DELETE', `/ext/holds/${holds.edge}`);
    await page.click('#refresh-now');
    await expect.poll(() => page.locator('#holds-timeline .hold-bar').count(), { timeout: 30_000 }).toBe(2);
    expect(await page.locator('.hold-group[data-aggregate=""]').count()).toBe(0);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-holds.png'), fullPage: true });
    await page.close();
  });
});
