// MIG (docs/extensions-gpu.md): an H100 in MIG mode is discovered as one provider with an
// inventory per GPU instance profile and shared counters (fixture
// h100-mig/: the real H100 capture of ../shared/fixtures/h100-host with MIG
// mode on, profiles and placements from NVIDIA's published H100 80GB table),
// and reported into a live service where any mix of profiles that fits can
// be claimed and nothing more. The driver's own output was checked on a lent
// H200 (fixture h200-real-run/, captured 2026-11-28): its profiles parse the same way.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../../test/helpers/test-app.js';
import { loadAgentConfig } from '../src/config.js';
import { discover } from '../src/discover/index.js';
import { migLayout, migResourceClass, parseGpuInstanceProfiles, parseMigModes, parseProfilePlacements } from '../src/discover/mig.js';
import { providerUuid } from '../src/discover/uuid.js';
import { ratioSettings } from '../src/ratios/index.js';
import { PlacementClient } from '../src/report/client.js';
import { syncTree } from '../src/report/sync.js';
import { readFileSync } from 'node:fs';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const statfs = () => ({ bsize: 1024 ** 3, blocks: 100 });
const ratios = ratioSettings(loadAgentConfig({ env: {} }));
const silentLog = { info() {}, warn() {} };

/** NVIDIA's H100 80GB table: profile -> [instances, compute slices, memory slices]. */
const TABLE: Record<string, [number, number, number]> = {
  '1g.10gb': [7, 1, 1],
  '1g.10gb+me': [1, 1, 1],
  '1g.20gb': [4, 1, 2],
  '2g.20gb': [3, 2, 2],
  '3g.40gb': [2, 3, 4],
  '4g.40gb': [1, 4, 4],
  '7g.80gb': [1, 7, 8],
};

describe('MIG discovery', () => {
  it("parses a real H200's nvidia-smi mig -lgip / -lgipp (driver 580.159.04) into its profiles, inventories and slice counters", () => {
    const real = (file: string) => readFileSync(fixture(`h200-real-run/${file}`), 'utf8');
    const profiles = parseGpuInstanceProfiles(real('nvidia-smi-mig-lgip.txt')).get(0)!;
    expect(profiles.map((p) => [p.name, p.id, p.instances])).toEqual([
      ['1g.18gb', 19, 7],
      ['1g.18gb+me', 20, 1],
      ['1g.35gb', 15, 4],
      ['2g.35gb', 14, 3],
      ['3g.71gb', 9, 2],
      ['4g.71gb', 5, 1],
      ['7g.141gb', 0, 1],
    ]);
    const layout = migLayout(profiles, parseProfilePlacements(real('nvidia-smi-mig-lgipp.txt')).get(0)!)!;
    expect(Object.fromEntries(Object.entries(layout.inventories).map(([rc, inv]) => [rc, inv.total]))).toEqual({
      CUSTOM_MIG_1G_18GB: 7,
      CUSTOM_MIG_1G_18GB_ME: 1,
      CUSTOM_MIG_1G_35GB: 4,
      CUSTOM_MIG_2G_35GB: 3,
      CUSTOM_MIG_3G_71GB: 2,
      CUSTOM_MIG_4G_71GB: 1,
      CUSTOM_MIG_7G_141GB: 1,
    });
    expect(layout.counters).toEqual({ compute_slices: 7, memory_slices: 8 });
    expect(layout.consumption.CUSTOM_MIG_3G_71GB).toEqual({ compute_slices: 3, memory_slices: 4 });
    // That machine had MIG mode off (nobody may switch it): its GPU is reported whole, as the real run did.
    expect([...parseMigModes(real('nvidia-smi-mig-mode.csv')).entries()]).toEqual([['0000:00:06.0', { index: 0, enabled: false }]]);
    const run = JSON.parse(real('discover.json')) as { providers: { inventories: Record<string, { total: number }> }[] };
    expect(run.providers.flatMap((p) => Object.keys(p.inventories)).filter((rc) => rc.startsWith('CUSTOM_MIG_'))).toEqual([]);
    expect(run.providers.some((p) => p.inventories.PGPU?.total === 1)).toBe(true);
  });

  it('parses nvidia-smi mig -lgip and -lgipp as the driver prints them', () => {
    const profiles = parseGpuInstanceProfiles(readFileSync(fixture('h100-mig/nvidia-smi-mig-lgip.txt'), 'utf8')).get(0)!;
    expect(profiles.map((p) => [p.name, p.id, p.instances])).toEqual([
      ['1g.10gb', 19, 7],
      ['1g.10gb+me', 20, 1],
      ['1g.20gb', 15, 4],
      ['2g.20gb', 14, 3],
      ['3g.40gb', 9, 2],
      ['4g.40gb', 5, 1],
      ['7g.80gb', 0, 1],
    ]);
    const placements = parseProfilePlacements(readFileSync(fixture('h100-mig/nvidia-smi-mig-lgipp.txt'), 'utf8')).get(0)!;
    expect(placements.get(9)).toEqual({ slices: 4, end: 8 });
    expect(placements.get(0)).toEqual({ slices: 8, end: 8 });
  });

  it('an H100 with MIG mode on is one provider: an inventory per profile, 7 compute and 8 memory slices shared', async () => {
    const found = await discover({ root: fixture('h100-mig'), statfs });
    const gpu = found.providers[1]!;
    expect(gpu.device).toMatchObject({ pciAddress: '0000:00:06.0', model: 'NVIDIA H100 80GB HBM3' });
    expect(gpu.inventories.PGPU).toBeUndefined();
    expect(gpu.traits).toContain('CUSTOM_GPU_MIG');
    expect(gpu.counters?.counters).toEqual({ compute_slices: 7, memory_slices: 8 });
    for (const [profile, [instances, compute, memory]] of Object.entries(TABLE)) {
      const rc = migResourceClass(profile);
      expect(gpu.inventories[rc]).toMatchObject({ total: instances, max_unit: instances });
      expect(gpu.counters?.consumption[rc]).toEqual({ compute_slices: compute, memory_slices: memory });
    }
  });

  it('the same host with MIG mode off (the real capture) keeps its whole-GPU inventory and no counters', async () => {
    const found = await discover({ root: fixture('h100-host'), statfs });
    expect(found.providers[1]!.inventories.PGPU).toMatchObject({ total: 1 });
    expect(found.providers[1]!.counters).toBeUndefined();
  });
});

