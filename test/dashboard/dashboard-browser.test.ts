// The dashboard in a real browser: Debian's chromium (no browser download;
// `.ci/run` installs the package) driven by playwright-core against real
// `npm start` servers seeded through the public API. Saves a screenshot to
// test-artifacts/dashboard.png. Fails, naming the package, where chromium is absent.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';
import { adminCall, CLOUD, STORAGE_TRAITS, seedCloud } from './seed.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const noChromium = existsSync(CHROMIUM) ? undefined : `Debian package chromium (no browser at ${CHROMIUM}; or set CHROMIUM_PATH)`;
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');

describeWithPart(noChromium, 'dashboard in chromium', () => {
  let dir: string;
  let noauth: ServerProcess;
  let tokenMode: ServerProcess;
  let browser: Browser;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-browser-'));
    [noauth, tokenMode, browser] = await Promise.all([
      startServer(`file:${join(dir, 'noauth.db')}`),
      startServer(`file:${join(dir, 'token.db')}`, {
        PLACEMENT_AUTH_STRATEGY: 'token',
        PLACEMENT_AUTH_TOKENS: JSON.stringify({
          'op-token': { roles: ['admin'], project_id: 'ops' },
          'reader-token': { roles: ['reader'], project_id: 'ops' },
        }),
      }),
      chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] }),
    ]);
    await seedCloud(adminCall((path, init) => fetch(`${noauth.url}${path}`, init)));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([noauth?.stop(), tokenMode?.stop()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const newPage = async (): Promise<Page> => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.on('pageerror', (err) => {
      throw err;
    });
    return page;
  };
  const tree = (page: Page, uuid: string) => page.locator(`.rp[data-uuid="${uuid}"]`).first();

  it('shows the providers, their usage and the over-capacity marker with no login (noauth2)', async () => {
    const page = await newPage();
    const requests: string[] = [];
    page.on('request', (req) => requests.push(req.url()));
    await page.goto(`${noauth.url}/dashboard`);
    await expect.poll(() => page.locator('.tree').count()).toBe(3);

    for (const name of ['compute-1', 'compute-1-gpu0', 'compute-2', 'storage-1']) {
      expect(await page.locator('.rp-name').getByText(name, { exact: true }).isVisible(), name).toBe(true);
    }
    const compute2 = tree(page, CLOUD.compute2.uuid);
    expect(await compute2.locator('.rp-head .badge.over').innerText()).toMatch(/over capacity/i);
    const vcpu = compute2.locator('tr[data-class="VCPU"]');
    expect(await vcpu.innerText()).toContain('6 / 4');
    expect(await vcpu.innerText()).toContain('2 over');
    expect(await vcpu.locator('.bar.over').isVisible()).toBe(true);

    const compute1 = tree(page, CLOUD.compute1.uuid);
    expect(await compute1.locator(':scope > .rp-body tr[data-class="VCPU"]').innerText()).toMatch(/10 \/ 32\s+22 free/);
    expect(await compute1.locator(':scope > .rp-body tr[data-class="MEMORY_MB"]').innerText()).toContain('4,096 / 65,024');
    expect(await compute1.locator('.chip', { hasText: 'HW_CPU_X86_AVX2' }).isVisible()).toBe(true);
    expect(await tree(page, CLOUD.compute1.uuid).locator('.badge.over').count()).toBe(0);

    expect(await page.locator('.class-card[data-class="VCPU"]').innerText()).toMatch(/1 over capacity[\s\S]*44%[\s\S]*16 used \/ 36/i);

    // Trouble first: over capacity, then above 80 %, most used first, with the physical amount beside.
    const attention = page.locator('#attention tbody tr');
    expect(await attention.count()).toBe(2);
    expect(await attention.nth(0).innerText()).toMatch(/compute-2\s+VCPU\s+150%\s+6 \/ 4\s+2 over/i);
    expect(await attention.nth(1).innerText()).toMatch(/storage-1\s+DISK_GB\s+85%\s+850 \/ 1,000/);
    expect(await page.locator('#attention-count').innerText()).toContain('2 providers over capacity or above 80% used');
    // Percent used and the physical amount behind an overcommitted or reserved capacity.
    expect(await compute1.locator(':scope > .rp-body tr[data-class="VCPU"]').innerText()).toMatch(/31%\s+10 \/ 32\s+22 free\s+16 × 2\.0/);
    expect(await compute1.locator(':scope > .rp-body tr[data-class="MEMORY_MB"]').innerText()).toContain('(65,536 − 512 reserved)');
    // A long trait list is folded: six shown, the rest behind "+6 more".
    const storage = tree(page, CLOUD.storage.uuid);
    expect(await storage.locator('.chip.trait:visible').count()).toBe(6);
    await storage.locator('.chip.more').click();
    expect(await storage.locator('.chip.trait:visible').count()).toBe(STORAGE_TRAITS.length);
    await storage.locator('.chip.more').click();
    expect(await storage.locator('.chip.trait:visible').count()).toBe(6);
    expect(await page.locator('#projects').innerText()).toMatch(/project-alpha[\s\S]*project-beta/);
    expect(await page.locator('#arqs [data-state="Initial"]').innerText()).toMatch(/Initial\s*1/);
    expect(await page.locator('#devices').innerText()).toContain('A100');

    // Nothing but this service: no CDN, no fonts, works offline.
    expect(requests.every((url) => url.startsWith(noauth.url) || url.startsWith('data:'))).toBe(true);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard.png'), fullPage: true });
    await page.close();
  });

  it('filters trees by name, trait chip and "over 80% used"', async () => {
    const page = await newPage();
    await page.goto(`${noauth.url}/dashboard`);
    await expect.poll(() => page.locator('.tree').count()).toBe(3);
    // A provider in the trouble list shows its tree.
    await page.locator('#attention button.link', { hasText: 'compute-2' }).click();
    await expect.poll(() => page.locator('.tree .rp-name').allInnerTexts()).toEqual(['compute-2']);
    await page.click('#f-clear');
    await expect.poll(() => page.locator('.tree').count()).toBe(3);
    await page.fill('#f-name', 'storage');
    await expect.poll(() => page.locator('.tree .rp-name').allInnerTexts()).toEqual(['storage-1']);
    await page.click('#f-clear');
    await expect.poll(() => page.locator('.tree').count()).toBe(3);
    await page.locator('.chip', { hasText: 'CUSTOM_GPU_A' }).click();
    await expect.poll(() => page.locator('.tree > .rp > .rp-body .rp-name').allInnerTexts()).toEqual(['compute-1']);
    expect(await page.inputValue('#f-trait')).toBe('CUSTOM_GPU_A');
    await page.click('#f-clear');
    await page.check('#f-over');
    await expect.poll(() => page.locator('.tree > .rp > .rp-body .rp-name').allInnerTexts()).toEqual(['compute-2', 'storage-1']);
    await page.close();
  });

  it('refreshes by itself: a new claim shows up without a reload', async () => {
    const page = await newPage();
    await page.goto(`${noauth.url}/dashboard`);
    const disk = tree(page, CLOUD.storage.uuid).locator('tr[data-class="DISK_GB"]');
    await expect.poll(() => disk.innerText()).toContain('850 / 1,000');
    await page.selectOption('#refresh-interval', '5');
    const claim = await fetch(`${noauth.url}/allocations/${crypto.randomUUID()}`, {
      method: 'PUT',
      headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement latest' },
      body: JSON.stringify({
        allocations: { [CLOUD.storage.uuid]: { resources: { DISK_GB: 50 } } },
        project_id: 'project-gamma',
        user_id: 'operator',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      }),
    });
    expect(claim.status).toBe(204);
    // The next refresh is due 5 s after the choice; on a loaded machine its fetch and render take seconds more.
    await expect.poll(() => disk.innerText(), { timeout: 30_000 }).toContain('900 / 1,000');
    expect(await page.locator('#projects').innerText()).toContain('project-gamma');
    await page.close();
  }, 90_000);

  it('asks for a token in token mode and keeps it in sessionStorage only', async () => {
    const page = await newPage();
    await page.goto(`${tokenMode.url}/dashboard`);
    expect(await page.locator('#login').isVisible()).toBe(true);
    expect(await page.locator('#main').isVisible()).toBe(false);

    await page.fill('#login-token', 'wrong');
    await page.click('#login button[type=submit]');
    await expect.poll(() => page.locator('#login-error').innerText()).toContain('not accepted');

    await page.fill('#login-token', 'reader-token');
    await page.click('#login button[type=submit]');
    await expect.poll(() => page.locator('#login-error').innerText()).toContain('not an administrator');

    await page.fill('#login-token', 'op-token');
    await page.click('#login button[type=submit]');
    await expect.poll(() => page.locator('#main').isVisible()).toBe(true);
    expect(await page.locator('#trees').innerText()).toContain('No resource providers yet');
    // Evaluated in the page (a string: this project's TS has no DOM types).
    const stored = (await page.evaluate('({ session: { ...sessionStorage }, local: { ...localStorage }, cookie: document.cookie })')) as {
      session: Record<string, string>;
      local: Record<string, string>;
      cookie: string;
    };
    expect(Object.values(stored.session)).toEqual(['op-token']);
    expect(stored.local).toEqual({});
    expect(stored.cookie).toBe('');

    await page.reload();
    await expect.poll(() => page.locator('#main').isVisible()).toBe(true);
    await page.click('#sign-out');
    expect(await page.locator('#login').isVisible()).toBe(true);
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.close();
  });
});
