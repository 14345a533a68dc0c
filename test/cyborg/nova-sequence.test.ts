// The Nova sequence of ARQ.md against the service, with a real HTTP server
// playing Nova: profile by name, ARQ create, bind PATCH, the event, GET
// ?instance= showing Bound with attach handle info, unbind, delete, timeout.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepBindingTimeouts } from '../../src/cyborg/jobs.js';
import { drainOutbox } from '../../src/jobs/sweeps.js';
import { bindBody, FPGA_RP, fpgaProfile, makeCyborgApp, seedHost, startFakeNova, type CyborgTestApp } from './helpers.js';

const INSTANCE = '506220bc-18f2-4294-9b29-80267a021dc0';
/** Nova calls with the end user's token (a project member) and its own service token. */
const USER = { 'x-auth-token': 'u1:p1', 'x-roles': 'member,reader' };
const NOVA = { ...USER, 'x-service-token': 'nova', 'x-service-roles': 'service' };
type Arq = {
  uuid: string;
  state: string;
  device_profile_group_id: number;
  attach_handle_type: string;
  attach_handle_info: Record<string, string>;
  instance_uuid: string | null;
  hostname: string | null;
};

/** An ARQ of a profile that needs bitstream bits-1, bound to INSTANCE: the bind waits for the device to be programmed. */
async function bindBitstreamArq(t: CyborgTestApp): Promise<Arq> {
  await t.acc('POST', '/device_profiles', { body: fpgaProfile('dp-bits', { 'accel:bitstream_id': 'bits-1' }) });
  const created = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'dp-bits' } })).json()) as {
    arqs: Arq[];
  };
  const arq = created.arqs[0]!;
  await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq.uuid, INSTANCE) });
  await t.jobs.queue.idle();
  return arq;
}

