// FROZEN COPY of src/placement/candidates/present/json.ts as it was before
// the answer's bytes were kept per provider between answers: the oracle of
// test/placement/candidates-json-differential.test.ts. Do not improve it.
// The answer of presentCandidates() written straight to JSON bytes, byte for
// byte what JSON.stringify(presentCandidates(...)) gives, UTF-8 encoded: a
// full answer at N=5000 would otherwise build ~25,000 objects (most keyed by
// uuid, which V8 keeps as slow dictionaries) only for JSON.stringify to walk
// them again. Bytes rather than text: a large answer is tens of thousands of
// pieces, and as a string it is a tree of as many pieces that must be
// flattened and encoded again to reach the socket (what that cost:
// docs/performance.md#figures-behind-the-code).
// Every fixed piece (provider uuids, class names, summary templates) is
// encoded once and copied. The differential test checks both spellings agree.
import { type ProviderNode, type SummaryTemplate, type Usage, usedOf } from '../../../src/placement/candidates/research.js';
import type { AllocationRequest, Piece } from '../../../src/placement/candidates/search.js';
import type { Presentation } from '../../../src/placement/candidates/present/index.js';

const encoder = new TextEncoder();
const utf8 = (text: string): Uint8Array => encoder.encode(text);
const quote = JSON.stringify;

/** A growable byte buffer the answer is written into. */
class JsonWriter {
  private buffer: Uint8Array<ArrayBuffer>;
  private length = 0;

  constructor(expectedBytes: number) {
    this.buffer = new Uint8Array(Math.max(1024, expectedBytes));
  }

  private room(bytes: number): void {
    if (this.length + bytes <= this.buffer.length) return;
    const grown = new Uint8Array(Math.max(this.buffer.length * 2, this.length + bytes));
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
  }

  bytes(piece: Uint8Array): void {
    this.room(piece.length);
    this.buffer.set(piece, this.length);
    this.length += piece.length;
  }

  /** One ASCII character (punctuation). */
  char(code: number): void {
    this.room(1);
    this.buffer[this.length++] = code;
  }

  /** A number as JSON.stringify spells it; whole numbers digit by digit. */
  number(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) {
      this.bytes(utf8(quote(value)));
      return;
    }
    let digits = 1;
    for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits += 1;
    this.room(digits);
    let at = this.length + digits;
    let rest = value;
    do {
      this.buffer[--at] = 48 + (rest % 10);
      rest = Math.floor(rest / 10);
    } while (rest > 0);
    this.length += digits;
  }

  result(): Uint8Array<ArrayBuffer> {
    return this.buffer.subarray(0, this.length);
  }
}

const COMMA = 44;
const COLON = 58;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const CLOSE_BRACE = 125;
const START = utf8('{"allocation_requests":[');
const SUMMARIES = utf8('],"provider_summaries":{');
const END = utf8('}}');
const DICT_ALLOCATIONS = utf8('{"allocations":{');
const LIST_ALLOCATIONS = utf8('{"allocations":[');
const RESOURCES = utf8(':{"resources":{');
const CLOSE_TWO = utf8('}}');
const MAPPINGS = utf8(',"mappings":{');
const LIST_PROVIDER = utf8('{"resource_provider":{"uuid":');
const LIST_RESOURCES = utf8('},"resources":{');

/** Class names, trait lists and suffixes, encoded once per process (names are few; a cloud repeats them on every provider). */
const quotedNames = new Map<string, Uint8Array>();
function quotedName(name: string): Uint8Array {
  let quoted = quotedNames.get(name);
  if (quoted === undefined) {
    if (quotedNames.size > 50_000) quotedNames.clear();
    quotedNames.set(name, (quoted = utf8(quote(name))));
  }
  return quoted;
}

/** A summary's trait list, once per Set: the trees kept in memory share one Set per distinct list. */
const traitLists = new WeakMap<ReadonlySet<string>, string>();
function traitList(traits: ReadonlySet<string>): string {
  let list = traitLists.get(traits);
  if (list === undefined) traitLists.set(traits, (list = `[${[...traits].map((name) => quote(name)).join(',')}]`));
  return list;
}

