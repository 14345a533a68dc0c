// Differential test of the allocation candidates' JSON writer
// (present/json.ts), which keeps each provider's bytes of past answers (its
// summary, the allocation requests it anchors) and copies them while they
// come out the same: against the writer as it was before it kept anything
// (./candidates-reference/json-writer.ts) and against JSON.stringify of the
// object presenter (present/index.ts), on thousands of random answers. Each
// random cloud is answered several times over the same node objects while
// what the bytes depend on changes between answers (usage, the
// microversion's shape, the requested classes and amounts, group suffixes,
// a class renamed, a node replaced with its id given to another uuid), as
// the trees kept in memory see it; clouds whose nodes carry no prepared uuid
// bytes stand for the SQL engine's per-request nodes.
import { describe, expect, it } from 'vitest';
import { presentCandidates, type Presentation } from '../../src/placement/candidates/present/index.js';
import { candidatesJson, KeptBytes } from '../../src/placement/candidates/present/json.js';
import type { ProviderNode, Usage } from '../../src/placement/candidates/cloud-model.js';
import type { AllocationRequest, Piece } from '../../src/placement/candidates/search.js';
import { random, type Random } from '../helpers/random.js';
import { candidatesJson as referenceJson } from './candidates-reference/json-writer.js';

const CLASS_NAMES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF', 'CUSTOM_FPGA', 'CUSTOM_NIC_X'];
const TRAIT_NAMES = ['HW_CPU_X86_AVX2', 'COMPUTE_VOLUME_MULTI_ATTACH', 'CUSTOM_FOO', 'MISC_SHARES_VIA_AGGREGATE'];
const SUFFIXES = ['', '_COMPUTE', '_NIC', '1', '2', '10', 'gpu', '0'];
const AMOUNTS = [1, 1, 2, 10, 256, 1024, 2 ** 31 - 1];
const utf8 = new TextEncoder();

interface Cloud {
  nodes: Map<number, ProviderNode>;
  roots: number[];
  classNameById: Map<number, string>;
  /** The nodes carry prepared uuid bytes, as the trees kept in memory do. */
  kept: boolean;
  traitSets: Set<string>[];
}

function makeNode(r: Random, cloud: Cloud, id: number, parentId: number | null, rootId: number): ProviderNode {
  const uuid = crypto.randomUUID();
  const inventories = [...cloud.classNameById.keys()]
    .filter(() => r.chance(0.5))
    .sort((a, b) => a - b)
    .map((classId) => ({
      classId,
      className: cloud.classNameById.get(classId)!,
      capacity: r.chance(0.1) ? r.int(1, 100) * 1.5 : r.int(0, 5000),
    }));
  return {
    id,
    uuid,
    parentId,
    rootId,
    // The model shares one Set per distinct trait list.
    traits: r.pick(cloud.traitSets),
    aggregates: new Set(),
    inventories,
    ...(cloud.kept ? { uuidJson: utf8.encode(JSON.stringify(uuid)), summaryTemplate: null } : {}),
  };
}

function makeCloud(r: Random): Cloud {
  const classNameById = new Map(CLASS_NAMES.map((name, i) => [i * 3 + 1, name] as const));
  const traitSets = [new Set<string>(), ...Array.from({ length: 3 }, () => new Set(r.some(TRAIT_NAMES, 3)))];
  const cloud: Cloud = { nodes: new Map(), roots: [], classNameById, kept: r.chance(0.8), traitSets };
  let nextId = r.int(1, 50);
  const ids: number[] = [];
  const add = (parentId: number | null, rootId: number | null, depth: number): void => {
    const id = nextId;
    nextId += r.int(1, 3);
    const node = makeNode(r, cloud, id, parentId, rootId ?? id);
    ids.push(id);
    cloud.nodes.set(id, node);
    if (rootId === null) cloud.roots.push(id);
    if (depth < 2) for (let i = r.int(0, depth === 0 ? 3 : 2); i > 0; i -= 1) add(id, rootId ?? id, depth + 1);
  };
  for (let i = r.int(1, 12); i > 0; i -= 1) add(null, null, 0);
  return cloud;
}

function treeOf(cloud: Cloud, rootId: number): number[] {
  return [...cloud.nodes.values()].filter((node) => node.rootId === rootId).map((node) => node.id);
}

/** A request's form apart from its providers: pieces by provider slot, and mappings by slot. */
interface Form {
  pieces: { slot: number; classId: number; amount: number }[];
  mappings: [string, number[]][];
  slots: number;
}

function makeForm(r: Random, cloud: Cloud): Form {
  const slots = r.chance(0.5) ? 1 : r.int(1, 4);
  const classIds = [...cloud.classNameById.keys()];
  const pieces: Form['pieces'] = [];
  for (let slot = 0; slot < slots; slot += 1)
    for (const classId of r.some(classIds, 3)) pieces.push({ slot, classId, amount: r.pick(AMOUNTS) });
  // Pieces of one provider need not be next to each other.
  if (r.chance(0.3)) pieces.sort(() => r.next() - 0.5);
  const mappings: [string, number[]][] = r.chance(0.2)
    ? []
    : r.some(SUFFIXES, 4).map((suffix) => [suffix, r.some([...Array(slots).keys()], 2)]);
  // A group whose providers hold none of the pieces (a resourceless group).
  if (r.chance(0.05)) mappings.push(['_EXTRA', [slots]]);
  return { pieces, mappings, slots: r.chance(0.05) ? slots + 1 : slots };
}

