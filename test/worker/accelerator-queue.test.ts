// The accelerator Worker path inside workerd against sqld: bind PATCH ->
// outbox row + JOBS queue message -> queue() consumer binds -> nova-event
// message -> queue() consumer -> Nova (a Node server that refuses the first
// attempt, so the queue retry runs) -> ARQ Bound with its attach handle.
import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const h: Record<string, string> = { 'x-auth-token': 'admin', accept: 'application/json', ...headers };
  if (body !== undefined) h['content-type'] = 'application/json';
  return worker.fetch(
    new Request(`http://edge.test${path}`, { method, headers: h, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
}
const acc = (method: string, path: string, body?: unknown) =>
  call(method, `/accelerator/v2${path}`, body, { 'openstack-api-version': 'accelerator 2.0' });

async function ok(res: Promise<Response>): Promise<Response> {
  const r = await res;
  if (r.status >= 300) throw new Error(`${r.status} ${await r.text()}`);
  return r;
}

describe('accelerator jobs in workerd', () => {
  it('binds through the queue and delivers the Nova event after a refused attempt', async () => {
    const run = crypto.randomUUID().slice(0, 8);
    const host = `wk-${run}`;
    const root = crypto.randomUUID();
    const fpga = crypto.randomUUID();
    const instance = crypto.randomUUID();
    await ok(call('POST', '/resource_providers', { name: host, uuid: root }, { 'openstack-api-version': 'placement latest' }));
    await ok(
      call(
        'POST',
        '/resource_providers',
        { name: `${host}_FPGA`, uuid: fpga, parent_provider_uuid: root },
        { 'openstack-api-version': 'placement latest' },
      ),
    );
    await ok(
      call(
        'PUT',
        `/resource_providers/${fpga}/inventories`,
        { resource_provider_generation: 0, inventories: { FPGA: { total: 1 } } },
        { 'openstack-api-version': 'placement latest' },
      ),
    );
    await ok(
      acc('PUT', `/hosts/${host}/devices`, {
        devices: [
          {
            key: '0000:0c:00.0',
            type: 'FPGA',
            vendor: '0x8086',
            model: 'a10',
            deployables: [
              {
                name: `${host}_FPGA`,
                num_accelerators: 1,
                rp_uuid: fpga,
                attach_handles: [{ type: 'PCI', info: { domain: '0000', bus: '0c', device: '00', function: '1' } }],
              },
            ],
          },
        ],
      }),
    );
    await ok(acc('POST', '/device_profiles', [{ name: `dp-${run}`, groups: [{ 'resources:FPGA': '1' }] }]));
    const { arqs } = (await (await ok(acc('POST', '/accelerator_requests', { device_profile_name: `dp-${run}` }))).json()) as {
      arqs: { uuid: string }[];
    };
    const arq = arqs[0]!.uuid;
    const patch = await acc('PATCH', '/accelerator_requests', {
      [arq]: [
        { path: '/hostname', op: 'add', value: host },
        { path: '/device_rp_uuid', op: 'add', value: fpga },
        { path: '/instance_uuid', op: 'add', value: instance },
      ],
    });
    expect(patch.status).toBe(202);

    const novaUrl = (await import('vitest')).inject('novaUrl');
    let events: { server_uuid: string; tag: string; status: string; token: string; microversion: string }[] = [];
    for (let i = 0; i < 100; i++) {
      events = ((await (await fetch(`${novaUrl}/__calls`)).json()) as typeof events).filter((e) => e.server_uuid === instance);
      if (events.length) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(events).toEqual([expect.objectContaining({ tag: arq, status: 'completed', token: 'nova-secret', microversion: '2.82' })]);
    const shown = (await (await acc('GET', `/accelerator_requests?instance=${instance}`)).json()) as {
      arqs: { state: string; attach_handle_info: Record<string, string> }[];
    };
    expect(shown.arqs[0]).toMatchObject({ state: 'Bound', attach_handle_info: { function: '1' } });
  });
});