describe('MIG reporting into a live service', () => {
  let svc: TestApp;
  beforeAll(async () => {
    svc = await makeTestApp();
  });
  afterAll(() => svc.close());

  it('writes the counters once; a stock request then finds the GPU only while its profile fits', async () => {
    const found = await discover({ root: fixture('h100-mig'), statfs });
    const client = new PlacementClient({ endpoint: 'http://placement.test', token: 'admin', fetch: (r) => svc.app.fetch(r) });
    const first = await syncTree(client, found.providers, { ratios, log: silentLog });
    const gpuName = found.providers[1]!.name;
    expect(first.countersUpdated).toEqual([gpuName]);
    const second = await syncTree(client, found.providers, { ratios, log: silentLog });
    expect(second.countersUpdated).toEqual([]);

    const gpu = providerUuid(gpuName);
    const fits = async (query: string) => {
      const res = await svc.call('GET', `/allocation_candidates?${query}`);
      const body = (await res.json()) as { allocation_requests: { allocations: Record<string, unknown> }[] };
      return body.allocation_requests.some((r) => gpu in r.allocations);
    };
    expect(await fits('resources=CUSTOM_MIG_3G_40GB:2')).toBe(true);
    const claim = await svc.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [gpu]: { resources: { CUSTOM_MIG_4G_40GB: 1 } } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(claim.status).toBe(204);
    expect(await fits('resources=CUSTOM_MIG_3G_40GB:1')).toBe(true);
    expect(await fits('resources=CUSTOM_MIG_3G_40GB:2')).toBe(false);
    expect(await fits('resources=CUSTOM_MIG_7G_80GB:1')).toBe(false);
    expect(await fits('resources=CUSTOM_MIG_1G_10GB:3')).toBe(true);
    expect(await fits('resources=CUSTOM_MIG_1G_10GB:4')).toBe(false);
  });
});
