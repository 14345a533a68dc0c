// Seed 003 end to end on a real Nova: the host agent (as Keystone user `cyborg`) adds
// compute1's FPGA as a child of its provider and registers the device; a device profile
// made with `openstack accelerator device profile create`; flavors with
// `accel:device_profile`; Nova's conductor creates and binds the ARQs through this service's
// Cyborg API and the server goes ACTIVE with FPGA:1 on the child provider. With a bitstream
// to program, binding waits for the programmed report, and the `accelerator-request-bound`
// event reaches nova-api and compute1. A profile no device satisfies ends in NoValidHost
// with nothing allocated; delete frees everything. Only placement-edge has the Cyborg API.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';
import { eventually, openstack, type Server } from './cloud-session.js';
import type { CloudContext } from './scenarios.js';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const STEP = { timeout: 600_000 };
const BITSTREAM = 'b1a2c3d4-0000-4000-8000-0000000000f1';

interface Arq {
  uuid: string;
  state: string;
  device_rp_uuid: string | null;
  instance_uuid: string | null;
  hostname: string | null;
}

export function acceleratorScenario(ctx: () => CloudContext): void {
  let compute1 = '';
  let fpga = '';
  let deployable = '';
  const flavors: Record<string, string> = {};

  const accel = async <T>(method: string, path: string, body?: unknown, token?: string): Promise<T> => {
    const { cloud } = ctx();
    const res = await fetch(`${cloud.placementUrl}/accelerator/v2${path}`, {
      method,
      headers: {
        'x-auth-token': token ?? (await cloud.keystone.adminToken()),
        'openstack-api-version': 'accelerator 2.0',
        'content-type': 'application/json',
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} /accelerator/v2${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : {}) as T;
  };
  const arqsOf = async (instance: string) => (await accel<{ arqs: Arq[] }>('GET', `/accelerator_requests?instance=${instance}`)).arqs;

  /** The server's allocations: its flavor on compute1 and one FPGA on the child. */
  const expectAccelerated = async (s: Server) => {
    const { placement } = ctx();
    expect(s.compute_host).toBe('compute1');
    expect(await placement.allocations(s.id)).toEqual({
      [compute1]: { VCPU: s.flavor.vcpus, MEMORY_MB: s.flavor.ram, DISK_GB: s.flavor.disk },
      [fpga]: { FPGA: 1 },
    });
    expect(await placement.usages(fpga)).toEqual({ FPGA: 1 });
    const arqs = await arqsOf(s.id);
    expect(arqs.map((a) => [a.state, a.device_rp_uuid, a.hostname])).toEqual([['Bound', fpga, 'compute1']]);
  };

  const deleteAndExpectFreed = async (id: string) => {
    const { sdk, placement } = ctx();
    await sdk.compute('delete_server', [id]);
    await sdk.waitDeleted(id);
    await eventually(async () => {
      expect(await placement.allocations(id)).toEqual({});
      expect(await arqsOf(id)).toEqual([]);
      expect(await placement.usages(fpga)).toEqual({ FPGA: 0 });
    }, 60_000);
  };

  it("the host agent, signed in as cyborg, adds compute1's FPGA as a child of the provider nova-compute made", STEP, async () => {
    const { cloud, placement } = ctx();
    compute1 = await placement.providerUuid('compute1');
    const config = join(cloud.dir, 'agent.yaml');
    writeFileSync(
      config,
      [
        `auth_url: ${cloud.keystone.url}`,
        'username: cyborg',
        `password: ${cloud.passwords.cyborg}`,
        'project_name: service',
        'user_domain_name: Default',
        'project_domain_name: Default',
        'region_name: RegionOne',
        '',
      ].join('\n'),
    );
    const agent = await run(
      process.execPath,
      [
        join(ROOT, 'agent', 'bin', 'placement-agent.js'),
        'once',
        '--config',
        config,
        '--root',
        join(ROOT, 'agent', 'test', 'fixtures', 'fpga'),
        '--host',
        'compute1',
      ],
      { cwd: ROOT, timeout: 300_000 },
    );
    // Its summary: compute1's provider is nova-compute's (one writer per provider), so the agent
    // wrote only the FPGA child.
    const summary = JSON.parse(agent.stdout.trim().split('\n').at(-1)!) as { computeNode: string };
    expect(summary.computeNode).toBe('external');
    const children = (await placement.providers()).filter((p) => p.parent_provider_uuid === compute1);
    expect(children).toHaveLength(1);
    fpga = children[0]!.uuid;
    expect((await placement.inventories(fpga)).FPGA).toMatchObject({ total: 1 });
    const devices = await accel<{ devices: { hostname: string; type: string }[] }>('GET', '/devices');
    expect(devices.devices.map((d) => [d.hostname, d.type])).toEqual([['compute1', 'FPGA']]);
    const deployables = await accel<{ deployables: { uuid: string; rp_uuid: string }[] }>('GET', '/deployables');
    deployable = deployables.deployables.find((d) => d.rp_uuid === fpga)!.uuid;
    // compute1's own provider is as nova-compute reported it: its inventory, and
    // COMPUTE_ACCELERATORS, which Nova asks for with a device profile.
    expect((await placement.inventories(compute1)).VCPU).toMatchObject({ total: 1000 });
    expect(await placement.traits(compute1)).toContain('COMPUTE_ACCELERATORS');
  });

  it('makes device profiles with `openstack accelerator device profile create` and flavors that name them', STEP, async () => {
    const { cloud, sdk, placement } = ctx();
    const trait = (await placement.traits(fpga)).find((t) => t.startsWith('CUSTOM_FPGA_'));
    expect(trait).toBeDefined();
    const profiles: [string, Record<string, string>][] = [
      ['fpga', { 'resources:FPGA': '1', [`trait:${trait}`]: 'required' }],
      ['fpga-bitstream', { 'resources:FPGA': '1', [`trait:${trait}`]: 'required', 'accel:bitstream_id': BITSTREAM }],
      ['fpga-nowhere', { 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_NO_SUCH_BOARD': 'required' }],
    ];
    for (const [name, group] of profiles) {
      await openstack(cloud, ['accelerator', 'device', 'profile', 'create', name, JSON.stringify([group]), '-f', 'json']);
      const flavor = await sdk.compute<{ id: string }>('create_flavor', [], { name: `a1.${name}`, vcpus: 1, ram: 128, disk: 1 });
      await sdk.compute('create_flavor_extra_specs', [flavor.id, { 'accel:device_profile': name }]);
      flavors[name] = flavor.id;
    }
    const listed = JSON.parse(await openstack(cloud, ['accelerator', 'device', 'profile', 'list', '-f', 'json'])) as { name: string }[];
    expect(listed.map((p) => p.name).sort()).toEqual(['fpga', 'fpga-bitstream', 'fpga-nowhere']);
  });

  it('boots a server with an FPGA: ACTIVE, FPGA:1 on the child provider, its ARQ bound there; delete frees it', STEP, async () => {
    const { cloud, sdk } = ctx();
    const created = await sdk.compute<Server>('create_server', [], {
      name: 'fpga-vm',
      flavorRef: flavors.fpga,
      imageRef: cloud.imageId,
      networks: 'none',
    });
    const s = await sdk.waitActive(created.id);
    await expectAccelerated(s);
    await deleteAndExpectFreed(s.id);
  });

  it('with a bitstream to program: bound once the FPGA reports it, the event reaches nova-api and compute1', STEP, async () => {
    const { cloud, sdk } = ctx();
    const created = await sdk.compute<Server>('create_server', [], {
      name: 'fpga-bitstream-vm',
      flavorRef: flavors['fpga-bitstream'],
      imageRef: cloud.imageId,
      networks: 'none',
    });
    const arq = await eventually(async () => {
      const arqs = await arqsOf(created.id);
      expect(arqs.map((a) => a.state)).toEqual(['BindStarted']);
      return arqs[0]!;
    }, 300_000);
    // The FPGA programmed (what the agent reports after programming), as user cyborg.
    const cyborg = await cloud.keystone.token('cyborg', cloud.passwords.cyborg, 'service');
    await accel('PUT', `/deployables/${deployable}/programmed`, { bitstream_id: BITSTREAM, function_id: null }, cyborg);
    const s = await sdk.waitActive(created.id);
    await expectAccelerated(s);
    await eventually(async () => {
      expect(cloud.logOf('nova-api', 400_000)).toContain(`Creating event accelerator-request-bound:${arq.uuid} for instance ${s.id}`);
      expect(cloud.logOf('compute1', 2_000_000)).toMatch(new RegExp(`accelerator-request-bound-${arq.uuid}`));
    }, 60_000);
    await deleteAndExpectFreed(s.id);
  });

  it('a profile no device satisfies ends in NoValidHost with nothing allocated and no ARQ', STEP, async () => {
    const { cloud, sdk, placement } = ctx();
    const created = await sdk.compute<Server>('create_server', [], {
      name: 'fpga-nowhere-vm',
      flavorRef: flavors['fpga-nowhere'],
      imageRef: cloud.imageId,
      networks: 'none',
    });
    const s = await sdk.waitFor(created.id, 'ERROR');
    expect(s.status).toBe('ERROR');
    expect(s.fault?.message).toMatch(/No valid host/);
    expect(await placement.allocations(s.id)).toEqual({});
    expect(await arqsOf(s.id)).toEqual([]);
    await sdk.compute('delete_server', [s.id]);
    await sdk.waitDeleted(s.id);
    for (const p of await placement.providers()) {
      expect(
        Object.values(await placement.usages(p.uuid)).every((n) => n === 0),
        p.name,
      ).toBe(true);
    }
  });
}
