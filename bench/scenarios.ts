// The bench's scenarios: upstream's perfload clouds (flat N=1000/5000/100,000,
// nested 1000 trees and 200 of them), the wide device trees of upstream bugs 2070257
// and 2126751, and this project's older, lighter cloud (not upstream's).
import type { Cloud, ProviderSpec } from './cloud.js';
import { AGGS, NESTED_AGG, QUERY_A, QUERY_E } from './queries.js';
import {
  AB_CONCURRENCY,
  AB_REQUESTS,
  FLAT_ALLOCATIONS,
  FLAT_QUERY,
  FLAT_VERSION,
  NESTED_ALLOCATIONS,
  NESTED_PERFLOAD_TREES,
  NESTED_QUERY,
  NESTED_VERSION,
  nestedPerfloadTree,
  PERFLOAD_COUNT,
  PLACELOAD_PREHEAT,
  placeloadProvider,
} from './upstream.js';

export type Measure =
  /** perfload's time_candidates right after loading: two timed GETs of the full answer, the first a fresh service's first. */
  | { kind: 'first'; label: string; query: string; version: string }
  | { kind: 'latency'; label: string; query: string; version: string; reps: number }
  | { kind: 'throughput'; label: string; query: string; version: string; requests: number; width: number }
  | { kind: 'claim'; label: string; query: string; version: string; cycles: number };

export interface Scenario {
  name: string;
  title: string;
  /** Loaded exactly as upstream's perfload loads it (false: this project's own cloud). */
  upstream: boolean;
  build(): Cloud;
  /** Trees loaded, and finished, before the rest (perfload-runner.sh's preheating `placeload URL 10`). */
  preheat?: number;
  /** Also timed in Worker mode (its cold and warm latencies). */
  workerMode?: boolean;
  /** The local server may be loaded straight into its database file (bench/cloud.ts directLoad). */
  directLoadLocal?: boolean;
  /** Consumers written straight into the file after the cloud (directLoadLocal only), spread over the providers (bench/run.ts loadConsumers). */
  consumers?: number;
  measures: Measure[];
}

const uuid = () => crypto.randomUUID();
const repeat = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

function flat(n: number, opts: { requests: number; cycles: number; full: boolean; direct?: boolean }): Scenario {
  const measures: Measure[] = [];
  const total = n + PLACELOAD_PREHEAT;
  if (opts.full) {
    measures.push({ kind: 'first', label: 'full answer: 1st / 2nd after loading (cold)', query: FLAT_QUERY, version: FLAT_VERSION });
    measures.push({ kind: 'latency', label: `full answer (${total} candidates)`, query: FLAT_QUERY, version: FLAT_VERSION, reps: 20 });
  }
  measures.push({ kind: 'latency', label: 'limit=10', query: `${FLAT_QUERY}&limit=10`, version: FLAT_VERSION, reps: 20 });
  if (opts.requests)
    measures.push({
      kind: 'throughput',
      label: `full answer, concurrency ${AB_CONCURRENCY}`,
      query: FLAT_QUERY,
      version: FLAT_VERSION,
      requests: opts.requests,
      width: AB_CONCURRENCY,
    });
  if (opts.cycles)
    measures.push({
      kind: 'claim',
      label: 'claim cycle (GET limit=5 + PUT)',
      query: FLAT_QUERY,
      version: FLAT_VERSION,
      cycles: opts.cycles,
    });
  return {
    name: `flat-${n >= 100_000 ? `${n / 1000}k` : n}`,
    title: `upstream perfload, flat: placeload ${PLACELOAD_PREHEAT} then N=${n.toLocaleString('en')} (gate/perfload-runner.sh)`,
    upstream: true,
    // The preheating run's 10, then the timed run's n: each run's cycles start afresh.
    build: () => [...repeat(PLACELOAD_PREHEAT, (i) => [placeloadProvider(uuid(), i)]), ...repeat(n, (i) => [placeloadProvider(uuid(), i)])],
    preheat: PLACELOAD_PREHEAT,
    workerMode: n <= 5000,
    directLoadLocal: opts.direct,
    measures,
  };
}

