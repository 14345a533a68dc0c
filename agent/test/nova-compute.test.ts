// One writer per provider: beside nova-compute the agent
// never writes the compute node provider nova-compute made; it only keeps the
// accelerator children it made. The tree is first created through this
// service's API as nova-compute's report client creates it (its microversions:
// 1.20 create, 1.26 inventories, 1.6 traits; the fake driver's 1000 VCPU /
// 800000 MEMORY_MB / 600000 DISK_GB and its COMPUTE_* capability traits), then
// `placement-agent once` runs twice against the live service (makeTestApp).
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../../test/helpers/test-app.js';
import { providerUuid } from '../src/discover/uuid.js';
import { main } from '../src/main.js';
import type { FetchLike } from '../src/report/client.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const ENDPOINT = 'http://placement.test';
const AGG = '7a1c3e5f-2b4d-4c6e-8f0a-1b2c3d4e5f60';

/** What nova-compute's resource tracker reports for a fake.FakeDriver host (nova/virt/fake.py). */
const NOVA_INVENTORY = {
  VCPU: { total: 1000, reserved: 0, min_unit: 1, max_unit: 1000, step_size: 1, allocation_ratio: 16.0 },
  MEMORY_MB: { total: 800000, reserved: 512, min_unit: 1, max_unit: 800000, step_size: 1, allocation_ratio: 1.5 },
  DISK_GB: { total: 600000, reserved: 0, min_unit: 1, max_unit: 600000, step_size: 1, allocation_ratio: 1.0 },
};
/** The fake driver's capability traits (nova/virt/driver.py CAPABILITY_TRAITS_MAP) and COMPUTE_NODE. */
const NOVA_TRAITS = [
  'COMPUTE_ACCELERATORS',
  'COMPUTE_DEVICE_TAGGING',
  'COMPUTE_IMAGE_TYPE_RAW',
  'COMPUTE_NET_ATTACH_INTERFACE',
  'COMPUTE_NET_ATTACH_INTERFACE_WITH_TAG',
  'COMPUTE_NODE',
  'COMPUTE_REMOTE_MANAGED_PORTS',
  'COMPUTE_TRUSTED_CERTS',
  'COMPUTE_VOLUME_ATTACH_WITH_TAG',
  'COMPUTE_VOLUME_EXTEND',
  'COMPUTE_VOLUME_MULTI_ATTACH',
];

let svc: TestApp;
beforeAll(async () => {
  svc = await makeTestApp();
});
afterAll(() => svc?.close());

async function ok<T>(res: Promise<Response>): Promise<T> {
  const r = await res;
  if (r.status >= 300) throw new Error(`${r.status} ${await r.text()}`);
  return (r.status === 204 ? {} : await r.json()) as T;
}

/** A compute node provider as nova-compute creates it: its own uuid, its inventory and traits. */
async function novaComputeNode(host: string): Promise<string> {
  const uuid = crypto.randomUUID();
  await ok(svc.call('POST', '/resource_providers', { version: '1.20', body: { uuid, name: host } }));
  await ok(
    svc.call('PUT', `/resource_providers/${uuid}/inventories`, {
      version: '1.26',
      body: { resource_provider_generation: 0, inventories: NOVA_INVENTORY },
    }),
  );
  await ok(
    svc.call('PUT', `/resource_providers/${uuid}/traits`, {
      version: '1.6',
      body: { resource_provider_generation: 1, traits: NOVA_TRAITS },
    }),
  );
  return uuid;
}

interface Snapshot {
  generation: number;
  inventories: Record<string, Record<string, number>>;
  traits: string[];
  aggregates: string[];
}

async function snapshot(uuid: string): Promise<Snapshot> {
  const inv = await ok<{ resource_provider_generation: number; inventories: Snapshot['inventories'] }>(
    svc.call('GET', `/resource_providers/${uuid}/inventories`),
  );
  const traits = await ok<{ traits: string[] }>(svc.call('GET', `/resource_providers/${uuid}/traits`));
  const aggs = await ok<{ aggregates: string[] }>(svc.call('GET', `/resource_providers/${uuid}/aggregates`));
  return {
    generation: inv.resource_provider_generation,
    inventories: inv.inventories,
    traits: traits.traits.sort(),
    aggregates: aggs.aggregates,
  };
}

async function tree(rootUuid: string) {
  const list = await ok<{ resource_providers: { uuid: string; name: string; generation: number; parent_provider_uuid: string | null }[] }>(
    svc.call('GET', `/resource_providers?in_tree=${rootUuid}`),
  );
  return list.resource_providers;
}

