// The answer of presentCandidates() written straight to JSON text, byte for
// byte what JSON.stringify(presentCandidates(...)) gives: a full answer at
// N=5000 would otherwise build ~25,000 objects (most keyed by uuid, which V8
// keeps as slow dictionaries) only for JSON.stringify to walk them again.
// The differential test checks both spellings agree.
import { type ProviderNode, type SummaryTemplate, type Usage, usedOf } from '../research.js';
import type { AllocationRequest } from '../search.js';
import type { Presentation } from './index.js';

const quote = JSON.stringify;

/** Class and trait names, quoted once per process (names are few; a cloud repeats them on every provider). */
const quotedNames = new Map<string, string>();
function quoteName(name: string): string {
  let quoted = quotedNames.get(name);
  if (quoted === undefined) {
    if (quotedNames.size > 50_000) quotedNames.clear();
    quotedNames.set(name, (quoted = quote(name)));
  }
  return quoted;
}

/** A summary's trait list, once per Set: the trees kept in memory share one Set per distinct list. */
const traitLists = new WeakMap<ReadonlySet<string>, string>();
function traitList(traits: ReadonlySet<string>): string {
  let list = traitLists.get(traits);
  if (list === undefined) traitLists.set(traits, (list = `[${[...traits].map(quoteName).join(',')}]`));
  return list;
}

export function candidatesJson(
  chosen: AllocationRequest[],
  nodes: ReadonlyMap<number, ProviderNode>,
  usage: Usage,
  classNameById: ReadonlyMap<number, string>,
  requestedClasses: ReadonlySet<string>,
  shape: Presentation,
): string {
  const quotedUuid = new Map<number, string>();
  const uuidOf = (id: number): string => {
    const node = nodes.get(id)!;
    if (node.quotedUuid !== undefined) return node.quotedUuid;
    let quoted = quotedUuid.get(id);
    if (quoted === undefined) quotedUuid.set(id, (quoted = quote(node.uuid)));
    return quoted;
  };
  const classOf = (id: number): string => quoteName(classNameById.get(id)!);
  const usedProviders = new Set<number>();
  let out = '{"allocation_requests":[';
  for (let i = 0; i < chosen.length; i += 1) {
    const request = chosen[i]!;
    if (i > 0) out += ',';
    for (const piece of request.pieces) usedProviders.add(piece.providerId);
    out += shape.dictShape ? dictRequest(request, uuidOf, classOf, shape.withMappings) : listRequest(request, uuidOf, classOf);
  }
  out += '],"provider_summaries":{';
  out += summaries(usedProviders, nodes, usage, requestedClasses, shape, uuidOf);
  return `${out}}}`;
}

/** A JS object lists integer-like keys first, ascending ("1" before "_NIC"), then the rest in insertion order. */
function inObjectKeyOrder(keys: string[], entries: string[]): string[] {
  let anyIndex = false;
  for (const key of keys) if (isIndex(key)) anyIndex = true;
  if (!anyIndex) return entries;
  // Every candidate of a request lists the same suffixes in the same order: sort once.
  if (!sameKeys(keys, lastKeys)) {
    const order = keys.map((key, i) => ({ key, i }));
    const indices = order.filter((k) => isIndex(k.key)).sort((a, b) => Number(a.key) - Number(b.key));
    lastOrder = [...indices, ...order.filter((k) => !isIndex(k.key))].map((k) => k.i);
    lastKeys = keys;
  }
  return lastOrder.map((i) => entries[i]!);
}
let lastKeys: string[] = [];
let lastOrder: number[] = [];
const sameKeys = (a: string[], b: string[]): boolean => a.length === b.length && a.every((key, i) => key === b[i]);

/** A provider's summary as JSON text with a gap for each usage figure it shows. */
function summaryTemplate(
  node: ProviderNode,
  nodes: ReadonlyMap<number, ProviderNode>,
  requestedClasses: ReadonlySet<string>,
  shape: Presentation,
  shapeKey: string,
  uuidOf: (id: number) => string,
): SummaryTemplate {
  const parts: string[] = [];
  const classIds: number[] = [];
  let text = `${uuidOf(node.id)}:{"resources":{`;
  // (provider, class) is unique, so no key repeats.
  for (const inv of node.inventories) {
    if (!shape.allResources && !requestedClasses.has(inv.className)) continue;
    text += `${classIds.length === 0 ? '' : ','}${quoteName(inv.className)}:{"capacity":${inv.capacity},"used":`;
    parts.push(text);
    classIds.push(inv.classId);
    text = '}';
  }
  text += '}';
  if (shape.withTraits) text += `,"traits":${traitList(node.traits)}`;
  if (shape.nestedAware) {
    const parent = node.parentId === null ? undefined : nodes.get(node.parentId);
    const root = nodes.get(node.rootId);
    text += `,"parent_provider_uuid":${parent ? uuidOf(parent.id) : 'null'},"root_provider_uuid":${root ? uuidOf(root.id) : quote(node.uuid)}`;
  }
  parts.push(`${text}}`);
  return { shape: shapeKey, parts, classIds };
}

