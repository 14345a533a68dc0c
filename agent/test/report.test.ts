// Reporting into a live service started in-process (makeTestApp): the agent's
// client gets the app's fetch, so every request goes through the real routes.
import { fileURLToPath } from 'node:url';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../../test/helpers/test-app.js';
import { loadAgentConfig } from '../src/config.js';
import { discover } from '../src/discover/index.js';
import { main } from '../src/main.js';
import { ratioSettings } from '../src/ratios/index.js';
import { PlacementClient, type FetchLike } from '../src/report/client.js';
import { syncTree } from '../src/report/sync.js';
import { providerUuid } from '../src/discover/uuid.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const ENDPOINT = 'http://placement.test';
const AGG = '7a1c3e5f-2b4d-4c6e-8f0a-1b2c3d4e5f60';

let svc: TestApp;
beforeAll(async () => {
  svc = await makeTestApp();
});
afterAll(() => svc?.close());

interface Recorded {
  method: string;
  path: string;
}

function recordingFetch(log: Recorded[], before?: (req: Request) => Promise<void>): FetchLike {
  return async (req) => {
    const url = new URL(req.url);
    log.push({ method: req.method, path: url.pathname + url.search });
    if (before) await before(req);
    return svc.app.fetch(req);
  };
}

const writes = (log: Recorded[]) => log.filter((r) => r.method !== 'GET');
const silentLog = { info() {}, warn() {} };

async function json<T>(res: Response | Promise<Response>): Promise<T> {
  return (await res).json() as Promise<T>;
}