/** Forms, some alike but for which providers hold the pieces or satisfy the groups (one answer's candidates differ so). */
function makeForms(r: Random, cloud: Cloud): Form[] {
  const forms = Array.from({ length: r.int(1, 3) }, () => makeForm(r, cloud));
  if (r.chance(0.5)) {
    const like = forms[0]!;
    forms.push({ ...like, mappings: like.mappings.map(([suffix, slots]) => [suffix, slots.map(() => r.below(like.slots))]) });
  }
  if (r.chance(0.5)) {
    // The same classes and amounts, on other providers of the request.
    const like = forms[0]!;
    const moved = like.pieces.map((piece) => ({ ...piece, slot: r.below(like.slots) }));
    // A provider's class appears once in a request.
    const pieces = moved.filter(
      (piece, i) => !moved.some((other, j) => j < i && other.slot === piece.slot && other.classId === piece.classId),
    );
    forms.push({ ...like, pieces });
  }
  return forms;
}

function makeRequest(r: Random, cloud: Cloud, form: Form): AllocationRequest | null {
  const root = r.pick(cloud.roots);
  const tree = treeOf(cloud, root);
  const pool = r.chance(0.2) ? [...tree, ...treeOf(cloud, r.pick(cloud.roots))] : tree;
  const needed = Math.max(form.slots, ...form.mappings.flatMap(([, slots]) => slots.map((slot) => slot + 1)));
  const distinct = [...new Set(pool)];
  if (distinct.length < needed) return null;
  const providers = [...distinct].sort(() => r.next() - 0.5).slice(0, needed);
  const pieces: Piece[] = form.pieces.map((piece) => ({
    providerId: providers[piece.slot]!,
    classId: piece.classId,
    amount: piece.amount,
  }));
  const mappings = new Map(form.mappings.map(([suffix, slots]) => [suffix, slots.map((slot) => providers[slot]!)] as const));
  return { pieces, mappings };
}

function makeShape(r: Random): Presentation {
  const dictShape = r.chance(0.85);
  return {
    nestedAware: r.chance(0.7),
    allResources: r.chance(0.7),
    withTraits: r.chance(0.7),
    dictShape,
    withMappings: dictShape && r.chance(0.7),
  };
}

function makeUsage(r: Random, cloud: Cloud, usage: Usage = new Map()): Usage {
  for (const node of cloud.nodes.values())
    for (const inv of node.inventories)
      if (r.chance(0.3)) {
        let perClass = usage.get(node.id);
        if (!perClass) usage.set(node.id, (perClass = new Map()));
        perClass.set(inv.classId, r.chance(0.1) ? 0 : r.int(0, 3000));
      }
  return usage;
}

/** Class names given so far by renames: each new, as two classes never share a name. */
let renames = 0;

/** One of the changes between two answers that the kept bytes must follow. */
function change(r: Random, cloud: Cloud, usage: Usage): Usage {
  const what = r.int(0, 5);
  if (what <= 1) return makeUsage(r, cloud, usage);
  if (what === 2) {
    // A tree's change replaces every node of the tree; an id may come back with another uuid.
    const rootId = r.pick(cloud.roots);
    for (const id of treeOf(cloud, rootId)) {
      const old = cloud.nodes.get(id)!;
      const node = makeNode(r, cloud, id, old.parentId, old.rootId);
      if (r.chance(0.5)) node.uuid = old.uuid;
      if (node.uuidJson) node.uuidJson = utf8.encode(JSON.stringify(node.uuid));
      cloud.nodes.set(id, node);
    }
  } else if (what === 3) {
    // A class renamed: the request's names change with it.
    const classId = r.pick([...cloud.classNameById.keys()]);
    renames += 1;
    cloud.classNameById = new Map(cloud.classNameById).set(classId, `CUSTOM_RENAMED_${renames}`);
  } else if (what === 4) {
    return new Map();
  }
  return usage;
}

describe('the candidates JSON writer that keeps bytes between answers', () => {
  it('writes what the writer before it and JSON.stringify of the object presenter write, on thousands of random answers', () => {
    let answers = 0;
    let requests = 0;
    // One presenter's kept bytes across every cloud (ids repeat with other nodes), swept often.
    const kept = new KeptBytes(64);
    for (let seed = 1; seed <= 300; seed += 1) {
      const r = random(seed);
      const cloud = makeCloud(r);
      let usage = makeUsage(r, cloud);
      let shape = makeShape(r);
      let forms = makeForms(r, cloud);
      let requested = new Set(r.some(CLASS_NAMES, 3));
      let chosen: AllocationRequest[] = [];
      for (let round = 0; round < 12; round += 1) {
        if (round === 0 || r.chance(0.3)) {
          chosen = [];
          for (let i = r.int(0, 40); i > 0; i -= 1) {
            const request = makeRequest(r, cloud, r.pick(forms));
            if (request) chosen.push(request);
          }
        }
        const fresh = new Uint8Array(candidatesJson(chosen, cloud.nodes, usage, cloud.classNameById, requested, shape, kept));
        const before = referenceJson(chosen, cloud.nodes, usage, cloud.classNameById, requested, shape);
        const objects = JSON.stringify(presentCandidates(chosen, cloud.nodes, usage, cloud.classNameById, requested, shape));
        const text = new TextDecoder().decode(fresh);
        expect(text, `seed ${seed}, round ${round}`).toBe(new TextDecoder().decode(before));
        expect(text, `seed ${seed}, round ${round}`).toBe(objects);
        answers += 1;
        requests += chosen.length;
        usage = change(r, cloud, usage);
        if (r.chance(0.15)) shape = makeShape(r);
        if (r.chance(0.15)) requested = new Set(r.some(CLASS_NAMES, 3));
        if (r.chance(0.15)) forms = makeForms(r, cloud);
      }
    }
    expect(answers).toBe(3600);
    expect(requests).toBeGreaterThan(30_000);
  });
});