export function candidatesJson(
  chosen: AllocationRequest[],
  nodes: ReadonlyMap<number, ProviderNode>,
  usage: Usage,
  classNameById: ReadonlyMap<number, string>,
  requestedClasses: ReadonlySet<string>,
  shape: Presentation,
): Uint8Array<ArrayBuffer> {
  // Nodes of the trees kept in memory carry their uuid's bytes; the SQL engine's are encoded once per request.
  const quotedUuids = new Map<number, Uint8Array>();
  const uuidOf = (id: number): Uint8Array => {
    const node = nodes.get(id)!;
    if (node.uuidJson !== undefined) return node.uuidJson;
    let quoted = quotedUuids.get(id);
    if (quoted === undefined) quotedUuids.set(id, (quoted = utf8(quote(node.uuid))));
    return quoted;
  };
  const classOf = (id: number): Uint8Array => quotedName(classNameById.get(id)!);
  // About 250 bytes per request and 300 per summary: a guess that saves most regrowth.
  const out = new JsonWriter(chosen.length * 250 + Math.min(nodes.size, 20_000) * 300);
  const usedProviders = new Set<number>();
  out.bytes(START);
  for (let i = 0; i < chosen.length; i += 1) {
    const request = chosen[i]!;
    if (i > 0) out.char(COMMA);
    for (const piece of request.pieces) usedProviders.add(piece.providerId);
    if (shape.dictShape) dictRequest(out, request, uuidOf, classOf, shape.withMappings);
    else listRequest(out, request, uuidOf, classOf);
  }
  out.bytes(SUMMARIES);
  summaries(out, usedProviders, nodes, usage, requestedClasses, shape);
  out.bytes(END);
  return out.result();
}

/** Whether a piece before `index` is on the same provider (pieces are a handful: no Map). */
function seenBefore(pieces: Piece[], index: number): boolean {
  const providerId = pieces[index]!.providerId;
  for (let i = 0; i < index; i += 1) if (pieces[i]!.providerId === providerId) return true;
  return false;
}

/** `"CLASS":amount,...` of one provider's pieces, from `from` on, in order (the object form's key order). */
function resourcesOf(out: JsonWriter, pieces: Piece[], from: number, classOf: (id: number) => Uint8Array): void {
  const providerId = pieces[from]!.providerId;
  let first = true;
  for (let i = from; i < pieces.length; i += 1) {
    const piece = pieces[i]!;
    if (piece.providerId !== providerId) continue;
    if (!first) out.char(COMMA);
    first = false;
    out.bytes(classOf(piece.classId));
    out.char(COLON);
    out.number(piece.amount);
  }
}

function dictRequest(
  out: JsonWriter,
  request: AllocationRequest,
  uuidOf: (id: number) => Uint8Array,
  classOf: (id: number) => Uint8Array,
  withMappings: boolean,
): void {
  const { pieces } = request;
  out.bytes(DICT_ALLOCATIONS);
  // Providers in order of first appearance, as the object form adds them.
  let first = true;
  for (let i = 0; i < pieces.length; i += 1) {
    if (seenBefore(pieces, i)) continue;
    if (!first) out.char(COMMA);
    first = false;
    out.bytes(uuidOf(pieces[i]!.providerId));
    out.bytes(RESOURCES);
    resourcesOf(out, pieces, i, classOf);
    out.bytes(CLOSE_TWO);
  }
  out.char(CLOSE_BRACE);
  if (withMappings) {
    out.bytes(MAPPINGS);
    let firstSuffix = true;
    for (const suffix of inObjectKeyOrder(request.mappings)) {
      if (!firstSuffix) out.char(COMMA);
      firstSuffix = false;
      out.bytes(quotedName(suffix));
      out.char(COLON);
      out.char(OPEN_BRACKET);
      const ids = request.mappings.get(suffix)!;
      for (let i = 0; i < ids.length; i += 1) {
        if (i > 0) out.char(COMMA);
        out.bytes(uuidOf(ids[i]!));
      }
      out.char(CLOSE_BRACKET);
    }
    out.char(CLOSE_BRACE);
  }
  out.char(CLOSE_BRACE);
}

function listRequest(
  out: JsonWriter,
  request: AllocationRequest,
  uuidOf: (id: number) => Uint8Array,
  classOf: (id: number) => Uint8Array,
): void {
  const { pieces } = request;
  out.bytes(LIST_ALLOCATIONS);
  let first = true;
  for (let i = 0; i < pieces.length; i += 1) {
    if (seenBefore(pieces, i)) continue;
    if (!first) out.char(COMMA);
    first = false;
    out.bytes(LIST_PROVIDER);
    out.bytes(uuidOf(pieces[i]!.providerId));
    out.bytes(LIST_RESOURCES);
    resourcesOf(out, pieces, i, classOf);
    out.bytes(CLOSE_TWO);
  }
  out.char(CLOSE_BRACKET);
  out.char(CLOSE_BRACE);
}