describe('reporting into a live placement service', () => {
  it('once: registers the 2-GPU host tree with inventories, traits, config extras and aggregates; a second run writes nothing', async () => {
    const configDir = mkdtempSync(join(tmpdir(), 'agent-pc-'));
    writeFileSync(
      join(configDir, 'host.yaml'),
      `meta: {schema_version: '1.0'}
providers:
  - identification: {uuid: $COMPUTE_NODE}
    inventories: {additional: [{CUSTOM_LLC: {total: 22, reserved: 2}}]}
    traits: {additional: [CUSTOM_P_STATE_ENABLED]}
`,
    );
    const log: Recorded[] = [];
    const out: string[] = [];
    const err: string[] = [];
    const run = () =>
      main(['once', '--endpoint', ENDPOINT, '--token', 'admin', '--root', fixture('two-nvidia')], {
        out: (t) => out.push(t),
        err: (t) => err.push(t),
        fetch: recordingFetch(log),
        env: {
          PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: configDir,
          PLACEMENT_AGENT_AGGREGATES: AGG,
          PLACEMENT_AGENT_INSTANCES_PATH: '/tmp',
        },
      });
    try {
      expect(await run(), err.join('\n')).toBe(0);
      const list = await json<{ resource_providers: { name: string; uuid: string; parent_provider_uuid: string | null }[] }>(
        svc.call('GET', '/resource_providers'),
      );
      const byName = new Map(list.resource_providers.map((p) => [p.name, p]));
      const root = byName.get('gpu-host-2')!;
      expect(root.uuid).toBe(providerUuid('gpu-host-2'));
      expect(byName.get('gpu-host-2_pci_0000_3b_00_0')?.parent_provider_uuid).toBe(root.uuid);
      expect(byName.get('gpu-host-2_pci_0000_86_00_0')?.parent_provider_uuid).toBe(root.uuid);

      const inv = await json<{ inventories: Record<string, { total: number; reserved: number; allocation_ratio: number }> }>(
        svc.call('GET', `/resource_providers/${root.uuid}/inventories`),
      );
      expect(inv.inventories.VCPU).toMatchObject({ total: 8, reserved: 0, allocation_ratio: 16 });
      expect(inv.inventories.MEMORY_MB).toMatchObject({ total: 64000, reserved: 512, allocation_ratio: 1.5 });
      expect(inv.inventories.DISK_GB.allocation_ratio).toBe(1);
      expect(inv.inventories.CUSTOM_LLC).toMatchObject({ total: 22, reserved: 2 });
      const gpu = byName.get('gpu-host-2_pci_0000_86_00_0')!;
      const gpuInv = await json<{ inventories: Record<string, { total: number }> }>(
        svc.call('GET', `/resource_providers/${gpu.uuid}/inventories`),
      );
      expect(Object.fromEntries(Object.entries(gpuInv.inventories).map(([rc, i]) => [rc, i.total]))).toEqual({ PGPU: 1, VGPU: 4 });

      const traits = await json<{ traits: string[] }>(svc.call('GET', `/resource_providers/${root.uuid}/traits`));
      expect(traits.traits).toEqual(
        expect.arrayContaining(['COMPUTE_NODE', 'HW_ARCH_X86_64', 'HW_CPU_X86_AVX2', 'CUSTOM_P_STATE_ENABLED']),
      );
      const gpuTraits = await json<{ traits: string[] }>(svc.call('GET', `/resource_providers/${gpu.uuid}/traits`));
      expect(gpuTraits.traits).toEqual(expect.arrayContaining(['CUSTOM_GPU_NVIDIA', 'CUSTOM_GPU_MODEL_NVIDIA_A100_PCIE_40GB']));
      const aggs = await json<{ aggregates: string[] }>(svc.call('GET', `/resource_providers/${root.uuid}/aggregates`));
      expect(aggs.aggregates).toEqual([AGG]);

      log.length = 0;
      expect(await run()).toBe(0);
      expect(writes(log)).toEqual([]);
    } finally {
      rmSync(configDir, { recursive: true, force: true });
    }
  });

  it('allocation ratios: operator changes through the API survive a restart; an override replaces them', async () => {
    const found = await discover({ root: fixture('cpu-only'), statfs: () => ({ bsize: 1024 ** 3, blocks: 50 }) });
    const client = new PlacementClient({ endpoint: ENDPOINT, token: 'admin', fetch: (r) => svc.app.fetch(r) });
    const sync = (env: Record<string, string>) =>
      syncTree(client, found.providers, { ratios: ratioSettings(loadAgentConfig({ env })), log: silentLog });
    const uuid = providerUuid('cpu-only-host');
    const ratios = async () => {
      const body = await json<{ inventories: Record<string, { allocation_ratio: number }> }>(
        svc.call('GET', `/resource_providers/${uuid}/inventories`),
      );
      return Object.fromEntries(Object.entries(body.inventories).map(([rc, i]) => [rc, i.allocation_ratio]));
    };

    await sync({}); // first start
    expect(await ratios()).toEqual({ VCPU: 16, MEMORY_MB: 1.5, DISK_GB: 1 });

    // The operator sets VCPU to 4.0 through the API (amending the record); the agent restarts.
    const { resource_provider_generation: generation, ...vcpu } = await json<Record<string, number>>(
      svc.call('GET', `/resource_providers/${uuid}/inventories/VCPU`),
    );
    const put = await svc.call('PUT', `/resource_providers/${uuid}/inventories/VCPU`, {
      body: { ...vcpu, resource_provider_generation: generation, allocation_ratio: 4.0 },
    });
    expect(put.status).toBe(200);
    const summary = await sync({ PLACEMENT_AGENT_INITIAL_CPU_ALLOCATION_RATIO: '8' });
    expect(summary.inventoriesUpdated).toEqual([]);
    expect(await ratios()).toEqual({ VCPU: 4, MEMORY_MB: 1.5, DISK_GB: 1 });

    // An override wins over what the operator set.
    await sync({ PLACEMENT_AGENT_CPU_ALLOCATION_RATIO: '2.0', PLACEMENT_AGENT_RAM_ALLOCATION_RATIO: '1.0' });
    expect(await ratios()).toEqual({ VCPU: 2, MEMORY_MB: 1, DISK_GB: 1 });

    // A stored 0.0 (the spec's bad legacy value) counts as unset: initial_* replaces it.
    const { resource_provider_generation: gen2, ...vcpu2 } = await json<Record<string, number>>(
      svc.call('GET', `/resource_providers/${uuid}/inventories/VCPU`),
    );
    const zero = await svc.call('PUT', `/resource_providers/${uuid}/inventories/VCPU`, {
      body: { ...vcpu2, resource_provider_generation: gen2, allocation_ratio: 0.0 },
    });
    expect(zero.status).toBe(200);
    await sync({});
    expect(await ratios()).toEqual({ VCPU: 16, MEMORY_MB: 1, DISK_GB: 1 });
  });

  it('a forced generation conflict is retried by re-reading the provider', async () => {
    const found = await discover({ root: fixture('fpga'), statfs: () => ({ bsize: 1024 ** 3, blocks: 20 }) });
    const log: Recorded[] = [];
    let interfered = false;
    // Just before the agent's first inventory write, someone else changes the
    // provider (adds a trait), bumping its generation under the agent's feet.
    const fetchWithRace = recordingFetch(log, async (req) => {
      const url = new URL(req.url);
      if (interfered || req.method !== 'PUT' || !/\/resource_providers\/[^/]+\/inventories$/.test(url.pathname)) return;
      interfered = true;
      const uuid = url.pathname.split('/')[2];
      const traits = await json<{ resource_provider_generation: number; traits: string[] }>(
        svc.call('GET', `/resource_providers/${uuid}/traits`),
      );
      await svc.call('PUT', '/traits/CUSTOM_OPERATOR_MARK');
      const res = await svc.call('PUT', `/resource_providers/${uuid}/traits`, {
        body: { resource_provider_generation: traits.resource_provider_generation, traits: [...traits.traits, 'CUSTOM_OPERATOR_MARK'] },
      });
      expect(res.status).toBe(200);
    });
    const client = new PlacementClient({ endpoint: ENDPOINT, token: 'admin', fetch: fetchWithRace });
    const summary = await syncTree(client, found.providers, { ratios: ratioSettings(loadAgentConfig({ env: {} })), log: silentLog });
    expect(interfered).toBe(true);
    expect(summary.conflictsRetried).toBe(1);
    expect(summary.inventoriesUpdated).toEqual(['fpga-host', 'fpga-host_pci_0000_5e_00_0']);
    const inventoryPuts = log.filter((r) => r.method === 'PUT' && r.path.endsWith('/inventories'));
    expect(inventoryPuts).toHaveLength(3); // root twice (conflict, then retry), the FPGA once
    const uuid = providerUuid('fpga-host');
    const traits = await json<{ traits: string[] }>(svc.call('GET', `/resource_providers/${uuid}/traits`));
    // The operator's trait survives the agent's trait update.
    expect(traits.traits).toEqual(expect.arrayContaining(['CUSTOM_OPERATOR_MARK', 'COMPUTE_NODE']));
  });
});

