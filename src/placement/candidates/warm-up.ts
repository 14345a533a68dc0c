// The engine's warm-up: a fresh process (or Worker isolate) answers its first
// candidates requests many times slower than later ones while V8 compiles the
// engine (docs/performance.md#figures-behind-the-code).
// This feeds the engine a made-up provider-tree model directly (CloudModel.of:
// no database, no imitated statement rows) and runs the same code a request
// runs from the rules on (candidatesJsonFromModel): rules, search, JSON
// presentation, on perfload's two shapes (placeload's flat hosts, the nested
// perfload tree) and a sharing provider, across microversions.
// Pure: no I/O, no random values, no timers, no clock (safe in a Worker's
// global scope); the caller decides how many rounds its budget allows.
import { Microversion } from '../../microversion.js';
import { STANDARD_RESOURCE_CLASSES } from '../standard-names.generated.js';
import { MAX_VERSION } from '../versions.js';
import { addUsage, CloudModel, type Lookups, type ProviderSpec, type Usage } from './cloud-model.js';
import { type CandidateOptions, type CandidateReadHook, candidatesJsonFromModel } from './index.js';
import { KeptBytes } from './present/json.js';
import { type CandidateRequest, parseCandidateQueryString } from './parse.js';

const AGGREGATES = [
  { id: 1, uuid: '5a1b7c2e-0000-4000-8000-00000000a001' },
  { id: 2, uuid: '5a1b7c2e-0000-4000-8000-00000000a002' },
];
/** Trait names in trait id order (their ids: index + 1). */
const TRAITS = [
  'HW_CPU_X86_AVX2',
  'HW_CPU_X86_SSE2',
  'COMPUTE_VOLUME_MULTI_ATTACH',
  'HW_NUMA_ROOT',
  'CUSTOM_FOO',
  'MISC_SHARES_VIA_AGGREGATE',
];
const traitId = (name: string) => TRAITS.indexOf(name) + 1;
const classId = (name: string) => STANDARD_RESOURCE_CLASSES.indexOf(name as (typeof STANDARD_RESOURCE_CLASSES)[number]);

/** The queries warmed (perfload's flat and nested ones, as Nova sends them, with and without a limit; a shared disk), each at these microversions. */
const QUERIES: [query: string, versions: string[]][] = [
  [`resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${AGGREGATES[0]!.uuid}&required=HW_CPU_X86_AVX2`, [MAX_VERSION, '1.29']],
  [`resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${AGGREGATES[0]!.uuid}&required=HW_CPU_X86_AVX2&limit=10`, [MAX_VERSION]],
  ['resources=VCPU:1,DISK_GB:10,MEMORY_MB:256', ['1.12']],
  [
    'resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH&resources_COMPUTE=VCPU:1,MEMORY_MB:256' +
      '&required_COMPUTE=CUSTOM_FOO&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA',
    [MAX_VERSION],
  ],
  ['resources=VCPU:1,MEMORY_MB:512&resources1=VGPU:1&group_policy=isolate&limit=5', [MAX_VERSION, '1.31']],
  ['resources=VCPU:1,MEMORY_MB:256,IPV4_ADDRESS:1', [MAX_VERSION, '1.21']],
];

/**
 * The same queries for a real cloud (the re-warm after a load, src/entry/warm-up.ts):
 * without the made-up aggregate, which a real cloud does not have (but once). A query
 * naming a class or trait the cloud lacks is refused at once (400), cheaply.
 */
export function realCloudRequests(): WarmUpRequest[] {
  const madeUp = `&member_of=${AGGREGATES[0]!.uuid}`;
  // And the first as it is, once: no tree is in the made-up aggregate, so it is answered empty, cheaply, but
  // the real path's member_of conditions run (a client's first member_of query deoptimized the plan without).
  return parsed([
    ...QUERIES.map(([query, versions]): [string, string[]] => [query.replace(madeUp, ''), versions]),
    [QUERIES[0]![0], [MAX_VERSION]],
  ]);
}

interface WarmUpRequest {
  mv: Microversion;
  request: CandidateRequest;
}

/** Each query parsed at each of its microversions. */
function parsed(queries: [query: string, versions: string[]][]): WarmUpRequest[] {
  return queries.flatMap(([query, versions]) =>
    versions.map((version) => {
      const mv = Microversion.parse(version)!;
      return { mv, request: parseCandidateQueryString(query, mv) };
    }),
  );
}

type Inventory = [name: string, total: number, reserved: number, min: number, max: number, step: number];

