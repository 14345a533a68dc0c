// A small but complete cloud loaded into a Placement over its REST API (the
// real OpenStack Placement in the import tests): nested trees, a sharing
// provider, custom classes and traits, aggregates, consumers of several
// types and generations.
import { placementCall } from '../helpers/upstream-placement.js';

export const CLOUD = {
  cn1: 'c0000000-0000-4000-8000-000000000001',
  numa0: 'c0000000-0000-4000-8000-000000000002',
  numa1: 'c0000000-0000-4000-8000-000000000003',
  fpga0: 'c0000000-0000-4000-8000-000000000004',
  cn2: 'c0000000-0000-4000-8000-000000000005',
  shared: 'c0000000-0000-4000-8000-000000000006',
  agg1: 'a0000000-0000-4000-8000-000000000001',
  agg2: 'a0000000-0000-4000-8000-000000000002',
  instance1: 'e0000000-0000-4000-8000-000000000001',
  instance2: 'e0000000-0000-4000-8000-000000000002',
  migration: 'e0000000-0000-4000-8000-000000000003',
  untyped: 'e0000000-0000-4000-8000-000000000004',
  project1: 'f0000000-0000-4000-8000-000000000001',
  project2: 'f0000000-0000-4000-8000-000000000002',
  user1: 'f1000000-0000-4000-8000-000000000001',
  user2: 'f1000000-0000-4000-8000-000000000002',
} as const;

const inv = (total: number, extra: Record<string, number> = {}) => ({ total, ...extra });

export async function loadCloud(url: string): Promise<void> {
  const call = (method: string, path: string, body?: unknown, version?: string) =>
    placementCall(url, method, path, body, version ? { version } : {});
  const generation = async (uuid: string) => ((await call('GET', `/resource_providers/${uuid}`)) as { generation: number }).generation;
  const setInventories = async (uuid: string, inventories: Record<string, unknown>) =>
    call('PUT', `/resource_providers/${uuid}/inventories`, { resource_provider_generation: await generation(uuid), inventories });

  await call('PUT', '/resource_classes/CUSTOM_FPGA_XILINX');
  await call('PUT', '/resource_classes/CUSTOM_LICENSE');
  await call('PUT', '/traits/CUSTOM_GOLD');
  await call('PUT', '/traits/CUSTOM_PHYSNET1');

  const providers: [string, string, string | undefined][] = [
    [CLOUD.cn1, 'cn1', undefined],
    [CLOUD.numa0, 'cn1-numa0', CLOUD.cn1],
    [CLOUD.numa1, 'cn1-numa1', CLOUD.cn1],
    [CLOUD.fpga0, 'cn1-numa0-fpga0', CLOUD.numa0],
    [CLOUD.cn2, 'cn2', undefined],
    [CLOUD.shared, 'shared-storage', undefined],
  ];
  for (const [uuid, name, parent] of providers) {
    await call('POST', '/resource_providers', { uuid, name, ...(parent ? { parent_provider_uuid: parent } : {}) });
  }
  await setInventories(CLOUD.cn1, {
    MEMORY_MB: inv(65536, { reserved: 512, allocation_ratio: 1.5, min_unit: 256, step_size: 256, max_unit: 32768 }),
  });
  await setInventories(CLOUD.numa0, { VCPU: inv(16, { allocation_ratio: 4 }) });
  await setInventories(CLOUD.numa1, { VCPU: inv(16, { allocation_ratio: 4, reserved: 2 }) });
  await setInventories(CLOUD.fpga0, { CUSTOM_FPGA_XILINX: inv(2, { max_unit: 1 }) });
  await setInventories(CLOUD.cn2, { VCPU: inv(32), MEMORY_MB: inv(131072), CUSTOM_LICENSE: inv(10) });
  // Set twice: the generation moves on, and must come over as it is.
  await setInventories(CLOUD.shared, { DISK_GB: inv(1000) });
  await setInventories(CLOUD.shared, { DISK_GB: inv(4000, { reserved: 100 }) });

  const setTraits = async (uuid: string, traits: string[]) =>
    call('PUT', `/resource_providers/${uuid}/traits`, { resource_provider_generation: await generation(uuid), traits });
  await setTraits(CLOUD.cn1, ['HW_CPU_X86_AVX2', 'CUSTOM_GOLD', 'COMPUTE_VOLUME_MULTI_ATTACH']);
  await setTraits(CLOUD.numa1, ['HW_NUMA_ROOT', 'CUSTOM_PHYSNET1']);
  await setTraits(CLOUD.shared, ['MISC_SHARES_VIA_AGGREGATE', 'STORAGE_DISK_SSD']);
  const setAggregates = async (uuid: string, aggregates: string[]) =>
    call('PUT', `/resource_providers/${uuid}/aggregates`, { resource_provider_generation: await generation(uuid), aggregates });
  await setAggregates(CLOUD.cn1, [CLOUD.agg1]);
  await setAggregates(CLOUD.cn2, [CLOUD.agg1, CLOUD.agg2]);
  await setAggregates(CLOUD.shared, [CLOUD.agg1]);

  const owner = (project: string, user: string) => ({ project_id: project, user_id: user });
  // An instance across the tree and the sharing provider, then resized: consumer generation 1.
  await call('PUT', `/allocations/${CLOUD.instance1}`, {
    allocations: {
      [CLOUD.numa0]: { resources: { VCPU: 2 } },
      [CLOUD.cn1]: { resources: { MEMORY_MB: 2048 } },
      [CLOUD.shared]: { resources: { DISK_GB: 20 } },
    },
    ...owner(CLOUD.project1, CLOUD.user1),
    consumer_generation: null,
    consumer_type: 'INSTANCE',
  });
  await call('PUT', `/allocations/${CLOUD.instance1}`, {
    allocations: {
      [CLOUD.numa0]: { resources: { VCPU: 4 } },
      [CLOUD.cn1]: { resources: { MEMORY_MB: 4096 } },
      [CLOUD.shared]: { resources: { DISK_GB: 40 } },
    },
    ...owner(CLOUD.project1, CLOUD.user1),
    consumer_generation: 1,
    consumer_type: 'INSTANCE',
  });
  await call('PUT', `/allocations/${CLOUD.instance2}`, {
    allocations: {
      [CLOUD.numa1]: { resources: { VCPU: 1 } },
      [CLOUD.fpga0]: { resources: { CUSTOM_FPGA_XILINX: 1 } },
      [CLOUD.cn2]: { resources: { CUSTOM_LICENSE: 2 } },
    },
    ...owner(CLOUD.project1, CLOUD.user2),
    consumer_generation: null,
    consumer_type: 'INSTANCE',
  });
  await call('PUT', `/allocations/${CLOUD.migration}`, {
    allocations: { [CLOUD.cn2]: { resources: { VCPU: 8, MEMORY_MB: 8192 } } },
    ...owner(CLOUD.project2, CLOUD.user1),
    consumer_generation: null,
    consumer_type: 'MIGRATION',
  });
  // Written before consumer types existed (1.28): upstream shows it as "unknown".
  await call(
    'PUT',
    `/allocations/${CLOUD.untyped}`,
    { allocations: { [CLOUD.cn2]: { resources: { VCPU: 1 } } }, ...owner(CLOUD.project2, CLOUD.user2), consumer_generation: null },
    '1.28',
  );
}
