// The tree-sync rules against a recording Placement stand-in.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../src/config.js';
import { discover } from '../src/discover/index.js';
import { providerUuid } from '../src/discover/uuid.js';
import { ratioSettings } from '../src/ratios/index.js';
import { PlacementClient, PlacementError } from '../src/report/client.js';
import { syncTree } from '../src/report/sync.js';
import { fakePlacement } from './helpers/fake-placement.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const ratios = ratioSettings(loadAgentConfig({ env: {} }));
const quiet = { info() {}, warn() {} };
const AGG = '7a1c3e5f-2b4d-4c6e-8f0a-1b2c3d4e5f60';

async function setup() {
  const placement = fakePlacement();
  const client = new PlacementClient({ endpoint: 'http://fake', fetch: (r) => placement.fetch(r) });
  const found = await discover({ root: fixture('two-nvidia'), statfs: () => ({ bsize: 1024 ** 3, blocks: 40 }) });
  return { placement, client, tree: found.providers };
}

const writes = (requests: string[]) => requests.filter((r) => !r.startsWith('GET'));

describe('syncTree', () => {
  it('creates the tree parents first, then only writes what changed', async () => {
    const { placement, client, tree } = await setup();
    const first = await syncTree(client, tree, { ratios, aggregates: [AGG], log: quiet });
    expect(first.created).toEqual(tree.map((p) => p.name));
    const root = placement.providers.get(providerUuid('gpu-host-2'))!;
    expect(root.aggregates).toEqual([AGG]);
    expect(placement.providers.get(providerUuid('gpu-host-2_pci_0000_86_00_0'))?.parent_provider_uuid).toBe(root.uuid);

    placement.requests.length = 0;
    const second = await syncTree(client, tree, { ratios, aggregates: [AGG], log: quiet });
    expect(writes(placement.requests)).toEqual([]);
    expect(second).toMatchObject({ created: [], inventoriesUpdated: [], traitsUpdated: [], aggregatesUpdated: [] });
  });

  it('keeps traits and aggregates an operator added, drops owned traits the host lost', async () => {
    const { placement, client, tree } = await setup();
    await syncTree(client, tree, { ratios, log: quiet });
    const root = placement.providers.get(providerUuid('gpu-host-2'))!;
    placement.customNames.add('CUSTOM_RACK_7');
    root.traits = [...root.traits, 'CUSTOM_RACK_7', 'HW_CPU_X86_SGX'];
    root.aggregates = ['11111111-2222-4333-8444-555555555555'];
    await syncTree(client, tree, { ratios, aggregates: [AGG], log: quiet });
    expect(root.traits).toContain('CUSTOM_RACK_7');
    expect(root.traits).not.toContain('HW_CPU_X86_SGX');
    expect(root.aggregates).toEqual(['11111111-2222-4333-8444-555555555555', AGG]);
  });

  it('deletes the provider of a device that is gone', async () => {
    const { placement, client, tree } = await setup();
    await syncTree(client, tree, { ratios, log: quiet });
    const summary = await syncTree(client, tree.slice(0, 2), { ratios, log: quiet });
    expect(summary.deleted).toEqual(['gpu-host-2_pci_0000_86_00_0']);
    expect([...placement.providers.values()].map((p) => p.name).sort()).toEqual(['gpu-host-2', 'gpu-host-2_pci_0000_3b_00_0']);
  });

  it('re-reads and retries on a generation conflict, and gives up after the retry budget', async () => {
    const { placement, client, tree } = await setup();
    await syncTree(client, tree, { ratios, log: quiet });
    const root = placement.providers.get(providerUuid('gpu-host-2'))!;
    let bumps = 0;
    const racing = new PlacementClient({
      endpoint: 'http://fake',
      fetch: (req) => {
        // Another writer changes the provider between every read and write.
        if (req.method === 'PUT' && new URL(req.url).pathname.endsWith(`${root.uuid}/inventories`) && bumps < 2) {
          bumps++;
          root.generation++;
        }
        return placement.fetch(req);
      },
    });
    const changed = tree.map((p) =>
      p.name === 'gpu-host-2' ? { ...p, inventories: { ...p.inventories, VCPU: { ...p.inventories.VCPU, reserved: 2 } } } : p,
    );
    const summary = await syncTree(racing, changed, { ratios, log: quiet });
    expect(summary.conflictsRetried).toBe(2);
    expect(root.inventories.VCPU.reserved).toBe(2);

    bumps = -100; // always conflicting now
    const again = tree.map((p) =>
      p.name === 'gpu-host-2' ? { ...p, inventories: { ...p.inventories, VCPU: { ...p.inventories.VCPU, reserved: 3 } } } : p,
    );
    await expect(syncTree(racing, again, { ratios, maxConflictRetries: 2, log: quiet })).rejects.toSatisfy(
      (err: unknown) => err instanceof PlacementError && err.isGenerationConflict,
    );
  });
});