/** `hosts` placeload hosts, `trees` nested perfload trees, one provider sharing IPv4 addresses with the hosts of aggregate 2. */
function madeUpCloud(hosts: number, trees: number): { providers: ProviderSpec[]; usage: Usage } {
  const providers: ProviderSpec[] = [];
  const usage: Usage = new Map();
  const add = (parent: number | null, root: number | null, traits: string[], aggregates: number[], inventories: Inventory[]): number => {
    const id = providers.length + 1;
    providers.push({
      id,
      uuid: `00000000-0000-4000-8000-${id.toString(16).padStart(12, '0')}`,
      parentId: parent,
      rootId: root ?? id,
      traits: [...traits].sort((a, b) => traitId(a) - traitId(b)),
      aggregates,
      inventories: [...inventories]
        .sort((a, b) => classId(a[0]) - classId(b[0]))
        .map(([className, total, reserved, minUnit, maxUnit, stepSize]) => ({
          total,
          reserved,
          minUnit,
          maxUnit,
          stepSize,
          allocationRatio: 1,
          classId: classId(className),
          className,
        })),
    });
    // Some usage, so answers show used amounts: a VCPU and some memory on every third provider with them.
    if (id % 3 === 0)
      for (const [name] of inventories)
        if (name === 'VCPU' || name === 'MEMORY_MB') addUsage(usage, id, classId(name), name === 'VCPU' ? 1 : 512);
    return id;
  };
  for (let i = 0; i < hosts; i += 1) {
    // placeload's cycles: one or two traits; every host in the first aggregate, every other one in the second.
    add(null, null, ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2'].slice(0, 1 + (i % 2)), i % 2 ? [1, 2] : [1], [
      ['VCPU', 32, 0, 1, 16, 1],
      ['MEMORY_MB', 8192, 0, 128, 8192, 1],
      ['DISK_GB', 8192, 0, 5, 8192, 1],
    ]);
  }
  add(null, null, ['MISC_SHARES_VIA_AGGREGATE'], [2], [['IPV4_ADDRESS', 256, 0, 1, 1, 1]]);
  for (let i = 0; i < trees; i += 1) {
    const cn = add(null, null, ['COMPUTE_VOLUME_MULTI_ATTACH'], [], [['DISK_GB', 20480, 0, 1, 20480, 1]]);
    for (let n = 0; n < 2; n += 1) {
      const numa = add(
        cn,
        cn,
        n ? ['HW_NUMA_ROOT', 'CUSTOM_FOO'] : ['HW_NUMA_ROOT'],
        [],
        [
          ['VCPU', 4, 0, 1, 4, 1],
          ['MEMORY_MB', 2048, 0, 256, 2048, 256],
        ],
      );
      add(numa, cn, [], [], [['FPGA', 1, 0, 1, 1, 1]]);
      add(numa, cn, [], [], [['VGPU', 8, 0, 1, 8, 1]]);
    }
  }
  return { providers, usage };
}

const LOOKUPS: Lookups = {
  classIdByName: new Map(STANDARD_RESOURCE_CLASSES.map((name, id) => [name, id])),
  traitIdByName: new Map(TRAITS.map((name) => [name, traitId(name)])),
  aggregateIdByUuid: new Map(AGGREGATES.map((a) => [a.uuid, a.id])),
  rootIdByProviderUuid: new Map(),
};

export interface WarmUpDone {
  answers: number;
  bytes: number;
  /** The smallest answer's size: an empty one (no candidate) is about 50 bytes. */
  smallest: number;
}

/**
 * `rounds` rounds of the warm-up queries over a made-up cloud of `hosts`
 * flat hosts and `trees` nested trees (one round: 9 answers), the answers
 * computed and dropped. `hooks`:
 * the app's installed read hooks (Deps.candidates.hooks), run as on a cloud
 * without taints or counters, so the code they reach warms up as requests
 * will run it. Throws if the engine refuses one of its own queries (a test
 * checks it does not).
 */
export async function warmUpCandidates(rounds = 1, hooks: readonly CandidateReadHook[] = [], hosts = 200, trees = 40): Promise<WarmUpDone> {
  // One presenter's kept bytes for every round, as an app's: later rounds copy what earlier ones kept, as warm answers do.
  const options: CandidateOptions = {
    randomize: false,
    maxCandidates: 0,
    treeCacheProviders: 0,
    now: 0,
    hooks,
    keptBytes: new KeptBytes(),
  };
  const { providers, usage } = madeUpCloud(hosts, trees);
  const model = CloudModel.of(providers);
  const requests = parsed(QUERIES);
  let answers = 0;
  let bytes = 0;
  let smallest = Number.POSITIVE_INFINITY;
  for (let round = 0; round < rounds; round += 1) {
    for (const { mv, request } of requests) {
      const size = (await candidatesJsonFromModel({ model, usage, lookups: LOOKUPS }, request, mv, options)).length;
      answers += 1;
      bytes += size;
      smallest = Math.min(smallest, size);
    }
  }
  return { answers, bytes, smallest: answers ? smallest : 0 };
}