/** Whether a JS object would treat `key` as an array index (ordering it first). Memoised: suffixes repeat in every candidate. */
const indexKeys = new Map<string, boolean>();
function isIndex(key: string): boolean {
  let index = indexKeys.get(key);
  if (index === undefined) {
    if (indexKeys.size > 10_000) indexKeys.clear();
    indexKeys.set(key, (index = /^(?:0|[1-9]\d*)$/.test(key) && Number(key) < 2 ** 32 - 1));
  }
  return index;
}

/** Providers in order of first appearance, each with its pieces' classes in order (as the object form's key order). */
function byProvider(request: AllocationRequest, classOf: (id: number) => string): Map<number, string> | [number, string][] {
  const { pieces } = request;
  // One provider (a flat host): its classes in order, without a Map.
  if (pieces.length > 0 && pieces.every((p) => p.providerId === pieces[0]!.providerId)) {
    let resources = '';
    for (const piece of pieces) resources += `${resources === '' ? '' : ','}${classOf(piece.classId)}:${piece.amount}`;
    return [[pieces[0]!.providerId, resources]];
  }
  const resources = new Map<number, string>();
  for (const piece of request.pieces) {
    const seen = resources.get(piece.providerId);
    const entry = `${classOf(piece.classId)}:${piece.amount}`;
    resources.set(piece.providerId, seen === undefined ? entry : `${seen},${entry}`);
  }
  return resources;
}

function dictRequest(
  request: AllocationRequest,
  uuidOf: (id: number) => string,
  classOf: (id: number) => string,
  withMappings: boolean,
): string {
  let out = '{"allocations":{';
  let first = true;
  for (const [providerId, resources] of byProvider(request, classOf)) {
    out += `${first ? '' : ','}${uuidOf(providerId)}:{"resources":{${resources}}}`;
    first = false;
  }
  out += '}';
  if (withMappings) {
    const entries: string[] = [];
    const keys: string[] = [];
    for (const [suffix, ids] of request.mappings) {
      let list = '';
      for (const id of ids) list += `${list === '' ? '' : ','}${uuidOf(id)}`;
      entries.push(`${quoteName(suffix)}:[${list}]`);
      keys.push(suffix);
    }
    out += `,"mappings":{${inObjectKeyOrder(keys, entries).join(',')}}`;
  }
  return `${out}}`;
}

function listRequest(request: AllocationRequest, uuidOf: (id: number) => string, classOf: (id: number) => string): string {
  const allocations: string[] = [];
  for (const [providerId, resources] of byProvider(request, classOf)) {
    allocations.push(`{"resource_provider":{"uuid":${uuidOf(providerId)}},"resources":{${resources}}}`);
  }
  return `{"allocations":[${allocations.join(',')}]}`;
}

function summaries(
  usedProviders: ReadonlySet<number>,
  nodes: ReadonlyMap<number, ProviderNode>,
  usage: Usage,
  requestedClasses: ReadonlySet<string>,
  shape: Presentation,
  uuidOf: (id: number) => string,
): string {
  const usedRoots = new Set<number>();
  if (shape.nestedAware) for (const id of usedProviders) usedRoots.add(nodes.get(id)!.rootId);
  const shapeKey = `${Number(shape.nestedAware)}${Number(shape.withTraits)}${shape.allResources ? '*' : [...requestedClasses].join(',')}`;
  const entries: string[] = [];
  for (const node of nodes.values()) {
    if (shape.nestedAware ? !usedRoots.has(node.rootId) : !usedProviders.has(node.id)) continue;
    let template = node.summaryTemplate;
    if (!template || template.shape !== shapeKey) {
      template = summaryTemplate(node, nodes, requestedClasses, shape, shapeKey, uuidOf);
      node.summaryTemplate = template;
    }
    const { parts, classIds } = template;
    let text = parts[0]!;
    for (let i = 0; i < classIds.length; i += 1) text += `${usedOf(usage, node.id, classIds[i]!)}${parts[i + 1]!}`;
    entries.push(text);
  }
  return entries.join(',');
}