/** A JS object lists integer-like keys first, ascending ("1" before "_NIC"), then the rest in insertion order. */
function inObjectKeyOrder(mappings: ReadonlyMap<string, number[]>): Iterable<string> {
  let anyIndex = false;
  for (const suffix of mappings.keys()) if (isIndex(suffix)) anyIndex = true;
  if (!anyIndex) return mappings.keys();
  // Every candidate of a request lists the same suffixes in the same order: sort once.
  const keys = [...mappings.keys()];
  if (!sameKeys(keys, lastKeys)) {
    const indices = keys.filter(isIndex).sort((a, b) => Number(a) - Number(b));
    lastOrder = [...indices, ...keys.filter((key) => !isIndex(key))];
    lastKeys = keys;
  }
  return lastOrder;
}
let lastKeys: string[] = [];
let lastOrder: string[] = [];
const sameKeys = (a: string[], b: string[]): boolean => a.length === b.length && a.every((key, i) => key === b[i]);

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

/** The presentation of every microversion from 1.29 (nested-aware, traits, all resources): what schedulers ask with. */
const CURRENT_SHAPE = { nestedAware: true, withTraits: true, allResources: true } as const;
const CURRENT_SHAPE_KEY = shapeKeyOf(CURRENT_SHAPE, new Set());

function shapeKeyOf(
  shape: Pick<Presentation, 'nestedAware' | 'withTraits' | 'allResources'>,
  requestedClasses: ReadonlySet<string>,
): string {
  return `${Number(shape.nestedAware)}${Number(shape.withTraits)}${shape.allResources ? '*' : [...requestedClasses].join(',')}`;
}

/**
 * Builds the summary templates of the current presentation for providers
 * that have none, ahead of the first answer that names them (the trees kept
 * in memory do this as they are refreshed, off the request path: for 1,000
 * providers it was most of a fresh process's first full answer).
 */
export function prepareSummaryTemplates(providers: Iterable<ProviderNode>, nodes: NodeLookup): void {
  for (const node of providers)
    if (!node.summaryTemplate) node.summaryTemplate = summaryTemplate(node, nodes, EMPTY_CLASSES, CURRENT_SHAPE, CURRENT_SHAPE_KEY);
}
const EMPTY_CLASSES: ReadonlySet<string> = new Set();

/** What a summary needs of the other nodes: its parent's and root's uuid. */
type NodeLookup = Pick<ReadonlyMap<number, ProviderNode>, 'get'>;

/** A provider's summary as JSON bytes with a gap for each usage figure it shows. */
function summaryTemplate(
  node: ProviderNode,
  nodes: NodeLookup,
  requestedClasses: ReadonlySet<string>,
  shape: Pick<Presentation, 'nestedAware' | 'withTraits' | 'allResources'>,
  shapeKey: string,
): SummaryTemplate {
  const parts: Uint8Array[] = [];
  const classIds: number[] = [];
  let text = `${quote(node.uuid)}:{"resources":{`;
  // (provider, class) is unique, so no key repeats.
  for (const inv of node.inventories) {
    if (!shape.allResources && !requestedClasses.has(inv.className)) continue;
    text += `${classIds.length === 0 ? '' : ','}${quote(inv.className)}:{"capacity":${quote(inv.capacity)},"used":`;
    parts.push(utf8(text));
    classIds.push(inv.classId);
    text = '}';
  }
  text += '}';
  if (shape.withTraits) text += `,"traits":${traitList(node.traits)}`;
  if (shape.nestedAware) {
    const parent = node.parentId === null ? undefined : nodes.get(node.parentId);
    const root = nodes.get(node.rootId);
    text += `,"parent_provider_uuid":${parent ? quote(parent.uuid) : 'null'},"root_provider_uuid":${quote(root ? root.uuid : node.uuid)}`;
  }
  parts.push(utf8(`${text}}`));
  return { shape: shapeKey, parts, classIds };
}

function summaries(
  out: JsonWriter,
  usedProviders: ReadonlySet<number>,
  nodes: ReadonlyMap<number, ProviderNode>,
  usage: Usage,
  requestedClasses: ReadonlySet<string>,
  shape: Presentation,
): void {
  const usedRoots = new Set<number>();
  if (shape.nestedAware) for (const id of usedProviders) usedRoots.add(nodes.get(id)!.rootId);
  const shapeKey = shapeKeyOf(shape, requestedClasses);
  let first = true;
  for (const node of nodes.values()) {
    if (shape.nestedAware ? !usedRoots.has(node.rootId) : !usedProviders.has(node.id)) continue;
    let template = node.summaryTemplate;
    if (!template || template.shape !== shapeKey) {
      template = summaryTemplate(node, nodes, requestedClasses, shape, shapeKey);
      node.summaryTemplate = template;
    }
    if (!first) out.char(COMMA);
    first = false;
    const { parts, classIds } = template;
    out.bytes(parts[0]!);
    for (let i = 0; i < classIds.length; i += 1) {
      out.number(usedOf(usage, node.id, classIds[i]!));
      out.bytes(parts[i + 1]!);
    }
  }
}