function agent(args: string[], env: Record<string, string> = {}, command: 'once' | 'accelerators' = 'once') {
  const requests: { method: string; path: string }[] = [];
  const out: string[] = [];
  const err: string[] = [];
  const fetchLike: FetchLike = async (req) => {
    const url = new URL(req.url);
    requests.push({ method: req.method, path: url.pathname });
    return svc.app.fetch(req);
  };
  const run = () =>
    main([command, '--endpoint', ENDPOINT, '--token', 'admin', ...args], {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      fetch: fetchLike,
      env: { PLACEMENT_AGENT_INSTANCES_PATH: '/tmp', PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: '/nonexistent', ...env },
    });
  return { run, requests, out, err };
}

describe('the agent beside nova-compute', () => {
  it.each([
    ['fpga', 'nova-fpga-1', ['nova-fpga-1_pci_0000_5e_00_0'], { FPGA: 1 }],
    ['two-nvidia', 'nova-gpu-1', ['nova-gpu-1_pci_0000_3b_00_0', 'nova-gpu-1_pci_0000_86_00_0'], { PGPU: 1 }],
  ] as const)('%s host: leaves the compute node as nova-compute made it, run twice; makes and keeps its children', async (root, host, children, inventory) => {
    const nodeUuid = await novaComputeNode(host);
    const before = await snapshot(nodeUuid);
    const { run, requests, out, err } = agent(['--root', fixture(root), '--host', host], { PLACEMENT_AGENT_AGGREGATES: AGG });

    expect(await run(), err.join('\n')).toBe(0);
    const first = JSON.parse(out[0]!) as { computeNode: string; created: string[]; inventoriesUpdated: string[]; traitsUpdated: string[] };
    expect(first.computeNode).toBe('external');
    expect(first.created).toEqual(children);
    expect(first.inventoriesUpdated).toEqual(children);
    expect(first.traitsUpdated).toEqual(children);
    // Not one write to nova-compute's provider; its inventory, traits and generation are as it left them.
    expect(requests.filter((r) => r.method !== 'GET' && r.path.startsWith(`/resource_providers/${nodeUuid}`))).toEqual([]);
    expect(await snapshot(nodeUuid)).toEqual(before);
    expect(before.inventories.VCPU!.total).toBe(1000);
    expect(err.join('\n')).toMatch(/aggregates not written: nova-compute owns/);

    const made = (await tree(nodeUuid)).filter((p) => p.uuid !== nodeUuid);
    expect(made.map((p) => p.name).sort()).toEqual(children);
    for (const child of made) {
      expect(child).toMatchObject({ uuid: providerUuid(child.name), parent_provider_uuid: nodeUuid });
      const { inventories, traits } = await snapshot(child.uuid);
      expect(Object.fromEntries(Object.entries(inventories).map(([rc, i]) => [rc, i.total]))).toMatchObject(inventory);
      expect(traits.some((t) => t.startsWith('CUSTOM_'))).toBe(true);
    }
    // The devices are reported to the accelerator API on the children the agent made.
    const devices = await ok<{ devices: { hostname: string }[] }>(
      svc.call('GET', '/accelerator/v2/devices', { headers: { 'openstack-api-version': 'accelerator 2.0' } }),
    );
    expect(devices.devices.filter((d) => d.hostname === host)).toHaveLength(children.length);

    // The second run (the next period) writes nothing at all; the children stay as they were.
    requests.length = 0;
    out.length = 0;
    expect(await run(), err.join('\n')).toBe(0);
    expect(requests.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(JSON.parse(out[0]!)).toMatchObject({
      computeNode: 'external',
      created: [],
      inventoriesUpdated: [],
      traitsUpdated: [],
      deleted: [],
    });
    expect(await snapshot(nodeUuid)).toEqual(before);
    expect((await tree(nodeUuid)).filter((p) => p.uuid !== nodeUuid)).toEqual(made);
  });

  it('leaves a device provider nova-compute made (its VGPU provider of the same name) alone, and does not report it', async () => {
    const host = 'nova-gpu-2';
    const nodeUuid = await novaComputeNode(host);
    // libvirt's pGPU provider: named `<node>_pci_<address>` as the agent names it, with Nova's uuid.
    const novaGpu = crypto.randomUUID();
    await ok(
      svc.call('POST', '/resource_providers', {
        version: '1.20',
        body: { uuid: novaGpu, name: `${host}_pci_0000_86_00_0`, parent_provider_uuid: nodeUuid },
      }),
    );
    await ok(
      svc.call('PUT', `/resource_providers/${novaGpu}/inventories`, {
        version: '1.26',
        body: { resource_provider_generation: 0, inventories: { VGPU: { total: 16, max_unit: 16 } } },
      }),
    );
    const novaGpuBefore = await snapshot(novaGpu);
    const { run, out, err } = agent(['--root', fixture('two-nvidia'), '--host', host]);
    expect(await run(), err.join('\n')).toBe(0);
    expect(JSON.parse(out[0]!)).toMatchObject({
      computeNode: 'external',
      created: [`${host}_pci_0000_3b_00_0`],
      skipped: [`${host}_pci_0000_86_00_0`],
    });
    expect(await snapshot(novaGpu)).toEqual(novaGpuBefore);
    const devices = await ok<{ devices: { hostname: string; std_board_info: string }[] }>(
      svc.call('GET', '/accelerator/v2/devices', { headers: { 'openstack-api-version': 'accelerator 2.0' } }),
    );
    expect(devices.devices.filter((d) => d.hostname === host)).toHaveLength(1);
    // `placement-agent accelerators` alone reports the same single device.
    const alone = agent(['--root', fixture('two-nvidia'), '--host', host], {}, 'accelerators');
    expect(await alone.run(), alone.err.join('\n')).toBe(0);
    expect(JSON.parse(alone.out[0]!)).toMatchObject({ host, devices: 1 });
  });

  it('compute_node: external waits for nova-compute: no provider is created while there is none', async () => {
    const { run, requests, err } = agent(['--root', fixture('fpga'), '--host', 'not-yet-nova'], {
      PLACEMENT_AGENT_COMPUTE_NODE: 'external',
    });
    expect(await run()).toBe(1);
    expect(err.join('\n')).toMatch(
      /no compute node provider named not-yet-nova in Placement: with compute_node external the agent waits for nova-compute/,
    );
    expect(requests.filter((r) => r.method !== 'GET')).toEqual([]);
    const list = await ok<{ resource_providers: unknown[] }>(svc.call('GET', '/resource_providers?name=not-yet-nova'));
    expect(list.resource_providers).toEqual([]);
  });

  it('compute_node: external also holds for a compute node without Nova traits yet', async () => {
    const uuid = crypto.randomUUID();
    await ok(svc.call('POST', '/resource_providers', { version: '1.20', body: { uuid, name: 'nova-bare' } }));
    const before = await snapshot(uuid);
    const { run, out, err } = agent(['--root', fixture('fpga'), '--host', 'nova-bare'], { PLACEMENT_AGENT_COMPUTE_NODE: 'external' });
    expect(await run(), err.join('\n')).toBe(0);
    expect(JSON.parse(out[0]!)).toMatchObject({ computeNode: 'external', created: ['nova-bare_pci_0000_5e_00_0'] });
    expect(await snapshot(uuid)).toEqual(before);
  });

  it('without Nova it keeps writing the compute node: its own provider, or an empty one an operator made', async () => {
    // The agent's own (v5 uuid) compute node, even with a COMPUTE_ trait an operator added.
    const own = agent(['--root', fixture('fpga'), '--host', 'agent-only']);
    expect(await own.run(), own.err.join('\n')).toBe(0);
    expect(JSON.parse(own.out[0]!)).toMatchObject({ computeNode: 'agent', created: ['agent-only', 'agent-only_pci_0000_5e_00_0'] });
    const ownUuid = providerUuid('agent-only');
    const mine = await snapshot(ownUuid);
    expect(mine.inventories.VCPU!.total).toBe(2);
    await ok(
      svc.call('PUT', `/resource_providers/${ownUuid}/traits`, {
        body: { resource_provider_generation: mine.generation, traits: [...mine.traits, 'COMPUTE_STATUS_DISABLED'] },
      }),
    );
    own.out.length = 0;
    expect(await own.run(), own.err.join('\n')).toBe(0);
    expect(JSON.parse(own.out[0]!)).toMatchObject({ computeNode: 'agent' });

    // An empty provider an operator made for the agent (another uuid, no Nova traits): the agent fills it.
    const made = crypto.randomUUID();
    await ok(svc.call('POST', '/resource_providers', { body: { uuid: made, name: 'operator-made' } }));
    const op = agent(['--root', fixture('fpga'), '--host', 'operator-made']);
    expect(await op.run(), op.err.join('\n')).toBe(0);
    expect(JSON.parse(op.out[0]!)).toMatchObject({
      computeNode: 'agent',
      inventoriesUpdated: ['operator-made', 'operator-made_pci_0000_5e_00_0'],
    });
    expect((await snapshot(made)).inventories.VCPU!.total).toBe(2);

    // compute_node: agent writes even nova-compute's provider (the operator's explicit choice).
    const nodeUuid = await novaComputeNode('forced-agent');
    const forced = agent(['--root', fixture('fpga'), '--host', 'forced-agent'], { PLACEMENT_AGENT_COMPUTE_NODE: 'agent' });
    expect(await forced.run(), forced.err.join('\n')).toBe(0);
    expect(JSON.parse(forced.out[0]!)).toMatchObject({ computeNode: 'agent' });
    expect((await snapshot(nodeUuid)).inventories.VCPU!.total).toBe(2);
  });

  it('refuses a compute_node value it does not know, naming the key', async () => {
    const { run, err } = agent(['--root', fixture('fpga')], { PLACEMENT_AGENT_COMPUTE_NODE: 'nova' });
    expect(await run()).toBe(2);
    expect(err.join('\n')).toMatch(/^invalid agent configuration: compute_node: /);
  });
});