describe('service down', () => {
  it('once backs off exponentially while placement is unreachable, then reports', async () => {
    let failuresLeft = 2;
    const sleeps: number[] = [];
    const requests: string[] = [];
    const flaky: FetchLike = async (req) => {
      requests.push(req.method);
      if (failuresLeft > 0) {
        failuresLeft--;
        throw new TypeError('fetch failed: connect ECONNREFUSED 127.0.0.1:8778');
      }
      return new Response(JSON.stringify({ errors: [{ status: 503, title: 'Service Unavailable' }] }), { status: 503 });
    };
    const err: string[] = [];
    const code = await main(['once', '--endpoint', ENDPOINT, '--root', fixture('cpu-only')], {
      out: () => {},
      err: (t) => err.push(t),
      fetch: flaky,
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      env: { PLACEMENT_AGENT_MAX_ATTEMPTS: '4', PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: '/nonexistent-provider-config' },
    });
    expect(code).toBe(3);
    expect(sleeps).toEqual([1000, 2000, 4000]);
    expect(err.filter((l) => l.includes('placement unavailable'))).toHaveLength(4);
  });

  it('run stops gracefully when signalled', async () => {
    const stop = new AbortController();
    let calls = 0;
    const down: FetchLike = async () => {
      calls++;
      if (calls === 3) stop.abort();
      throw new TypeError('fetch failed');
    };
    const code = await main(['run', '--endpoint', ENDPOINT, '--root', fixture('cpu-only'), '--interval', '0.01'], {
      out: () => {},
      err: () => {},
      fetch: down,
      signal: stop.signal,
      env: { PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: '/nonexistent-provider-config' },
    });
    expect(code).toBe(0);
    expect(calls).toBe(3);
  });

  it('refuses to start on a bad provider config file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agent-bad-'));
    writeFileSync(join(dir, 'x.yaml'), "meta: {schema_version: '9.0'}\n");
    const err: string[] = [];
    try {
      const code = await main(['once', '--endpoint', ENDPOINT, '--root', fixture('cpu-only')], {
        out: () => {},
        err: (t) => err.push(t),
        fetch: () => {
          throw new Error('must not be called');
        },
        env: { PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: dir },
      });
      expect(code).toBe(1);
      expect(err.join('\n')).toMatch(/Unsupported schema major version: 9/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
