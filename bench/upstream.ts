// The clouds and queries of OpenStack Placement's own perfload CI jobs, as
// data: what gate/perfload-runner.sh loads with `placeload` (flat), what
// gate/perfload-nested-runner.sh loads with gate/perfload-nested-loader.sh +
// gate/gabbits/nested-perfload.yaml (nested trees), and the queries both time.
// Sources: openstack-placement (the PyPI sdist carries gate/) and placeload
// 0.4.0 (PyPI). See bench/README.md ("Where the data comes from") for which
// values were checked against those files and which were not.
import type { ProviderSpec } from './cloud.js';

// ---------------------------------------------------------------- flat ---

/** The aggregate placeload puts every provider in, and perfload-runner.sh queries with member_of. */
export const PLACELOAD_AGGREGATE = '14a5c8a3-5a99-4e8f-88be-00d85fcb1c17';
/** The trait placeload sets on every provider, and perfload-runner.sh requires. */
export const PLACELOAD_TRAIT = 'HW_CPU_X86_AVX2';

/** placeload's inventory, the same on every provider. */
export const PLACELOAD_INVENTORY: Record<string, Record<string, number>> = {
  DISK_GB: { total: 2048 },
  MEMORY_MB: { total: 8192 },
  VCPU: { total: 8 },
};

/** perfload-runner.sh's PLACEMENT_QUERY and the microversion its curl sends. */
export const FLAT_QUERY = `resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${PLACELOAD_AGGREGATE}&required=${PLACELOAD_TRAIT}`;
export const FLAT_VERSION = '1.21';

/** Provider i of a placeload run (placeload names providers after their uuid). */
export function placeloadProvider(uuid: string): ProviderSpec {
  return { uuid, name: uuid, inventories: PLACELOAD_INVENTORY, traits: [PLACELOAD_TRAIT], aggregates: [PLACELOAD_AGGREGATE] };
}

// -------------------------------------------------------------- nested ---

/**
 * One tree of gate/gabbits/nested-perfload.yaml: the cn1 half of
 * placement's NUMANetworkFixture (placement/tests/functional/fixtures/gabbits.py,
 * checked against 8.0.0) with DISK_GB on the compute node itself and the
 * standard FPGA class, so every tree stands alone.
 */
export function nestedPerfloadTree(uuid: () => string): ProviderSpec[] {
  const cn = uuid();
  const numa0 = uuid();
  const numa1 = uuid();
  const sriov = uuid();
  const ovs = uuid();
  const named = (id: string, name: string, rest: Omit<ProviderSpec, 'uuid' | 'name'>): ProviderSpec => ({
    uuid: id,
    name: `${name}-${id}`,
    ...rest,
  });
  return [
    named(cn, 'cn', { inventories: { DISK_GB: { total: 20480 } }, traits: ['COMPUTE_VOLUME_MULTI_ATTACH'] }),
    named(numa0, 'numa0', {
      parent: cn,
      inventories: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048, min_unit: 512, step_size: 256 } },
      traits: ['HW_NUMA_ROOT'],
    }),
    named(numa1, 'numa1', {
      parent: cn,
      inventories: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048, min_unit: 256, max_unit: 1024 } },
      traits: ['HW_NUMA_ROOT', 'CUSTOM_FOO'],
    }),
    named(uuid(), 'fpga0', { parent: numa0, inventories: { FPGA: { total: 1 } } }),
    named(uuid(), 'pgpu0', { parent: numa0, inventories: { VGPU: { total: 8 } } }),
    named(uuid(), 'fpga1_0', { parent: numa1, inventories: { FPGA: { total: 1 } } }),
    named(uuid(), 'fpga1_1', { parent: numa1, inventories: { FPGA: { total: 1 } } }),
    named(sriov, 'sriov_agent', { parent: cn, traits: ['CUSTOM_VNIC_TYPE_DIRECT'] }),
    named(uuid(), 'esn1', { parent: sriov, inventories: { NET_BW_EGR_KILOBIT_PER_SEC: { total: 10000 } }, traits: ['CUSTOM_PHYSNET1'] }),
    named(uuid(), 'esn2', { parent: sriov, inventories: { NET_BW_EGR_KILOBIT_PER_SEC: { total: 20000 } }, traits: ['CUSTOM_PHYSNET2'] }),
    named(ovs, 'ovs_agent', { parent: cn, traits: ['CUSTOM_VNIC_TYPE_NORMAL'] }),
    named(uuid(), 'br_int', { parent: ovs, inventories: { NET_BW_EGR_KILOBIT_PER_SEC: { total: 1000 } }, traits: ['CUSTOM_PHYSNET0'] }),
  ];
}

/** perfload-nested-runner.sh's PLACEMENT_QUERY (microversion 1.36: same_subtree). */
export const NESTED_QUERY =
  'resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH' +
  '&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO' +
  '&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA';
export const NESTED_VERSION = '1.36';

/**
 * perfload-nested-runner.sh's write_allocation: the first of
 * `GET ...&limit=5`, PUT at 1.38 for a new consumer of type INSTANCE.
 */
export const CLAIM_VERSION = '1.38';
