// The accelerator Worker path inside workerd against sqld: bind PATCH ->
// outbox row + JOBS queue message -> queue() consumer binds -> nova-event
// message -> queue() consumer -> Nova (a Node server that refuses the first
// attempt, so the queue retry runs) -> ARQ Bound with its attach handle.
import { exports } from 'cloudflare:workers';
import { beforeEach, describe, expect, inject, it } from 'vitest';
import { a10Report, pciFunctions } from '../helpers/fpga-report.js';

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

/** A compute node `<prefix>-<run>` with a child `<host>_FPGA` holding `total` FPGA, all new (the database is shared). */
async function fpgaHost(prefix: string, total: number): Promise<{ run: string; host: string; root: string; fpga: string }> {
  const placement = { 'openstack-api-version': 'placement latest' };
  const run = crypto.randomUUID().slice(0, 8);
  const host = `${prefix}-${run}`;
  const [root, fpga] = [crypto.randomUUID(), crypto.randomUUID()];
  await ok(call('POST', '/resource_providers', { name: host, uuid: root }, placement));
  await ok(call('POST', '/resource_providers', { name: `${host}_FPGA`, uuid: fpga, parent_provider_uuid: root }, placement));
  await ok(
    call(
      'PUT',
      `/resource_providers/${fpga}/inventories`,
      { resource_provider_generation: 0, inventories: { FPGA: { total } } },
      placement,
    ),
  );
  return { run, host, root, fpga };
}

