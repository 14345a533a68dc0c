// The dashboard's view of the extensions (docs/extensions.md) in a real browser
// (Debian's chromium, playwright-core) against a real `npm start`: tainted
// providers marked on their trees and their devices, the drain list, shared counters under a provider's inventory, the
// leases held (an expired one waiting for the sweep), the projects at a limit, and the headroom of a
// request the operator types, each equal to what the /ext/ API answers.
// Saves test-artifacts/dashboard-extensions.png. Fails, naming the package,
// where chromium is absent.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeWithPart } from '../helpers/parts.js';
import { CLOUD } from './seed.js';
import { ARTIFACTS, noChromium, type SeededDashboard, seededDashboard } from './seeded-browser.js';

const GPU_TAINT = { key: 'gpu.health/ecc', value: 'uncorrected', effect: 'NoSchedule', reason: '12 uncorrected ECC errors' };
const DRAIN_TAINT = { key: 'maintenance', value: '', effect: 'NoSchedule', reason: 'BIOS update' };

describeWithPart(noChromium, 'dashboard: taints, leases and headroom in chromium', () => {
  let dashboard: SeededDashboard;
  const call = (method: string, path: string, body?: unknown) => dashboard.call(method, path, body);
  const newPage = (): Promise<Page> => dashboard.newPage();
  const taint = async (uuid: string, taints: unknown[]) => {
    const { generation } = (await call('GET', `/resource_providers/${uuid}`)) as { generation: number };
    await call('PUT', `/ext/resource_providers/${uuid}/taints`, { resource_provider_generation: generation, taints });
  };

  beforeAll(async () => {
    // No sweep while the test looks: the expired lease stays until the next sweep, as between two sweeps.
    // Project limits: project-alpha's 10 VCPU reach the registered limit, project-beta's 6 do not.
    dashboard = await seededDashboard('dashboard-ext-', {
      JOBS_SWEEP_INTERVAL_MS: '3600000',
      PLACEMENT_LIMITS: 'static',
      PLACEMENT_LIMITS_JSON: JSON.stringify({ registered: { 'class:VCPU': 10 } }),
    });
    await taint(CLOUD.gpu0.uuid, [GPU_TAINT]);
    await taint(CLOUD.compute2.uuid, [DRAIN_TAINT]);
    // Shared counters on the GPU: its 1 VGPU held weighs 3 on a counter of 4.
    const { generation } = (await call('GET', `/resource_providers/${CLOUD.gpu0.uuid}`)) as { generation: number };
    await call('PUT', `/ext/resource_providers/${CLOUD.gpu0.uuid}/counters`, {
      resource_provider_generation: generation,
      counters: { vram: 4 },
      consumption: { VGPU: { vram: 3 } },
    });
    await call('PUT', `/ext/leases/${CLOUD.consumers.vm1}`, { seconds: 3600 });
    await call('PUT', `/ext/leases/${CLOUD.consumers.vol}`, { seconds: 1 });
    await new Promise((r) => setTimeout(r, 1_200)); // the second one expires
  }, 90_000);

  afterAll(async () => {
    await dashboard?.close();
  });

  const head = (page: Page, uuid: string) => page.locator(`.rp[data-uuid="${uuid}"] > .rp-body .rp-head`).first();

  it('marks tainted providers (a tainted root: its whole tree), their devices, and lists the drain list', async () => {
    const page = await newPage();
    const gpu = head(page, CLOUD.gpu0.uuid);
    expect(await gpu.locator('.badge.taint').innerText()).toMatch(/tainted gpu\.health\/ecc/i);
    expect(await gpu.locator('.badge.taint').getAttribute('title')).toContain(
      'gpu.health/ecc=uncorrected:NoSchedule (12 uncorrected ECC errors)',
    );
    expect(await page.locator(`.rp[data-uuid="${CLOUD.gpu0.uuid}"]`).getAttribute('class')).toContain('tainted');
    // compute-1 itself is not tainted: only its GPU child is out of candidates.
    expect(await head(page, CLOUD.compute1.uuid).locator('.badge.taint').count()).toBe(0);
    const compute2 = head(page, CLOUD.compute2.uuid);
    expect(await compute2.locator('.badge.taint').innerText()).toMatch(/tainted maintenance/i);
    expect(await compute2.locator('.badge.taint').getAttribute('title')).toContain('Its whole tree takes part in no allocation candidate');
    // The GPU device, whose deployable is the tainted provider.
    expect(await page.locator('#devices tr', { hasText: 'A100' }).locator('.badge.taint').innerText()).toMatch(/tainted gpu\.health\/ecc/i);

    // The drain list: as GET /ext/taints answers it.
    const drain = (await call('GET', '/ext/taints')) as { taints: { resource_provider_uuid: string; consumers: string[] }[] };
    expect(drain.taints).toHaveLength(2);
    const rows = page.locator('#taints tbody tr');
    expect(await rows.count()).toBe(2);
    for (const entry of drain.taints) {
      const row = page.locator(`#taints tr[data-uuid="${entry.resource_provider_uuid}"]`);
      expect(await row.locator('td.num').innerText()).toBe(String(entry.consumers.length));
    }
    expect(await page.locator(`#taints tr[data-uuid="${CLOUD.compute2.uuid}"]`).innerText()).toMatch(
      /compute-2\s+maintenance:NoSchedule\s+BIOS update\s+1/,
    );
    const consumers = new Set(drain.taints.flatMap((e) => e.consumers));
    expect(await page.locator('#taints-count').innerText()).toBe(
      `2 providers · ${consumers.size} consumer${consumers.size === 1 ? '' : 's'} still on them`,
    );
    // The drain list's provider button filters the trees to it.
    await page.locator('#taints button.link', { hasText: 'compute-2' }).click();
    await expect.poll(() => page.locator('.tree').count()).toBe(1);
    await page.close();
  });

  it("draws a provider's shared counters under its inventory, each its load against its total", async () => {
    const page = await newPage();
    const row = page.locator(`.rp[data-uuid="${CLOUD.gpu0.uuid}"] tr.counter[data-counter="vram"]`);
    expect(await row.innerText()).toMatch(/⧉ vram[\s\S]*3 \/ 4\s+1 free/);
    expect(await row.getAttribute('class')).toBe('counter');
    await page.close();
  });

  it('lists the leases held, the expired one waiting for the sweep', async () => {
    const page = await newPage();
    expect(await page.locator('#leases-count').innerText()).toBe('2 leases held · 1 expired, released by the next sweep');
    const expired = page.locator(`#leases tr[data-consumer="${CLOUD.consumers.vol}"]`);
    expect(await expired.getAttribute('class')).toBe('expired');
    expect(await expired.innerText()).toMatch(/expired \d+ s ago\s+1 s/);
    expect(await page.locator(`#leases tr[data-consumer="${CLOUD.consumers.vm1}"]`).innerText()).toMatch(/in [\d,]+ s\s+3,600 s/);
    await page.close();
  });

  it('lists the projects at or over a limit, as GET /ext/limits answers', async () => {
    const page = await newPage();
    const answer = (await call('GET', '/ext/limits')) as { projects: { project_id: string }[] };
    expect(answer.projects.map((p) => p.project_id)).toEqual(['project-alpha']);
    expect(await page.locator('#limits-count').innerText()).toMatch(/^1 project at or over a limit · from PLACEMENT_LIMITS_JSON, read /);
    expect(await page.locator('#limits tr[data-project="project-alpha"]').innerText()).toMatch(/project-alpha\s+VCPU\s+10\s+10/);
    await page.close();
  });

  it("lists the gang domains with their hosts and free hosts; a click shows the domain's trees", async () => {
    const page = await newPage();
    // The seed's one aggregate holds compute-1 and storage-1, both with allocations: 2 hosts, none free.
    expect(await page.locator('#domains-count').innerText()).toBe('1 aggregate with hosts');
    const row = page.locator(`#domains tr[data-aggregate="${CLOUD.aggregate}"]`);
    expect(await row.innerText()).toMatch(new RegExp(`${CLOUD.aggregate}\\s+2\\s+0`));
    await row.locator('button').click();
    await expect.poll(() => page.locator('.tree').count()).toBe(2);
    await page.close();
  });

  it('counts the headroom of a typed request as GET /ext/headroom does, and shows its errors', async () => {
    const page = await newPage();
    const query = 'resources=VCPU:2,MEMORY_MB:512';
    await page.fill('#headroom-query', `/allocation_candidates?${query}`);
    await page.click('#headroom-form button[type=submit]');
    await page.locator('#headroom .headline').waitFor();
    const expected = (await call('GET', `/ext/headroom?${query}`)) as {
      total: number;
      trees: { root_provider_uuid: string; count: number }[];
    };
    expect(expected.total).toBeGreaterThan(0);
    expect(Number(await page.locator('#headroom .headline').getAttribute('data-total'))).toBe(expected.total);
    expect(await page.locator('#headroom .headline').innerText()).toContain(`${expected.total} more fit, in ${expected.trees.length} tree`);
    for (const tree of expected.trees) {
      expect(await page.locator(`#headroom tr[data-uuid="${tree.root_provider_uuid}"] td.num`).innerText()).toBe(
        tree.count.toLocaleString('en-US'),
      );
    }
    expect(await page.locator('#headroom').innerText()).not.toMatch(/null|undefined/);
    // Named, not only by uuid; the tainted compute-2 is not among them.
    expect(await page.locator('#headroom tbody').innerText()).toContain('compute-1');
    expect(await page.locator(`#headroom tr[data-uuid="${CLOUD.compute2.uuid}"]`).count()).toBe(0);

    // A request nothing can take.
    await page.fill('#headroom-query', 'resources=VCPU:1000');
    await page.click('#headroom-form button[type=submit]');
    await expect.poll(() => page.locator('#headroom .headline').innerText()).toContain('Nothing fits');

    // The parser's own error, as /allocation_candidates words it.
    await page.fill('#headroom-query', 'resources=VCPU:x');
    await page.click('#headroom-form button[type=submit]');
    const res = await fetch(`${dashboard.server.url}/ext/headroom?resources=VCPU:x`, {
      headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest' },
    });
    expect(res.status).toBe(400);
    const detail = ((await res.json()) as { errors: { detail: string }[] }).errors[0]!.detail;
    await expect.poll(() => page.locator('#headroom-error').innerText()).toContain(detail.split('\n').at(-1)!.trim().slice(0, 40));

    await page.fill('#headroom-query', query);
    await page.click('#headroom-form button[type=submit]');
    await expect.poll(() => page.locator('#headroom .headline').count()).toBe(1);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-extensions.png'), fullPage: true });
    await page.close();
  });
});
