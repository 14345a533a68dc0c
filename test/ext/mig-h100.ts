// An H100 80GB in MIG mode as the agent reports it (agent/fixtures/h100-mig/,
// NVIDIA's published profile table): one provider, an inventory per profile,
// 7 compute slices and 8 memory slices shared by all of them.
import { expect } from 'vitest';
import { provider } from '../helpers/providers.js';
import type { TestApp } from '../helpers/test-app.js';

/** profile class -> [memory slices, compute slices, most instances] (NVIDIA MIG user guide, H100 80GB). */
export const H100_PROFILES: Record<string, [number, number, number]> = {
  CUSTOM_MIG_1G_10GB: [1, 1, 7],
  CUSTOM_MIG_1G_20GB: [2, 1, 4],
  CUSTOM_MIG_2G_20GB: [2, 2, 3],
  CUSTOM_MIG_3G_40GB: [4, 3, 2],
  CUSTOM_MIG_4G_40GB: [4, 4, 1],
  CUSTOM_MIG_7G_80GB: [8, 7, 1],
};

export function h100Counters(generation: number) {
  return {
    resource_provider_generation: generation,
    counters: { memory_slices: 8, compute_slices: 7 },
    consumption: Object.fromEntries(
      Object.entries(H100_PROFILES).map(([rc, [memory, compute]]) => [rc, { memory_slices: memory, compute_slices: compute }]),
    ),
  };
}

export async function ensureClasses(app: TestApp, names: string[]): Promise<void> {
  for (const name of names) {
    const res = await app.call('PUT', `/resource_classes/${name}`, { version: '1.7' });
    expect([201, 204]).toContain(res.status);
  }
}

/** A MIG-mode H100 under `parent` (or a root): its uuid. */
export async function migGpu(app: TestApp, parent?: string, traits?: string[]): Promise<string> {
  await ensureClasses(app, Object.keys(H100_PROFILES));
  const inventory = Object.fromEntries(Object.entries(H100_PROFILES).map(([rc, [, , most]]) => [rc, { total: most, max_unit: most }]));
  const uuid = await provider(app, { ...(parent ? { parent } : {}), inventory, ...(traits ? { traits } : {}) });
  const generation = ((await (await app.call('GET', `/resource_providers/${uuid}`)).json()) as { generation: number }).generation;
  const res = await app.call('PUT', `/ext/resource_providers/${uuid}/counters`, { body: h100Counters(generation) });
  expect(res.status).toBe(200);
  return uuid;
}

/**
 * The host agent's device report for H100s on `HOST`, one per provider of `gpus`: each GPU a
 * deployable with an attach handle per possible instance (7); `deployable` adds fields to each.
 */
export const h100DeviceReport = (host: string, gpus: string[], deployable: Record<string, unknown> = {}) =>
  gpus.map((rp, i) => ({
    key: `0000:0${i + 6}:00.0`,
    type: 'GPU',
    vendor: '0x10de',
    model: 'H100',
    deployables: [
      {
        name: `${host}_GPU${i}`,
        num_accelerators: 7,
        rp_uuid: rp,
        driver_name: 'nvidia',
        ...deployable,
        attach_handles: Array.from({ length: 7 }, (_, f) => ({
          type: 'PCI',
          info: { domain: '0000', bus: `0${i + 6}`, device: '00', function: String(f) },
        })),
      },
    ],
  }));

/** A device profile of one 3g.40gb MIG instance, as the MIG tests create it. */
export const MIG_3G_PROFILE = [{ name: 'mig-3g', groups: [{ 'resources:CUSTOM_MIG_3G_40GB': '1' }] }];
