// The capacity dashboard inside workerd against sqld: the Worker has no
// filesystem, so the page and its assets come from the bundled module, and
// the summary reads over libSQL HTTP in one database round trip.
import { exports } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';
import { adminCall } from './admin-call.js';

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;
const call = adminCall;

async function ok(res: Promise<Response>): Promise<Response> {
  const r = await res;
  if (r.status >= 300) throw new Error(`${r.status} ${await r.text()}`);
  return r;
}

interface Summary {
  providers: {
    total_trees: number;
    trees: { name: string; over_capacity: boolean; resources: Record<string, { capacity: number; used: number; free: number }> }[];
  };
}

describe('dashboard in workerd', () => {
  it('serves the page and its bundled assets with no token', async () => {
    const page = await worker.fetch(new Request('http://edge.test/dashboard'));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<meta name="placement-auth" content="noauth2">');
    expect(html).toContain('/dashboard/assets/app.js');
    const js = await worker.fetch(new Request('http://edge.test/dashboard/assets/app.js'));
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await js.text()).toContain('/dashboard/api/summary');
    const css = await worker.fetch(new Request('http://edge.test/dashboard/assets/app.css'));
    expect(await css.text()).toContain('.bar');
  });

  it('summarises a tree, over capacity included, in one database round trip', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const rp = crypto.randomUUID();
    await ok(call('POST', '/resource_providers', { name: `dash-${run}`, uuid: rp }));
    await ok(
      call('PUT', `/resource_providers/${rp}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } }),
    );
    await ok(
      call('PUT', `/allocations/${crypto.randomUUID()}`, {
        allocations: { [rp]: { resources: { VCPU: 6 } } },
        project_id: `proj-${run}`,
        user_id: 'u',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      }),
    );
    await ok(call('PUT', `/resource_providers/${rp}/inventories/VCPU`, { resource_provider_generation: 2, total: 4 }));

    const hopsUrl = inject('sqldHopsUrl');
    await fetch(hopsUrl, { method: 'DELETE' });
    const res = await ok(call('GET', `/dashboard/api/summary?name=dash-${run}`));
    const { hops } = (await (await fetch(hopsUrl)).json()) as { hops: number };
    expect(hops).toBe(1);
    const body = (await res.json()) as Summary;
    expect(body.providers.total_trees).toBe(1);
    expect(body.providers.trees[0]).toMatchObject({
      name: `dash-${run}`,
      over_capacity: true,
      resources: { VCPU: { capacity: 4, used: 6, free: -2 } },
    });
  });
});