describe('Nova boot sequence', () => {
  let t: CyborgTestApp;
  let nova: Awaited<ReturnType<typeof startFakeNova>>;
  beforeEach(async () => {
    nova = await startFakeNova();
    t = await makeCyborgApp({ NOVA_URL: nova.url });
    await seedHost(t, 2);
  });
  afterEach(async () => {
    t.close();
    await nova.close();
  });

  it('as Nova (user token + service token): binds, notifies Nova, shows the attach handle, unbinds and deletes by instance', async () => {
    expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
    // nova-api: exactly one profile by name, no version header.
    const listed = (await (
      await t.acc('GET', '/device_profiles?name=fpga-dp1', { headers: { ...USER, 'openstack-api-version': '' } })
    ).json()) as { device_profiles: unknown[] };
    expect(listed.device_profiles).toHaveLength(1);

    const created = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' }, headers: NOVA });
    expect(created.status).toBe(201);
    const { arqs } = (await created.json()) as { arqs: Arq[] };
    expect(arqs).toHaveLength(1);
    expect(arqs[0]).toMatchObject({ state: 'Initial', device_profile_group_id: 0, attach_handle_type: '', attach_handle_info: {} });

    const patch = await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, INSTANCE), headers: NOVA });
    expect(patch.status).toBe(202);
    expect(await patch.text()).toBe('');
    await t.jobs.queue.idle();

    expect(nova.calls).toHaveLength(1);
    expect(nova.calls[0]!.headers['x-openstack-nova-api-version']).toBe('2.82');
    expect(nova.calls[0]!.headers['x-auth-token']).toBe('nova-secret');
    expect(nova.calls[0]!.events).toEqual([
      { name: 'accelerator-request-bound', server_uuid: INSTANCE, tag: arqs[0]!.uuid, status: 'completed' },
    ]);

    const byInstance = (await (await t.acc('GET', `/accelerator_requests?instance=${INSTANCE}`, { headers: NOVA })).json()) as {
      arqs: Arq[];
    };
    expect(byInstance.arqs).toHaveLength(1);
    expect(byInstance.arqs[0]).toMatchObject({
      state: 'Bound',
      attach_handle_type: 'PCI',
      attach_handle_info: { domain: '0000', bus: '0c', device: '00', function: '0' },
    });
    const resolved = await t.acc('GET', `/accelerator_requests?instance=${INSTANCE}&bind_state=resolved`, { headers: NOVA });
    expect(resolved.status).toBe(200);

    const unbind = await t.acc('PATCH', `/accelerator_requests/${arqs[0]!.uuid}`, {
      headers: NOVA,
      body: {
        [arqs[0]!.uuid]: [
          { path: '/hostname', op: 'remove' },
          { path: '/instance_uuid', op: 'remove' },
          { path: '/device_rp_uuid', op: 'remove' },
        ],
      },
    });
    expect(unbind.status).toBe(202);
    const shown = (await (await t.acc('GET', `/accelerator_requests/${arqs[0]!.uuid}`, { headers: NOVA })).json()) as Arq;
    expect(shown).toMatchObject({ state: 'Unbound', instance_uuid: null, hostname: null, attach_handle_info: {} });

    // Rebind (Unbound -> BindStarted) then Nova deletes the instance.
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, INSTANCE), headers: NOVA })).status).toBe(202);
    await t.jobs.queue.idle();
    expect((await t.acc('DELETE', `/accelerator_requests?instance=${INSTANCE}`, { headers: NOVA })).status).toBe(204);
    expect((await t.acc('DELETE', `/accelerator_requests?instance=${INSTANCE}`, { headers: NOVA })).status).toBe(204);
    expect((await t.acc('GET', `/accelerator_requests/${arqs[0]!.uuid}`, { headers: NOVA })).status).toBe(404);
    // The handle is free again: a new ARQ binds to the first function.
    const again = (
      (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' }, headers: NOVA })).json()) as {
        arqs: Arq[];
      }
    ).arqs[0]!;
    await t.acc('PATCH', '/accelerator_requests', { body: bindBody(again.uuid, INSTANCE), headers: NOVA });
    await t.jobs.queue.idle();
    const rebound = (await (await t.acc('GET', `/accelerator_requests/${again.uuid}`, { headers: NOVA })).json()) as Arq;
    expect(rebound.attach_handle_info.function).toBe('0');
  });

  it('answers 423 for bind_state=resolved while a bind is still running', async () => {
    const arq = await bindBitstreamArq(t);
    expect(((await t.acc('GET', `/accelerator_requests/${arq.uuid}`).then((r) => r.json())) as Arq).state).toBe('BindStarted');
    expect((await t.acc('GET', `/accelerator_requests?instance=${INSTANCE}&bind_state=resolved`)).status).toBe(423);
  });

  it('fails a bind stuck past arq_binding_timeout and sends a failed event', async () => {
    const arq = await bindBitstreamArq(t);
    t.tick(299_000);
    expect(await sweepBindingTimeouts(t.deps)).toBe(0);
    t.tick(2_000);
    expect(await sweepBindingTimeouts(t.deps)).toBe(1);
    await t.jobs.queue.idle();
    expect(((await t.acc('GET', `/accelerator_requests/${arq.uuid}`).then((r) => r.json())) as Arq).state).toBe('BindFailed');
    expect(nova.calls.map((c) => c.events[0]!.status)).toEqual(['failed']);
    expect(await drainOutbox(t.deps)).toBe(0);
  });

  it('binds a bitstream ARQ once the agent reports the device programmed', async () => {
    const arq = await bindBitstreamArq(t);
    expect(nova.calls).toHaveLength(0);
    const { deployables } = (await (await t.acc('GET', '/deployables')).json()) as { deployables: { uuid: string; rp_uuid: string }[] };
    expect(deployables[0]!.rp_uuid).toBe(FPGA_RP);
    const programmed = await t.acc('PUT', `/deployables/${deployables[0]!.uuid}/programmed`, { body: { bitstream_id: 'bits-1' } });
    expect(programmed.status).toBe(200);
    await t.jobs.queue.idle();
    expect(((await t.acc('GET', `/accelerator_requests/${arq.uuid}`).then((r) => r.json())) as Arq).state).toBe('Bound');
    expect(nova.calls.map((c) => c.events[0]!.status)).toEqual(['completed']);
  });

  it('refuses a Nova that sends no service token (403), changing nothing', async () => {
    await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
    const arq = (
      (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' }, headers: USER })).json()) as {
        arqs: Arq[];
      }
    ).arqs[0]!;
    const bind = await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq.uuid, INSTANCE), headers: USER });
    expect(bind.status).toBe(403);
    expect(JSON.parse(((await bind.json()) as { error_message: string }).error_message).faultstring).toContain('service token');
    // A token without the service role in X-Service-Token changes nothing.
    const notService = { ...USER, 'x-service-token': 'u2', 'x-service-roles': 'member,admin' };
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq.uuid, INSTANCE), headers: notService })).status).toBe(403);
    await t.jobs.queue.idle();
    expect(((await t.acc('GET', `/accelerator_requests/${arq.uuid}`, { headers: USER }).then((r) => r.json())) as Arq).state).toBe(
      'Initial',
    );
    expect(nova.calls).toHaveLength(0);
  });
});

describe('Nova without service tokens, allowed by ARQ_ALLOW_BIND_WITHOUT_SERVICE_TOKEN', () => {
  it('binds, unbinds and deletes with the user token alone', async () => {
    const nova = await startFakeNova();
    const t = await makeCyborgApp({ NOVA_URL: nova.url, ARQ_ALLOW_BIND_WITHOUT_SERVICE_TOKEN: 'true' });
    try {
      await seedHost(t, 1);
      await t.acc('POST', '/device_profiles', { body: fpgaProfile() });
      const arq = (
        (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' }, headers: USER })).json()) as {
          arqs: Arq[];
        }
      ).arqs[0]!;
      expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq.uuid, INSTANCE), headers: USER })).status).toBe(202);
      await t.jobs.queue.idle();
      expect(((await t.acc('GET', `/accelerator_requests/${arq.uuid}`, { headers: USER }).then((r) => r.json())) as Arq).state).toBe(
        'Bound',
      );
      expect(nova.calls).toHaveLength(1);
      expect((await t.acc('DELETE', `/accelerator_requests?instance=${INSTANCE}`, { headers: USER })).status).toBe(204);
    } finally {
      t.close();
      await nova.close();
    }
  });
});
