// The candidates engine run over a made-up cloud held in memory, with no
// database at all: for a Worker isolate, which may do no I/O while its
// module is evaluated, and whose first request would otherwise run every line
// of the engine for the first time (lazy compilation, no type feedback: a
// fresh isolate's first flat-1000 answer cost 6-8x its warm one, bench/README.md).
// The workers platform evaluates the module when it starts the isolate, before
// a request arrives, so what runs here is not a request's CPU time.
//
// The reader below answers the statements of the in-memory model's research
// batch (model-research.ts: name lookups, the tree refresh, usage, shared
// counters, taints) for a perfload-shaped cloud, in the packed shapes the real
// statements return; the engine, its model, search and JSON writer are the
// real ones. Its model is keyed by this reader, never by a real store's.
import type { InStatement, ResultSet, Row } from '@libsql/client';
import type { BatchReader } from '../../db/client.js';
import { Microversion } from '../../microversion.js';
import { STANDARD_RESOURCE_CLASSES } from '../standard-names.generated.js';
import { MAX_VERSION } from '../versions.js';
import { findAllocationCandidatesJson } from './index.js';
import { parseCandidateQueryString } from './parse.js';

const LATEST = Microversion.parse(MAX_VERSION)!;

const AGGREGATE = { id: 1, uuid: '5a1b7c2e-0000-4000-8000-00000000a001' };
const TRAITS = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2', 'COMPUTE_VOLUME_MULTI_ATTACH', 'HW_NUMA_ROOT', 'CUSTOM_FOO'];
const traitId = (name: string) => TRAITS.indexOf(name) + 1;
const classId = (name: string) => STANDARD_RESOURCE_CLASSES.indexOf(name as (typeof STANDARD_RESOURCE_CLASSES)[number]);

/** The queries warmed: perfload's flat and nested ones (as Nova sends them, with and without a limit). */
export const WARM_UP_QUERIES = [
  `resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${AGGREGATE.uuid}&required=HW_CPU_X86_AVX2`,
  'resources=DISK_GB:10&required=COMPUTE_VOLUME_MULTI_ATTACH&resources_COMPUTE=VCPU:1,MEMORY_MB:256' +
    '&required_COMPUTE=CUSTOM_FOO&resources_FPGA=FPGA:1&group_policy=none&same_subtree=_COMPUTE,_FPGA',
  `resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=${AGGREGATE.uuid}&required=HW_CPU_X86_AVX2&limit=10`,
];

type Inventory = [name: string, total: number, reserved: number, min: number, max: number, step: number];

/** One provider row and its inventories, as the refresh statement packs them. */
interface Made {
  providers: (string | number | null)[][];
  inventories: (string | number | null)[][];
  roots: number[];
}

/** `hosts` placeload hosts and `trees` nested perfload trees (compute node, 2 NUMA nodes, FPGA and VGPU leaves). */
function makeCloud(hosts: number, trees: number): Made {
  const made: Made = { providers: [], inventories: [], roots: [] };
  let id = 0;
  const add = (parent: number | null, root: number | null, traits: string[], aggs: number[], inventories: Inventory[]): number => {
    id += 1;
    const uuid = `00000000-0000-4000-8000-${id.toString(16).padStart(12, '0')}`;
    const sorted = [...traits].sort((a, b) => traitId(a) - traitId(b));
    made.providers.push([id, uuid, parent, root ?? id, sorted.length ? sorted.join('\u001f') : null, aggs.length ? aggs.join(',') : null]);
    if (root === null) made.roots.push(id);
    for (const [name, total, reserved, min, max, step] of [...inventories].sort((a, b) => classId(a[0]) - classId(b[0])))
      made.inventories.push([id, classId(name), name, total, reserved, min, max, step, 1.0]);
    return id;
  };
  for (let i = 0; i < hosts; i += 1) {
    // placeload's cycles: one, two or three traits; every host in the aggregate.
    const traits = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2'].slice(0, 1 + (i % 2));
    add(
      null,
      null,
      traits,
      [AGGREGATE.id],
      [
        ['VCPU', 32, 0, 1, 16, 1],
        ['MEMORY_MB', 8192, 0, 128, 8192, 1],
        ['DISK_GB', 8192, 0, 5, 8192, 1],
      ],
    );
  }
  for (let i = 0; i < trees; i += 1) {
    const cn = add(null, null, ['COMPUTE_VOLUME_MULTI_ATTACH'], [], [['DISK_GB', 20480, 0, 1, 20480, 1]]);
    const numa0 = add(
      cn,
      cn,
      ['HW_NUMA_ROOT'],
      [],
      [
        ['VCPU', 4, 2, 1, 4, 1],
        ['MEMORY_MB', 2048, 0, 512, 2048, 256],
      ],
    );
    add(numa0, cn, [], [], [['FPGA', 1, 0, 1, 1, 1]]);
    add(numa0, cn, [], [], [['VGPU', 8, 0, 1, 8, 1]]);
    const numa1 = add(
      cn,
      cn,
      ['HW_NUMA_ROOT', 'CUSTOM_FOO'],
      [],
      [
        ['VCPU', 4, 0, 1, 4, 1],
        ['MEMORY_MB', 2048, 0, 256, 1024, 1],
      ],
    );
    add(numa1, cn, [], [], [['FPGA', 1, 0, 1, 1, 1]]);
    add(numa1, cn, [], [], [['FPGA', 1, 0, 1, 1, 1]]);
  }
  return made;
}

