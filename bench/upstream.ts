// The clouds and queries of OpenStack Placement's own perfload CI jobs, as
// data: what gate/perfload-runner.sh loads with `placeload` (flat), what
// gate/perfload-nested-runner.sh loads with gate/perfload-nested-loader.sh +
// gate/gabbits/nested-perfload.yaml (nested trees), and the queries both time.
// Checked value by value against upstream's files as upstream has them
// (../shared/reference/placement-perfload/: gate/ from openstack/placement,
// placeload/__init__.py of placeload 0.4.0). bench/README.md ("Where the data
// comes from") lists what the bench does differently and why.
import type { ProviderSpec } from './cloud.js';

/** Every perfload request (placeload's, the gabbit's, the runners' curls) asks for `placement latest`. */
export const PERFLOAD_VERSION = 'latest';

// ---------------------------------------------------------------- flat ---

/** placeload's AGGREGATES; the first is in every provider and is what perfload-runner.sh queries with member_of. */
export const PLACELOAD_AGGREGATES = [
  '14a5c8a3-5a99-4e8f-88be-00d85fcb1c17',
  '66d98e7c-3c25-485d-a0dc-1cea651884de',
  'a59dbb28-fd98-4c6e-9ec5-ae5f3d04b0aa',
] as const;
export const PLACELOAD_AGGREGATE = PLACELOAD_AGGREGATES[0];
/** placeload's TRAITS (os_traits hw.cpu.x86.AVX2, SSE2, storage.disk.SSD); the first is required by the query. */
export const PLACELOAD_TRAITS = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2', 'STORAGE_DISK_SSD'] as const;
export const PLACELOAD_TRAIT = PLACELOAD_TRAITS[0];

/** placeload's INVENTORY_DICT, the same on every provider (allocation ratio and reserved left to the defaults). */
export const PLACELOAD_INVENTORY: Record<string, Record<string, number>> = {
  MEMORY_MB: { total: 8192, min_unit: 128, max_unit: 8192 },
  DISK_GB: { total: 8192, min_unit: 5, max_unit: 8192 },
  VCPU: { total: 32, min_unit: 1, max_unit: 16 },
};

/** perfload-runner.sh's COUNT and the providers its preheating `placeload $PLACEMENT_URL 10` makes first. */
export const PERFLOAD_COUNT = 1000;
export const PLACELOAD_PREHEAT = 10;

/** perfload-runner.sh's PLACEMENT_QUERY (its curls send `placement latest`). */
export const FLAT_QUERY = `resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${PLACELOAD_AGGREGATE}&required=${PLACELOAD_TRAIT}`;
export const FLAT_VERSION = PERFLOAD_VERSION;

/**
 * The i-th provider of a placeload run: named after its uuid, INVENTORY_DICT,
 * then the next chunk of AGG_CYCLE ([a0], [a0, a1], [a0, a1, a2]) and of
 * TRAIT_CYCLE ([AVX2], [AVX2, SSE2], [AVX2, SSE2, SSD]). placeload's cycles
 * advance in the order its concurrent requests complete, so which provider
 * gets which chunk (and which aggregate chunk pairs with which trait chunk)
 * varies from run to run upstream; here provider i gets chunk i mod 3 of
 * both: the same counts per chunk.
 */
export function placeloadProvider(uuid: string, i = 0): ProviderSpec {
  const chunk = (i % 3) + 1;
  return {
    uuid,
    name: uuid,
    inventories: PLACELOAD_INVENTORY,
    aggregates: PLACELOAD_AGGREGATES.slice(0, chunk),
    traits: PLACELOAD_TRAITS.slice(0, chunk),
  };
}

// -------------------------------------------------------------- nested ---

/** perfload-nested-runner.sh's ITERATIONS: trees of the gabbit it loads. */
export const NESTED_PERFLOAD_TREES = 1000;

/**
 * One run of gate/gabbits/nested-perfload.yaml (perfload-nested-loader.sh
 * gives each run fresh uuids): 7 providers, names and inventories as the
 * gabbit writes them. The gabbit's first step (PUT /traits/CUSTOM_FOO) is
 * sent once before the trees (bench/cloud.ts httpLoad), not once per tree.
 */
export function nestedPerfloadTree(uuid: () => string): ProviderSpec[] {
  const cn1 = uuid();
  const n0 = uuid();
  const n1 = uuid();
  const fpga00 = uuid();
  const pgpu00 = uuid();
  const fpga10 = uuid();
  const fpga11 = uuid();
  return [
    { uuid: cn1, name: cn1, inventories: { DISK_GB: { total: 20480 } }, traits: ['COMPUTE_VOLUME_MULTI_ATTACH'] },
    {
      uuid: n0,
      name: `numa 0-${n0}`,
      parent: cn1,
      inventories: { VCPU: { total: 4, reserved: 2 }, MEMORY_MB: { total: 2048, min_unit: 512, step_size: 256 } },
      traits: ['HW_NUMA_ROOT'],
    },
    { uuid: fpga00, name: `fpga0-0-${fpga00}`, parent: n0, inventories: { FPGA: { total: 1 } } },
    { uuid: pgpu00, name: `pgpu0-0-${pgpu00}`, parent: n0, inventories: { VGPU: { total: 8 } } },
    {
      uuid: n1,
      name: `numa 1-${n1}`,
      parent: cn1,
      inventories: { VCPU: { total: 4 }, MEMORY_MB: { total: 2048, min_unit: 256, max_unit: 1024 } },
      traits: ['HW_NUMA_ROOT', 'CUSTOM_FOO'],
    },
    { uuid: fpga10, name: `fpga1-0-${fpga10}`, parent: n1, inventories: { FPGA: { total: 1 } } },
    { uuid: fpga11, name: `fpga1-1-${fpga11}`, parent: n1, inventories: { FPGA: { total: 1 } } },
  ];
}

/** perfload-nested-runner.sh's PLACEMENT_QUERY (its curls send `placement latest`). */
export const NESTED_QUERY =
  'resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH' +
  '&resources_COMPUTE=VCPU:1,MEMORY_MB:256&required_COMPUTE=CUSTOM_FOO' +
  '&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA';
export const NESTED_VERSION = PERFLOAD_VERSION;

/**
 * Both runners' write_allocation: the first of `GET ...&limit=5`, sent back
 * with PUT /allocations/{new uuid} at `placement latest`, consumer_type
 * "TEST", a new project and user uuid each time.
 */
export const CLAIM_VERSION = PERFLOAD_VERSION;
export const CLAIM_CONSUMER_TYPE = 'TEST';

/** Both runners' `ab -c 10 -n 500`. */
export const AB_REQUESTS = 500;
export const AB_CONCURRENCY = 10;
/** perfload-runner.sh writes 99 allocations (each followed by two timed curls), perfload-nested-runner.sh 10. */
export const FLAT_ALLOCATIONS = 99;
export const NESTED_ALLOCATIONS = 10;