describe('accelerator jobs in workerd', () => {
  it('binds through the queue and delivers the Nova event after a refused attempt', { timeout: 60_000 }, async () => {
    const { run, host, fpga } = await fpgaHost('wk', 1);
    const instance = crypto.randomUUID();
    const handle = { type: 'PCI', info: { domain: '0000', bus: '0c', device: '00', function: '1' } };
    await ok(acc('PUT', `/hosts/${host}/devices`, a10Report(host, fpga, [handle])));
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
    // The queue's retry after the refused attempt takes seconds; far longer on a loaded machine.
    for (const deadline = Date.now() + 50_000; Date.now() < deadline; ) {
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

describe('accelerator writes take at most 2 database round trips (one read batch, one write batch)', () => {
  const hopsUrl = () => inject('sqldHopsUrl');
  /** Round trips of one accelerator request, counted by the proxy in front of sqld. */
  async function hopsOf(method: string, path: string, body?: unknown): Promise<{ hops: number; status: number }> {
    await fetch(hopsUrl(), { method: 'DELETE' });
    const res = await acc(method, path, body);
    await res.arrayBuffer();
    const { hops } = (await (await fetch(hopsUrl())).json()) as { hops: number };
    return { hops, status: res.status };
  }
  /** Waits until no outbox row is pending: the bind jobs and Nova events in the background are done with the database. */
  async function settled(): Promise<void> {
    for (const deadline = Date.now() + 50_000; Date.now() < deadline; ) {
      const { outbox } = (await (await acc('GET', '/outbox?state=pending')).json()) as { outbox: unknown[] };
      if (!outbox.length) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error('the outbox did not drain');
  }
  // The proxy counts every round trip to sqld: background bind jobs and Nova events of an
  // earlier test (slow on a loaded machine) must be done before a test counts its own.
  beforeEach(settled, 60_000);

  async function hostWithFpga(handleCount: number) {
    const { run, host, root, fpga } = await fpgaHost('hop', handleCount);
    const report = a10Report(host, fpga, pciFunctions(handleCount, '0c'));
    return { run, host, root, fpga, report };
  }

  it('agent reports: a first report, a big one, the same again, the programmed report', async () => {
    const { host, fpga, report } = await hostWithFpga(2);
    expect(await hopsOf('PUT', `/hosts/${host}/devices`, report)).toEqual({ hops: 2, status: 200 });
    // 16 devices x 4 deployables x 8 handles: hundreds of statements, still one read and one write batch.
    const big = {
      devices: [
        ...report.devices,
        ...Array.from({ length: 15 }, (_, d) => ({
          key: `0000:${(d + 16).toString(16)}:00.0`,
          type: 'GPU',
          vendor: '10de',
          model: 'a100',
          deployables: Array.from({ length: 4 }, (_, k) => ({
            name: `${host}_GPU_${d}_${k}`,
            num_accelerators: 8,
            attach_handles: pciFunctions(8, `${(d + 16).toString(16)}${k}`),
          })),
        })),
      ],
    };
    expect(await hopsOf('PUT', `/hosts/${host}/devices`, big)).toEqual({ hops: 2, status: 200 });
    expect(await hopsOf('PUT', `/hosts/${host}/devices`, big)).toEqual({ hops: 2, status: 200 });
    expect(await hopsOf('PUT', `/hosts/${host}/devices`, report)).toEqual({ hops: 2, status: 200 });
    expect((await hopsOf('PUT', `/hosts/${host}/devices`, { devices: 'nope' })).hops).toBe(0);
    const { deployables } = (await (await acc('GET', '/deployables')).json()) as { deployables: { uuid: string; rp_uuid: string }[] };
    const deployable = deployables.find((d) => d.rp_uuid === fpga)!.uuid;
    expect(await hopsOf('PUT', `/deployables/${deployable}/programmed`, { bitstream_id: 'bs-1' })).toEqual({ hops: 2, status: 200 });
    expect(await hopsOf('PUT', `/deployables/${crypto.randomUUID()}/programmed`, { bitstream_id: 'bs-1' })).toEqual({
      hops: 1,
      status: 404,
    });
  });

  it('device profiles, attributes, device enable and disable', async () => {
    const { run, host, report } = await hostWithFpga(1);
    await ok(acc('PUT', `/hosts/${host}/devices`, report));
    const names = [`hp-a-${run}`, `hp-b-${run}`, `hp-c-${run}`];
    for (const name of names) {
      expect(await hopsOf('POST', '/device_profiles', [{ name, groups: [{ 'resources:FPGA': '1' }] }])).toEqual({ hops: 2, status: 201 });
    }
    expect(await hopsOf('POST', '/device_profiles', [{ name: names[0], groups: [{ 'resources:FPGA': '1' }] }])).toEqual({
      hops: 1,
      status: 409,
    });
    expect(await hopsOf('DELETE', `/device_profiles/${names[0]}`)).toEqual({ hops: 2, status: 204 });
    expect(await hopsOf('DELETE', `/device_profiles/${names[0]}`)).toEqual({ hops: 1, status: 404 });
    expect(await hopsOf('DELETE', `/device_profiles?value=${names[1]},${names[0]}`)).toEqual({ hops: 1, status: 404 });
    expect(await hopsOf('DELETE', `/device_profiles?value=${names[1]},${names[2]}`)).toEqual({ hops: 2, status: 204 });

    const { devices } = (await (await acc('GET', `/devices?hostname=${host}`)).json()) as { devices: { uuid: string }[] };
    // Deployable ids are not on the wire; the first test of this file reported deployable 1, and reports never drop it.
    const deployableId = '1';
    expect(await hopsOf('POST', '/attributes', { deployable_id: deployableId, key: 'rc', value: 'FPGA' })).toEqual({
      hops: 1,
      status: 201,
    });
    expect(await hopsOf('POST', '/attributes', { deployable_id: '999999', key: 'rc', value: 'FPGA' })).toEqual({ hops: 1, status: 400 });
    const { attributes } = (await (await acc('GET', `/attributes?deployable_id=${deployableId}`)).json()) as {
      attributes: { uuid: string }[];
    };
    expect(await hopsOf('DELETE', `/attributes/${attributes[0]!.uuid}`)).toEqual({ hops: 1, status: 204 });
    expect(await hopsOf('DELETE', `/attributes/${attributes[0]!.uuid}`)).toEqual({ hops: 1, status: 404 });

    const device = devices[0]!.uuid;
    expect(await hopsOf('POST', `/devices/${device}/disable`)).toEqual({ hops: 1, status: 200 });
    expect(await hopsOf('POST', `/devices/${device}/enable`)).toEqual({ hops: 1, status: 200 });
    expect(await hopsOf('POST', `/devices/${crypto.randomUUID()}/enable`)).toEqual({ hops: 1, status: 404 });
  });

  it('ARQs: create, bind, refused binds, unbind, delete by uuid and by instance', async () => {
    const { run, host, fpga, report } = await hostWithFpga(2);
    await ok(acc('PUT', `/hosts/${host}/devices`, report));
    await ok(acc('POST', '/device_profiles', [{ name: `hq-${run}`, groups: [{ 'resources:FPGA': '2' }] }]));
    await fetch(hopsUrl(), { method: 'DELETE' });
    const created = await acc('POST', '/accelerator_requests', { device_profile_name: `hq-${run}` });
    expect(created.status).toBe(201);
    const arqs = ((await created.json()) as { arqs: { uuid: string }[] }).arqs.map((a) => a.uuid);
    expect(arqs).toHaveLength(2);
    expect(((await (await fetch(hopsUrl())).json()) as { hops: number }).hops).toBe(2);
    expect(await hopsOf('POST', '/accelerator_requests', { device_profile_name: `nope-${run}` })).toEqual({ hops: 1, status: 404 });

    const bind = (arq: string, instance: string, rp = fpga) => ({
      [arq]: [
        { path: '/hostname', op: 'add', value: host },
        { path: '/device_rp_uuid', op: 'add', value: rp },
        { path: '/instance_uuid', op: 'add', value: instance },
      ],
    });
    const [vm, other] = [crypto.randomUUID(), crypto.randomUUID()];
    await settled();
    expect(await hopsOf('PATCH', '/accelerator_requests', { ...bind(arqs[0]!, vm), ...bind(arqs[1]!, vm) })).toEqual({
      hops: 2,
      status: 202,
    });
    await settled();
    // Refusals and a repeat are decided from the read.
    expect(await hopsOf('PATCH', '/accelerator_requests', bind(arqs[0]!, vm))).toEqual({ hops: 1, status: 202 });
    expect(await hopsOf('PATCH', '/accelerator_requests', bind(arqs[0]!, other))).toEqual({ hops: 1, status: 409 });
    expect(await hopsOf('PATCH', '/accelerator_requests', bind(crypto.randomUUID(), other))).toEqual({ hops: 1, status: 404 });
    const unbind = { [arqs[0]!]: [{ path: '/hostname', op: 'remove' }] };
    expect(await hopsOf('PATCH', '/accelerator_requests', unbind)).toEqual({ hops: 2, status: 202 });
    expect(await hopsOf('PATCH', '/accelerator_requests', bind(arqs[0]!, other, crypto.randomUUID()))).toEqual({ hops: 1, status: 400 });
    expect(await hopsOf('PATCH', '/accelerator_requests', { [crypto.randomUUID()]: [{ path: '/hostname', op: 'remove' }] })).toEqual({
      hops: 1,
      status: 404,
    });
    expect(await hopsOf('DELETE', `/accelerator_requests?arqs=${arqs[0]}`)).toEqual({ hops: 2, status: 204 });
    expect(await hopsOf('DELETE', `/accelerator_requests?arqs=${arqs[0]}`)).toEqual({ hops: 1, status: 404 });
    expect(await hopsOf('DELETE', `/accelerator_requests?instance=${vm}`)).toEqual({ hops: 2, status: 204 });
    expect(await hopsOf('DELETE', `/accelerator_requests?instance=${vm}`)).toEqual({ hops: 1, status: 204 });
    await settled();
  });
});

describe('racing binds in workerd against sqld', () => {
  it('16 binds for 5 attach handles: exactly 5 bound; 8 binds of one ARQ: exactly one accepted', async () => {
    const { run, host, fpga } = await fpgaHost('race', 5);
    const handles = Array.from({ length: 5 }, (_, i) => ({ type: 'PCI', info: { bus: '0e', function: String(i) } }));
    await ok(acc('PUT', `/hosts/${host}/devices`, a10Report(host, fpga, handles, '0e')));
    await ok(acc('POST', '/device_profiles', [{ name: `race-${run}`, groups: [{ 'resources:FPGA': '1' }] }]));
    const arqs: string[] = [];
    for (let i = 0; i < 17; i++) {
      const res = await ok(acc('POST', '/accelerator_requests', { device_profile_name: `race-${run}` }));
      arqs.push(((await res.json()) as { arqs: { uuid: string }[] }).arqs[0]!.uuid);
    }
    const bind = (arq: string) => ({
      [arq]: [
        { path: '/hostname', op: 'add', value: host },
        { path: '/device_rp_uuid', op: 'add', value: fpga },
        { path: '/instance_uuid', op: 'add', value: crypto.randomUUID() },
      ],
    });
    const [many, contested] = await Promise.all([
      Promise.all(arqs.slice(0, 16).map((arq) => acc('PATCH', '/accelerator_requests', bind(arq)))),
      Promise.all(Array.from({ length: 8 }, () => acc('PATCH', '/accelerator_requests', bind(arqs[16]!)))),
    ]);
    expect(many.map((r) => r.status)).toEqual(Array(16).fill(202));
    expect(contested.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409, 409, 409, 409]);

    let states: string[] = [];
    for (let i = 0; i < 150; i++) {
      const shown = await Promise.all(
        arqs.map(async (arq) => ((await (await acc('GET', `/accelerator_requests/${arq}`)).json()) as { state: string }).state),
      );
      states = shown;
      if (!shown.includes('BindStarted')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(states.filter((s) => s === 'Bound')).toHaveLength(5);
    expect(states.filter((s) => s === 'BindFailed')).toHaveLength(12);
    const shown = (await (await acc('GET', `/accelerator_requests`)).json()) as {
      arqs: { uuid: string; state: string; attach_handle_info: Record<string, string> | null }[];
    };
    const functions = shown.arqs.filter((a) => arqs.includes(a.uuid) && a.state === 'Bound').map((a) => a.attach_handle_info?.function);
    expect(new Set(functions).size).toBe(5);
    // Leave nothing running for the next file's round-trip counts.
    for (let i = 0; i < 150; i++) {
      const { outbox } = (await (await acc('GET', '/outbox?state=pending')).json()) as { outbox: unknown[] };
      if (!outbox.length) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  }, 60_000);
});