/** A libSQL row: values by index and by column name. */
function row(values: Record<string, string | number | null>): Row {
  const r = Object.values(values) as unknown as Row;
  for (const [name, value] of Object.entries(values)) Object.defineProperty(r, name, { value, enumerable: false });
  return r;
}

const result = (rows: Row[]): ResultSet =>
  ({ rows, columns: [], columnTypes: [], rowsAffected: 0, lastInsertRowid: undefined, toJSON: () => ({}) }) as ResultSet;

const namesOf = (statement: InStatement): string[] => {
  const args = typeof statement === 'string' ? undefined : (statement.args as Record<string, unknown> | undefined);
  return typeof args?.names === 'string' ? (JSON.parse(args.names) as string[]) : [];
};

/** Answers the research batch's statements from the made-up cloud (one snapshot: nothing ever changes). */
export function syntheticReader(hosts: number, trees: number): BatchReader {
  const cloud = makeCloud(hosts, trees);
  const everything = JSON.stringify({
    epoch: 'warm-up',
    seq: 1,
    changed: cloud.roots,
    providers: cloud.providers,
    inventories: cloud.inventories,
  });
  const unchanged = JSON.stringify({ epoch: 'warm-up', seq: 1, changed: [], providers: [], inventories: [] });
  // Some usage, so answers show used amounts: a VCPU and some memory on every third provider with them.
  const usage = JSON.stringify(
    cloud.inventories.filter((inv, i) => i % 3 === 0 && (inv[2] === 'VCPU' || inv[2] === 'MEMORY_MB')).map((inv) => [inv[0], inv[1], 1]),
  );
  const uuidRoots = new Map(cloud.providers.map((p) => [String(p[1]), Number(p[3])]));
  const answer = (statement: InStatement): ResultSet => {
    const sql = typeof statement === 'string' ? statement : statement.sql;
    if (sql.startsWith('SELECT id, name FROM resource_classes'))
      return result(namesOf(statement).flatMap((name) => (classId(name) >= 0 ? [row({ id: classId(name), name })] : [])));
    if (sql.startsWith('SELECT id, name FROM traits'))
      return result(namesOf(statement).flatMap((name) => (traitId(name) > 0 ? [row({ id: traitId(name), name })] : [])));
    if (sql.startsWith('SELECT id, uuid FROM placement_aggregates'))
      return result(namesOf(statement).flatMap((uuid) => (uuid === AGGREGATE.uuid ? [row({ id: AGGREGATE.id, uuid })] : [])));
    if (sql.startsWith('SELECT uuid, root_provider_id FROM resource_providers'))
      return result(
        namesOf(statement).flatMap((uuid) => (uuidRoots.has(uuid) ? [row({ uuid, root_provider_id: uuidRoots.get(uuid)! })] : [])),
      );
    if (sql.includes("'epoch'")) {
      const args = typeof statement === 'string' ? {} : (statement.args as Record<string, unknown>);
      return result([row({ refresh: 'cap' in args ? everything : unchanged })]);
    }
    if (sql.includes('json_array(rp, cls, used)')) return result([row({ usage })]);
    // A cloud without counters: the statement's CASE has no branch to take (NULL), as in a real database.
    if (sql.includes('ext_provider_counters')) return result([row({ counters: null })]);
    if (sql.includes('ext_provider_taints')) return result([row({ taints: '[]' })]);
    throw new Error(`engine warm-up: no synthetic answer for ${sql.slice(0, 80)}`);
  };
  return { readBatch: async (statements) => statements.map(answer) };
}

export interface EngineWarmUpDone {
  answers: number;
  bytes: number;
}

/**
 * `rounds` rounds of WARM_UP_QUERIES over a made-up cloud of `hosts` flat
 * hosts and `trees` nested trees, the answers computed and dropped. Throws
 * when the engine refuses one (the reader's answers no longer match the
 * statements the engine sends: test/candidates/engine-warm-up.test.ts).
 */
export async function warmUpEngine(rounds: number, hosts = 200, trees = 40): Promise<EngineWarmUpDone> {
  const reader = syntheticReader(hosts, trees);
  const requests = WARM_UP_QUERIES.map((query) => parseCandidateQueryString(query, LATEST));
  let answers = 0;
  let bytes = 0;
  for (let round = 0; round < rounds; round += 1) {
    for (const request of requests) {
      const json = await findAllocationCandidatesJson(reader, request, LATEST, {
        randomize: false,
        maxCandidates: 0,
        treeCacheProviders: 20_000,
        now: 0,
      });
      answers += 1;
      bytes += json.length;
    }
  }
  return { answers, bytes };
}