function nested(trees: number, note: string): Scenario {
  return {
    name: `nested-${trees}`,
    title: `upstream perfload, nested: ${trees} runs of gate/gabbits/nested-perfload.yaml, 7 providers each (gate/perfload-nested-runner.sh query)${note}`,
    upstream: true,
    build: () => repeat(trees, () => nestedPerfloadTree(uuid)),
    workerMode: true,
    measures: [
      { kind: 'first', label: 'full answer: 1st / 2nd after loading (cold)', query: NESTED_QUERY, version: NESTED_VERSION },
      { kind: 'latency', label: 'full answer', query: NESTED_QUERY, version: NESTED_VERSION, reps: 20 },
      { kind: 'latency', label: 'limit=10', query: `${NESTED_QUERY}&limit=10`, version: NESTED_VERSION, reps: 20 },
      {
        kind: 'throughput',
        label: `full answer, concurrency ${AB_CONCURRENCY}`,
        query: NESTED_QUERY,
        version: NESTED_VERSION,
        requests: AB_REQUESTS,
        width: AB_CONCURRENCY,
      },
      { kind: 'claim', label: 'claim cycle (GET limit=5 + PUT)', query: NESTED_QUERY, version: NESTED_VERSION, cycles: NESTED_ALLOCATIONS },
    ],
  };
}

const HOST_INVENTORY = { VCPU: { total: 32 }, MEMORY_MB: { total: 131072 } };
const PLAIN = 'resources=VCPU:1,MEMORY_MB:1024';

/** 10 hosts, each a root with VCPU/MEMORY_MB and `children` leaves of `leaf`. */
function wideCloud(prefix: string, children: number, leaf: Record<string, Record<string, number>>): Cloud {
  return repeat(10, (h) => {
    const root = uuid();
    const host: ProviderSpec = { uuid: root, name: `${prefix}-${h}-${root}`, inventories: HOST_INVENTORY };
    return [
      host,
      ...repeat(
        children,
        (c): ProviderSpec => ({ uuid: uuid(), name: `${prefix}-${h}-leaf${c}-${root}`, parent: root, inventories: leaf }),
      ),
    ];
  });
}

const isolate8 = `${PLAIN}&${repeat(8, (i) => `resources${i + 1}=PGPU:1`).join('&')}&group_policy=isolate`;
const wideIsolate: Scenario = {
  name: 'wide-8',
  title: 'wide trees: 10 hosts x 8 children of 1 PGPU, 8 isolated groups (upstream bug 2070257)',
  upstream: false,
  build: () => wideCloud('wide8', 8, { PGPU: { total: 1 } }),
  measures: [
    { kind: 'latency', label: `plain ${PLAIN}&limit=10 (baseline)`, query: `${PLAIN}&limit=10`, version: '1.36', reps: 10 },
    { kind: 'latency', label: '8 groups isolate, limit=10', query: `${isolate8}&limit=10`, version: '1.36', reps: 10 },
    { kind: 'latency', label: '8 groups isolate, limit=1000', query: `${isolate8}&limit=1000`, version: '1.36', reps: 5 },
  ],
};

const none12x6 = `${repeat(6, (i) => `resources${i + 1}=CUSTOM_LEAF:1`).join('&')}&group_policy=none`;
const wideNone: Scenario = {
  name: 'wide-12x6',
  title: 'wide trees: 10 hosts x 12 children of CUSTOM_LEAF:8, 6 groups group_policy=none (~3M combinations per host)',
  upstream: false,
  build: () => wideCloud('wide12', 12, { CUSTOM_LEAF: { total: 8 } }),
  measures: [
    { kind: 'latency', label: `plain ${PLAIN}&limit=10 (baseline)`, query: `${PLAIN}&limit=10`, version: '1.36', reps: 10 },
    { kind: 'latency', label: '6 groups none, limit=10', query: `${none12x6}&limit=10`, version: '1.36', reps: 10 },
    { kind: 'latency', label: '6 groups none, limit=1000', query: `${none12x6}&limit=1000`, version: '1.36', reps: 5 },
  ],
};

