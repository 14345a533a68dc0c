// GPU health taints: nvidia-smi -q -x of the real H100 (healthy) and an
// unhealthy variant (3 uncorrected DRAM ECC errors, 2 double-bit retired
// pages); the agent reporting into a live service taints the GPU, keeps an
// operator's taint, and removes its own once the GPU is healthy again.
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../../test/helpers/test-app.js';
import { parseNvidiaSmiXml, unhealthyReason } from '../src/discover/gpu-health.js';
import { main } from '../src/main.js';
import { AGENT_TAINT_KEY } from '../src/report/taints.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const LIMITS = { uncorrectedEcc: 0, retiredPages: 16 };

describe('nvidia-smi -q -x health', () => {
  it('reads the real H100 as healthy and the variant as unhealthy, by threshold', () => {
    const [healthy] = parseNvidiaSmiXml(readFileSync(join(fixture('h100-host'), 'nvidia-smi-q.xml'), 'utf8'));
    expect(healthy).toEqual({ pciAddress: '0000:00:06.0', uncorrectedEcc: 0, retiredPages: 0, remapPending: false, remapFailed: false });
    expect(unhealthyReason(healthy!, LIMITS)).toBeNull();
    const [sick] = parseNvidiaSmiXml(readFileSync(join(fixture('h100-host-unhealthy'), 'nvidia-smi-q.xml'), 'utf8'));
    expect(sick).toEqual({ pciAddress: '0000:00:06.0', uncorrectedEcc: 3, retiredPages: 2, remapPending: false, remapFailed: false });
    expect(unhealthyReason(sick!, LIMITS)).toBe('3 uncorrected ECC errors (threshold 0)');
    expect(unhealthyReason(sick!, { uncorrectedEcc: 5, retiredPages: 1 })).toBe('2 retired pages (threshold 1)');
    expect(unhealthyReason(sick!, { uncorrectedEcc: 3, retiredPages: 2 })).toBeNull();
  });

  it('reads the real H200 (captured on a lent machine) as healthy, and a pending or failed row remap as unhealthy whatever the thresholds', () => {
    const xml = readFileSync(join(fixture('h200-real-run'), 'nvidia-smi-q.xml'), 'utf8');
    const [h200] = parseNvidiaSmiXml(xml);
    expect(h200).toEqual({ pciAddress: '0000:00:06.0', uncorrectedEcc: 0, retiredPages: 0, remapPending: false, remapFailed: false });
    expect(unhealthyReason(h200!, LIMITS)).toBeNull();
    const generous = { uncorrectedEcc: 1000, retiredPages: 1000 };
    const [pending] = parseNvidiaSmiXml(xml.replace(/<remapped_row_pending>No</, '<remapped_row_pending>Yes<'));
    expect(unhealthyReason(pending!, generous)).toBe('a row remap is pending (reset the GPU to apply it)');
    const [failed] = parseNvidiaSmiXml(xml.replace(/<remapped_row_failure>No</, '<remapped_row_failure>Yes<'));
    expect(unhealthyReason(failed!, generous)).toBe('row remapping failed (the GPU needs service)');
  });
});

describe('the agent taints an unhealthy GPU and clears its own taint when healthy', () => {
  let svc: TestApp;
  let root: string;
  beforeAll(async () => {
    svc = await makeTestApp();
    root = mkdtempSync(join(tmpdir(), 'agent-gpu-'));
  });
  afterAll(() => {
    svc.close();
    rmSync(root, { recursive: true, force: true });
  });

  const once = async (tree: string) => {
    // One root whose content changes between runs, as a host's does.
    rmSync(root, { recursive: true, force: true });
    cpSync(fixture(tree), root, { recursive: true });
    const err: string[] = [];
    const code = await main(['once', '--endpoint', 'http://placement.test', '--token', 'admin', '--root', root, '--host', 'h100-0'], {
      out: () => {},
      err: (t) => err.push(t),
      fetch: (req) => svc.app.fetch(req),
      env: { PLACEMENT_AGENT_INSTANCES_PATH: '/tmp', PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: join(root, 'none') },
    });
    expect(code, err.join('\n')).toBe(0);
  };
  const gpuProvider = async () => {
    const { resource_providers } = (await (await svc.call('GET', '/resource_providers')).json()) as {
      resource_providers: { uuid: string; name: string; parent_provider_uuid: string | null }[];
    };
    return resource_providers.find((p) => p.parent_provider_uuid !== null)!;
  };
  const taintsOf = async (uuid: string) =>
    (await (await svc.call('GET', `/ext/resource_providers/${uuid}/taints`)).json()) as {
      resource_provider_generation: number;
      taints: { key: string; reason: string }[];
    };

  it('taints, keeps an operator taint, clears its own', async () => {
    await once('h100-host-unhealthy');
    const gpu = await gpuProvider();
    const tainted = await taintsOf(gpu.uuid);
    expect(tainted.taints).toEqual([
      expect.objectContaining({ key: AGENT_TAINT_KEY, effect: 'NoSchedule', reason: expect.stringContaining('3 uncorrected ECC') }),
    ]);
    // Out of candidates for every client.
    const res = await svc.call('GET', '/allocation_candidates?resources=VGPU:1');
    expect(((await res.json()) as { allocation_requests: unknown[] }).allocation_requests).toEqual([]);
    // Unchanged health: no write.
    const generation = tainted.resource_provider_generation;
    await once('h100-host-unhealthy');
    expect((await taintsOf(gpu.uuid)).resource_provider_generation).toBe(generation);
    // An operator's own taint stays when the GPU heals.
    const operator = { key: 'maintenance', value: '', effect: 'NoSchedule', reason: 'cabling' };
    const put = await svc.call('PUT', `/ext/resource_providers/${gpu.uuid}/taints`, {
      body: {
        resource_provider_generation: generation,
        taints: [...tainted.taints.map(({ key, reason }) => ({ key, reason, effect: 'NoSchedule' })), operator],
      },
    });
    expect(put.status).toBe(200);
    await once('h100-host');
    expect((await taintsOf(gpu.uuid)).taints.map((t) => t.key)).toEqual(['maintenance']);
  });
});
