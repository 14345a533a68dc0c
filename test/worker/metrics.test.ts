// /healthz, /readyz and /metrics inside workerd against sqld: readiness and a
// scrape each read the database once; an isolate shows the database gauges
// (capacity, ARQs, outbox), not its own counters, which a scrape reaching any
// isolate among many would read as resets.
import { exports } from 'cloudflare:workers';
import { describe, expect, inject, it } from 'vitest';

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

function call(method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return worker.fetch(
    new Request(`http://edge.test${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
}

async function hops<T>(fn: () => Promise<T>): Promise<{ result: T; hops: number }> {
  const hopsUrl = inject('sqldHopsUrl');
  await fetch(hopsUrl, { method: 'DELETE' });
  const result = await fn();
  const { hops } = (await (await fetch(hopsUrl)).json()) as { hops: number };
  return { result, hops };
}

describe('operations endpoints in workerd', () => {
  it('answers /healthz and /readyz without a token, readiness in one database round trip', async () => {
    expect((await worker.fetch(new Request('http://edge.test/healthz'))).status).toBe(200);
    await worker.fetch(new Request('http://edge.test/readyz')); // the isolate has booted
    const { result, hops: trips } = await hops(() => worker.fetch(new Request('http://edge.test/readyz')));
    expect(result.status).toBe(200);
    expect(await result.json()).toEqual({ status: 'ready' });
    expect(trips).toBe(1);
  });

  it('shows the capacity gauges from one database read, and no isolate counters', async () => {
    const name = `metrics-${crypto.randomUUID().slice(0, 8)}`;
    const uuid = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name, uuid })).status).toBe(200);
    const inventories = { resource_provider_generation: 0, inventories: { VCPU: { total: 12, reserved: 1 } } };
    expect((await call('PUT', `/resource_providers/${uuid}/inventories`, inventories)).status).toBe(200);
    const { result, hops: trips } = await hops(async () => (await worker.fetch(new Request('http://edge.test/metrics'))).text());
    expect(trips).toBe(1);
    expect(result).toContain(`openstack_placement_resource_total{hostname="${name}",resourcetype="VCPU"} 12`);
    expect(result).toContain(`openstack_placement_resource_reserved{hostname="${name}",resourcetype="VCPU"} 1`);
    expect(result).toContain('placement_metrics_processes 0');
    expect(result).toMatch(/^cyborg_accelerator_requests\{state="Bound"\} \d+$/m);
    expect(result).not.toMatch(/^http_server_request_duration_seconds/m);
  });
});