/** The bench's first cloud: 1 compute node in 6 matches (a); not what upstream loads. */
const light: Scenario = {
  name: 'light-1000',
  title: "EXTRA, NOT UPSTREAM'S: this project's older lighter cloud (N=1000, 1 in 6 match; 100 nested trees with a sharing disk)",
  upstream: false,
  build: () => {
    const compute = {
      VCPU: { total: 32, allocation_ratio: 16 },
      MEMORY_MB: { total: 131072, allocation_ratio: 1.5 },
      DISK_GB: { total: 2048, max_unit: 2048 },
    };
    const flatTrees = repeat(1000, (i) => [
      { uuid: uuid(), name: `cn-${i}`, inventories: compute, traits: i % 2 === 0 ? ['HW_CPU_X86_AVX2'] : [], aggregates: [AGGS[i % 3]!] },
    ]);
    const shared: ProviderSpec = {
      uuid: uuid(),
      name: 'shared-disk',
      inventories: { DISK_GB: { total: 1_000_000, max_unit: 10_000 } },
      traits: ['MISC_SHARES_VIA_AGGREGATE'],
      aggregates: [NESTED_AGG],
    };
    const nestedTrees = repeat(100, (i) => {
      const cn = uuid();
      return [
        { uuid: cn, name: `ncn-${i}`, aggregates: [NESTED_AGG] },
        ...[0, 1].flatMap((numa) => {
          const node = uuid();
          return [
            {
              uuid: node,
              name: `ncn-${i}-numa${numa}`,
              parent: cn,
              inventories: { VCPU: { total: 16 }, MEMORY_MB: { total: 65536 } },
              traits: ['HW_NUMA_ROOT'],
            },
            ...[0, 1].map((pf) => ({
              uuid: uuid(),
              name: `ncn-${i}-numa${numa}-pf${pf}`,
              parent: node,
              inventories: { SRIOV_NET_VF: { total: 16 }, NET_BW_EGR_KILOBIT_PER_SEC: { total: 10_000_000 } },
            })),
          ];
        }),
      ];
    });
    return [[shared], ...flatTrees, ...nestedTrees];
  },
  measures: [
    { kind: 'latency', label: '(a) member_of + AVX2 (167 candidates)', query: QUERY_A, version: '1.36', reps: 20 },
    { kind: 'latency', label: '(b) same, limit=10', query: `${QUERY_A}&limit=10`, version: '1.36', reps: 20 },
    { kind: 'throughput', label: '(c) (a) at concurrency 10', query: QUERY_A, version: '1.36', requests: 300, width: 10 },
    { kind: 'latency', label: '(e) nested granular + same_subtree', query: QUERY_E, version: '1.36', reps: 20 },
    { kind: 'latency', label: '(e) same, limit=10', query: `${QUERY_E}&limit=10`, version: '1.36', reps: 20 },
  ],
};

/**
 * Scale (not perfload's): N providers loaded straight into the file, a full
 * and a limit=10 answer (10 samples each) and a claim cycle; with `consumers`,
 * that many consumers already allocated across them.
 */
function scale(n: number, consumers = 0): Scenario {
  const total = n + PLACELOAD_PREHEAT;
  return {
    name: consumers ? `scale-${n / 1000}k-${consumers / 1_000_000}m-consumers` : `scale-${n / 1000}k`,
    title: `scale: flat N=${n.toLocaleString('en')} placeload providers${consumers ? `, ${consumers.toLocaleString('en')} consumers on them` : ''} (direct load)`,
    upstream: false,
    build: () => repeat(total, (i) => [placeloadProvider(uuid(), i)]),
    directLoadLocal: true,
    ...(consumers ? { consumers } : {}),
    measures: [
      { kind: 'latency', label: `full answer (${total} candidates)`, query: FLAT_QUERY, version: FLAT_VERSION, reps: 10 },
      { kind: 'latency', label: 'limit=10', query: `${FLAT_QUERY}&limit=10`, version: FLAT_VERSION, reps: 10 },
      { kind: 'claim', label: 'claim cycle (GET limit=5 + PUT)', query: FLAT_QUERY, version: FLAT_VERSION, cycles: 20 },
    ],
  };
}

export const SCENARIOS: Scenario[] = [
  flat(PERFLOAD_COUNT, { requests: AB_REQUESTS, cycles: FLAT_ALLOCATIONS, full: true }),
  nested(200, " (the issue's size; upstream loads 1000)"),
  nested(NESTED_PERFLOAD_TREES, ''),
  wideIsolate,
  wideNone,
  flat(5000, { requests: 100, cycles: 20, full: true }),
  flat(100_000, { requests: 0, cycles: 0, full: false, direct: true }),
  light,
  scale(10_000),
  scale(100_000),
  scale(20_000, 1_000_000),
  scale(200_000),
];

/** `npm run bench` with no --scenarios. */
export const QUICK = ['flat-1000', 'nested-200', 'nested-1000', 'wide-8'];
