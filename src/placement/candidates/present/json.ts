// The answer of presentCandidates() written straight to JSON bytes, byte for
// byte what JSON.stringify(presentCandidates(...)) gives, UTF-8 encoded: a
// full answer at N=5000 would otherwise build ~25,000 objects (most keyed by
// uuid, which V8 keeps as slow dictionaries) only for JSON.stringify to walk
// them again. Bytes rather than text: a large answer is tens of thousands of
// pieces, and as a string it is a tree of as many pieces that must be
// flattened and encoded again to reach the socket (what that cost:
// docs/performance.md#figures-behind-the-code).
// Every fixed piece (provider uuids, class names, summary templates) is
// encoded once and copied. Over the trees kept in memory, a provider's
// summary comes out the same answer after answer until its tree or its usage
// changes: the presenter keeps its bytes by node (KeptBytes, below) and copies
// them whole. An allocation request is its form's bytes (classes, amounts,
// suffixes: one template per form) around its providers' uuids, a handful of
// copies per candidate instead of a dozen pieces, nothing kept per provider.
// The differential tests check every spelling agrees
// (candidates-json-differential.test.ts).
import { type ProviderNode, type Usage, usedOf } from '../cloud-model.js';
import type { AllocationRequest, Piece } from '../search.js';
import type { Presentation } from './index.js';

const encoder = new TextEncoder();
const utf8 = (text: string): Uint8Array => encoder.encode(text);
const quote = JSON.stringify;

/** A growable byte buffer the answer is written into. */
class JsonWriter {
  private buffer: Uint8Array<ArrayBuffer>;
  private length = 0;

  constructor(
    expectedBytes: number,
    private readonly kept: KeptBytes,
  ) {
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

  /** Where the next byte goes: a mark for copyFrom(). */
  get mark(): number {
    return this.length;
  }

  /** A copy of what was written since `mark`, to be kept. */
  copyFrom(mark: number): Uint8Array {
    return this.kept.keepBytes(this.buffer, mark, this.length);
  }

  result(): Uint8Array<ArrayBuffer> {
    return this.buffer.subarray(0, this.length);
  }

  /** Writes from the start again (what was written is copied away already). */
  reset(): void {
    this.length = 0;
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
  kept: KeptBytes,
  byTree?: TreeSpans,
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
  const out = new JsonWriter(chosen.length * 250 + Math.min(nodes.size, 20_000) * 300, kept);
  const usedProviders = new Set<number>();
  const forms = new RequestForms(classNameById, shape.withMappings, kept);
  out.bytes(START);
  for (let i = 0; i < chosen.length; i += 1) {
    const request = chosen[i]!;
    if (i > 0) out.char(COMMA);
    const start = out.mark;
    for (const piece of request.pieces) usedProviders.add(piece.providerId);
    if (!shape.dictShape) listRequest(out, request, uuidOf, classOf);
    else formRequest(out, request, forms, uuidOf, classOf, shape.withMappings);
    byTree?.note(REQUESTS, rootOfRequest(request, nodes), start, out.mark);
  }
  out.bytes(SUMMARIES);
  summaries(out, usedProviders, nodes, usage, requestedClasses, shape, kept, byTree);
  out.bytes(END);
  const answer = out.result();
  kept.answerWritten(answer.length);
  return answer;
}

/** The root of a request's providers (its first piece's); undefined without a piece (such a request is kept apart by no tree). */
function rootOfRequest(request: AllocationRequest, nodes: ReadonlyMap<number, ProviderNode>): number | undefined {
  const first = request.pieces[0]?.providerId;
  return first === undefined ? undefined : nodes.get(first)?.rootId;
}

/**
 * One tree's share of an answer, as offsets into its bytes: its allocation
 * requests (comma-separated, `count` of them) and its providers' summaries;
 * a start of -1 for none.
 */
export interface TreeSpan {
  root: number;
  count: number;
  requestsStart: number;
  requestsEnd: number;
  summariesStart: number;
  summariesEnd: number;
}

/** An answer's bytes with its trees' shares, in root order. */
export interface AnswerByTree {
  bytes: Uint8Array<ArrayBuffer>;
  trees: TreeSpan[];
}

const REQUESTS = 0;
const SUMMARY = 1;

/**
 * Where each tree's requests and summaries lie in an answer being written
 * (candidatesJson's `byTree`), when every candidate lies in one tree: the
 * answer can then be put together again with some trees' shares replaced
 * (spliceTrees). Each list comes in root order (the search's anchors, the
 * summaries' trees), so each tree's share is one run and the spans are built
 * as they come; `split` is false when a list's roots did not rise run by run
 * (a tree's share in two runs), or a request's tree was unknown.
 */
export class TreeSpans {
  split = true;
  /** The trees with requests, in root order. */
  private readonly spans: TreeSpan[] = [];
  /** Trees with summaries but no request (none, as a rule), in root order. */
  private readonly summaryOnly: TreeSpan[] = [];
  /** Where the summaries' walk through `spans` stands. */
  private at = 0;
  /** The span the last summary went into. */
  private summarySpan: TreeSpan | null = null;

  // Each branch's stores run on every call (a tree's first request or summary included), so the
  // warm-up's answers (one request per tree) leave no store without type feedback.
  note(kind: typeof REQUESTS | typeof SUMMARY, root: number | undefined, start: number, end: number): void {
    if (root === undefined) {
      this.split = false;
      return;
    }
    if (kind === REQUESTS) {
      let span = this.spans[this.spans.length - 1];
      if (span === undefined || span.root !== root) {
        if (span !== undefined && span.root > root) this.split = false;
        span = { root, count: 0, requestsStart: start, requestsEnd: end, summariesStart: -1, summariesEnd: -1 };
        this.spans.push(span);
      }
      span.requestsEnd = end;
      span.count += 1;
      return;
    }
    let span = this.summarySpan;
    if (span === null || span.root !== root) {
      if (span !== null && span.root > root) this.split = false;
      const { spans } = this;
      while (this.at < spans.length && spans[this.at]!.root < root) this.at += 1;
      span = spans[this.at];
      if (span === undefined || span.root !== root) {
        span = { root, count: 0, requestsStart: -1, requestsEnd: -1, summariesStart: start, summariesEnd: end };
        this.summaryOnly.push(span);
      }
      span.summariesStart = start;
      this.summarySpan = span;
    }
    span.summariesEnd = end;
  }

  /** The trees' shares noted, in root order. */
  trees(): TreeSpan[] {
    if (this.summaryOnly.length === 0) return this.spans;
    return [...this.spans, ...this.summaryOnly].sort((a, b) => a.root - b.root);
  }
}

/**
 * `kept` with the shares of the trees in `replaced` taken out and those of
 * `fresh` (an answer over some of them) put in, in root order: the order
 * candidatesJson writes both lists in when every candidate lies in one tree.
 * Runs of kept trees that lie side by side are copied as one.
 */
export function spliceTrees(kept: AnswerByTree, replaced: ReadonlySet<number>, fresh: AnswerByTree): AnswerByTree {
  // The trees in root order, each with where its share comes from.
  const trees: TreeSpan[] = [];
  const from: Uint8Array[] = [];
  let length = START.length + SUMMARIES.length + END.length;
  const add = (tree: TreeSpan, source: Uint8Array) => {
    trees.push(tree);
    from.push(source);
    length += tree.requestsEnd - tree.requestsStart + tree.summariesEnd - tree.summariesStart + 2;
  };
  let f = 0;
  for (const tree of kept.trees) {
    while (f < fresh.trees.length && fresh.trees[f]!.root < tree.root) add(fresh.trees[f++]!, fresh.bytes);
    if (!replaced.has(tree.root)) add(tree, kept.bytes);
  }
  while (f < fresh.trees.length) add(fresh.trees[f++]!, fresh.bytes);
  const out = new Uint8Array(length);
  const placed: TreeSpan[] = new Array(trees.length);
  for (let i = 0; i < trees.length; i += 1)
    placed[i] = { ...trees[i]!, requestsStart: -1, requestsEnd: -1, summariesStart: -1, summariesEnd: -1 };
  out.set(START);
  let at = START.length;
  // Shares that follow each other in their source (one comma apart) are copied at once: a run [first, last].
  const section = (requests: boolean) => {
    let written = false;
    let first = -1;
    let runEnd = 0;
    const flush = (last: number) => {
      if (first < 0) return;
      if (written) out[at++] = COMMA;
      written = true;
      const start = requests ? trees[first]!.requestsStart : trees[first]!.summariesStart;
      const shift = at - start;
      for (let i = first; i <= last; i += 1) {
        const tree = trees[i]!;
        const target = placed[i]!;
        if (requests && tree.requestsStart >= 0) {
          target.requestsStart = tree.requestsStart + shift;
          target.requestsEnd = tree.requestsEnd + shift;
        } else if (!requests && tree.summariesStart >= 0) {
          target.summariesStart = tree.summariesStart + shift;
          target.summariesEnd = tree.summariesEnd + shift;
        }
      }
      out.set(from[first]!.subarray(start, runEnd), at);
      at += runEnd - start;
      first = -1;
    };
    let last = -1;
    for (let i = 0; i < trees.length; i += 1) {
      const tree = trees[i]!;
      const start = requests ? tree.requestsStart : tree.summariesStart;
      if (start < 0) continue;
      const end = requests ? tree.requestsEnd : tree.summariesEnd;
      if (first >= 0 && from[i] === from[first] && start === runEnd + 1 && from[i]![runEnd] === COMMA) {
        runEnd = end;
        last = i;
        continue;
      }
      flush(last);
      first = i;
      last = i;
      runEnd = end;
    }
    flush(last);
  };
  section(true);
  out.set(SUMMARIES, at);
  at += SUMMARIES.length;
  section(false);
  out.set(END, at);
  at += END.length;
  return { bytes: out.subarray(0, at), trees: placed };
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
export function prepareSummaryTemplates(providers: Iterable<ProviderNode>, nodes: NodeLookup, keptBytes: KeptBytes): void {
  for (const node of providers) {
    const kept = keptBytes.nodeBytes(node);
    if (!kept.template) kept.template = summaryTemplate(node, nodes, EMPTY_CLASSES, CURRENT_SHAPE, CURRENT_SHAPE_KEY);
  }
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
  keptBytes: KeptBytes,
  byTree: TreeSpans | undefined,
): void {
  const usedRoots = new Set<number>();
  if (shape.nestedAware) for (const id of usedProviders) usedRoots.add(nodes.get(id)!.rootId);
  const shapeKey = shapeKeyOf(shape, requestedClasses);
  let first = true;
  for (const node of nodes.values()) {
    if (shape.nestedAware ? !usedRoots.has(node.rootId) : !usedProviders.has(node.id)) continue;
    if (!first) out.char(COMMA);
    first = false;
    const start = out.mark;
    // The SQL engine's nodes live one request: nothing of theirs is kept.
    const kept = node.uuidJson === undefined ? undefined : keptBytes.nodeBytes(node);
    let template = kept?.template;
    if (!template || template.shape !== shapeKey) {
      template = summaryTemplate(node, nodes, requestedClasses, shape, shapeKey);
      if (kept) kept.template = template;
    }
    const { classIds } = template;
    const summary = kept?.summary;
    if (summary && summary.template === template && sameUsage(summary.used, usage.get(node.id), classIds)) {
      out.bytes(summary.bytes);
      byTree?.note(SUMMARY, node.rootId, start, out.mark);
      continue;
    }
    writeSummary(out, node, template, usage, kept);
    byTree?.note(SUMMARY, node.rootId, start, out.mark);
  }
}

/** A provider's summary from its template with `usage`'s figures, kept for the next answer with the same figures. */
function writeSummary(out: JsonWriter, node: ProviderNode, template: SummaryTemplate, usage: Usage, kept: NodeBytes | undefined): void {
  const { parts, classIds } = template;
  const mark = out.mark;
  const used: number[] = new Array(classIds.length);
  out.bytes(parts[0]!);
  for (let i = 0; i < classIds.length; i += 1) {
    out.number((used[i] = usedOf(usage, node.id, classIds[i]!)));
    out.bytes(parts[i + 1]!);
  }
  if (kept) kept.summary = { template, used, bytes: out.copyFrom(mark) };
}

/**
 * Writes and keeps the summaries of the current presentation for `providers`
 * with `usage`, ahead of the first answer that names them: the trees kept in
 * memory do this as they are re-read, off the request path. An answer then
 * copies each summary whose usage still reads the same; one whose usage moved
 * since is written again, as before.
 */
export function prepareSummaries(providers: Iterable<ProviderNode>, nodes: NodeLookup, usage: Usage, keptBytes: KeptBytes): void {
  const out = new JsonWriter(16 * 1024, keptBytes);
  for (const node of providers) {
    const kept = keptBytes.nodeBytes(node);
    kept.template ??= summaryTemplate(node, nodes, EMPTY_CLASSES, CURRENT_SHAPE, CURRENT_SHAPE_KEY);
    // A template of another presentation (an older microversion's answer) is left to the answers that ask for it.
    if (kept.template.shape !== CURRENT_SHAPE_KEY) continue;
    // One writer for all: restarted when full, the bytes kept being copies.
    if (out.mark > 12 * 1024) out.reset();
    writeSummary(out, node, kept.template, usage, kept);
  }
}

/** Whether a provider's usage of `classIds` is `used`. */
function sameUsage(used: readonly number[], perClass: ReadonlyMap<number, number> | undefined, classIds: readonly number[]): boolean {
  for (let i = 0; i < classIds.length; i += 1) if ((perClass?.get(classIds[i]!) ?? 0) !== used[i]) return false;
  return true;
}

/**
 * A dict-shaped allocation request apart from its providers: each piece's
 * provider as a slot (providers in order of first appearance, then those only
 * a mapping names), class and amount; the mappings' suffixes in object key
 * order and their providers' slots. `key` spells it with class names, so a
 * request's kept bytes are found again in a later answer, and not after a
 * class was renamed.
 */
interface RequestForm {
  key: string;
  /** Its bytes apart from the providers' uuids, once the first request of the form is written (formRequest). */
  template: RequestTemplate | null;
  slots: number[];
  classIds: number[];
  amounts: number[];
  suffixes: string[];
  mappingSlots: number[][];
  providers: number;
}

/** The forms of one answer's requests: the candidates of one query mostly share one, so it is compared, not spelt, request by request. */
class RequestForms {
  /** The providers of the request at hand, by slot: the first `count`. */
  readonly providers: number[] = [];
  count = 0;
  private last: RequestForm | null = null;

  constructor(
    private readonly classNameById: ReadonlyMap<number, string>,
    private readonly withMappings: boolean,
    /** Where request templates are kept, and the writer they are recorded with. */
    readonly kept: KeptBytes,
  ) {}

  private slotOf(providerId: number): number {
    const { providers } = this;
    for (let i = 0; i < this.count; i += 1) if (providers[i] === providerId) return i;
    providers[this.count] = providerId;
    return this.count++;
  }

  /** The form of `request`; its providers by slot in `providers`. */
  of(request: AllocationRequest): RequestForm {
    const { pieces, mappings } = request;
    this.count = 0;
    const last = this.last;
    let same = last !== null && last.slots.length === pieces.length;
    for (let i = 0; i < pieces.length; i += 1) {
      const piece = pieces[i]!;
      const slot = this.slotOf(piece.providerId);
      if (same) same = last!.slots[i] === slot && last!.classIds[i] === piece.classId && last!.amounts[i] === piece.amount;
    }
    if (!this.withMappings) return same && last!.providers === this.count ? last! : (this.last = this.spell(request));
    let m = 0;
    for (const suffix of inObjectKeyOrder(mappings)) {
      const ids = mappings.get(suffix)!;
      const slots = same && m < last!.suffixes.length && last!.suffixes[m] === suffix ? last!.mappingSlots[m]! : null;
      if (slots === null || slots.length !== ids.length) same = false;
      for (let i = 0; i < ids.length; i += 1) {
        const slot = this.slotOf(ids[i]!);
        if (same && slots![i] !== slot) same = false;
      }
      m += 1;
    }
    if (same && m === last!.suffixes.length && last!.providers === this.count) return last!;
    return (this.last = this.spell(request));
  }

  /** The form of the request whose providers `of()` just found. */
  private spell(request: AllocationRequest): RequestForm {
    const { pieces, mappings } = request;
    const providers = this.providers.slice(0, this.count);
    const slotOf = (id: number) => providers.indexOf(id);
    const suffixes = this.withMappings ? [...inObjectKeyOrder(mappings)] : [];
    const form: RequestForm = {
      key: '',
      template: null,
      slots: pieces.map((piece) => slotOf(piece.providerId)),
      classIds: pieces.map((piece) => piece.classId),
      amounts: pieces.map((piece) => piece.amount),
      suffixes,
      mappingSlots: suffixes.map((suffix) => mappings.get(suffix)!.map(slotOf)),
      providers: this.count,
    };
    form.key = JSON.stringify([
      this.withMappings,
      form.slots,
      form.classIds.map((id) => this.classNameById.get(id)!),
      form.amounts,
      suffixes,
      form.mappingSlots,
      form.providers,
    ]);
    return form;
  }
}

/** A request written through its form's template, recorded from dictRequest itself on the form's first request. */
function formRequest(
  out: JsonWriter,
  request: AllocationRequest,
  forms: RequestForms,
  uuidOf: (id: number) => Uint8Array,
  classOf: (id: number) => Uint8Array,
  withMappings: boolean,
): void {
  const form = forms.of(request);
  const { providers } = forms;
  let template = form.template ?? forms.kept.requestTemplate(form.key);
  if (template === undefined) {
    template = requestTemplate(request, providers, forms.count, classOf, withMappings, forms.kept);
    forms.kept.keepRequestTemplate(form.key, template);
  }
  form.template = template;
  const { parts, slots } = template;
  out.bytes(parts[0]!);
  for (let i = 0; i < slots.length; i += 1) {
    out.bytes(uuidOf(providers[slots[i]!]!));
    out.bytes(parts[i + 1]!);
  }
}

/** dictRequest of `request` with every uuid left out and its place and slot noted: the bytes between are the template's parts. */
function requestTemplate(
  request: AllocationRequest,
  providers: readonly number[],
  count: number,
  classOf: (id: number) => Uint8Array,
  withMappings: boolean,
  kept: KeptBytes,
): RequestTemplate {
  const scratch = new JsonWriter(256, kept);
  const marks: number[] = [];
  const slots: number[] = [];
  const gap = (id: number): Uint8Array => {
    let slot = 0;
    while (slot < count && providers[slot] !== id) slot += 1;
    if (slot === count) throw new Error('a request names a provider its form has no slot for');
    marks.push(scratch.mark);
    slots.push(slot);
    return NO_BYTES;
  };
  dictRequest(scratch, request, gap, classOf, withMappings);
  const written = scratch.result();
  const parts: Uint8Array[] = [];
  let from = 0;
  for (const mark of marks) {
    parts.push(written.slice(from, mark));
    from = mark;
  }
  parts.push(written.slice(from));
  return { parts, slots };
}
const NO_BYTES = new Uint8Array(0);

// The bytes kept between answers, held by the presenter (one KeptBytes per
// app, on its engine) and keyed by the provider node they were written for. A node of the trees kept
// in memory lives until its tree changes (a change replaces every node of the
// tree), so the node itself is what makes a provider's summary template
// valid: its uuid, parent, root, inventories and traits are the node's, fixed
// for its life. What else the bytes hold (the presentation, usage figures)
// is compared before they are copied (summaries). The model knows nothing of them.
// Looked up by provider id, then checked to be the same node: an array read
// is a load, where a WeakMap or Map keyed by node costs a hash probe per
// provider and answer, which showed in a warm full answer's CPU
// (docs/performance.md, "Presentation caches kept by the presenter").

/** `parts[0] + used[0] + parts[1] + ... + parts[n]` (UTF-8), the used figures being those of `classIds`. */
export interface SummaryTemplate {
  /** The presentation it was written for (shapeKeyOf). */
  shape: string;
  parts: Uint8Array[];
  classIds: number[];
}

/**
 * A dict-shaped request of one form as bytes with a gap for each provider
 * uuid: `parts[0] + uuid(slots[0]) + parts[1] + ... + parts[n]`. Everything
 * else dictRequest writes is the form's (its key spells the slots, class
 * names, amounts, suffixes and mapping slots), so one template serves every
 * request of the form: a searched answer writes a handful of copies per
 * request, nothing kept per provider between answers.
 */
export interface RequestTemplate {
  parts: Uint8Array[];
  slots: number[];
}

/** A provider's summary as last written: from which template, with which usage figures (the template's classIds' order). */
export interface KeptSummary {
  template: SummaryTemplate;
  used: number[];
  bytes: Uint8Array;
}

/** What the presenter keeps for one provider node. */
export interface NodeBytes {
  /** The node these bytes were written for: a node of the same id that is not this one is another version of its tree. */
  readonly node: object;
  template: SummaryTemplate | null;
  summary: KeptSummary | null;
  /** The answer that last used the entry (sweep). */
  seen: number;
  /** The slab its bytes were written into from (keepBytes). */
  slab: number;
}

/**
 * What one app's presenter keeps between answers (Deps.candidates: each app
 * its own, as its tree cache): the bytes by provider node, and the slabs
 * they are copied into.
 * Kept bytes are copied into slabs, one after the other in the order an
 * answer writes them, so that the next answer reads them from a few
 * contiguous buffers rather than from a small buffer of its own each. An
 * entry is written again once its slab is older than the one before the
 * current (nodeBytes), so at most two slabs stay in use; that holds the
 * bytes of a whole answer only while answers stay under half a slab, so a
 * process whose answers grew larger keeps a buffer per piece instead.
 */
const MAX_REQUEST_TEMPLATES = 10_000;

export class KeptBytes {
  private slab: Uint8Array | null = null;
  private slabUsed = 0;
  /** Slabs started so far (the current one's number). */
  private slabs = 0;
  private largestAnswer = 0;
  /** Entries by provider id (ids are small dense integers: a holey array). */
  private readonly kept: (NodeBytes | undefined)[] = [];
  private answers = 0;
  /** Request templates by form key: the key spells all a template holds (class names, not ids), so it stays right. */
  private readonly requestTemplates = new Map<string, RequestTemplate>();

  /** `sweepAfter`: entries unused for this many answers go (a deleted provider's, or a replaced node's nobody asked for since). */
  constructor(private readonly sweepAfter = 4096) {}

  /** For one answer whose caller keeps nothing between answers: its pieces are copied apart, no slab is started. */
  static forOneAnswer(): KeptBytes {
    const kept = new KeptBytes();
    kept.largestAnswer = Number.POSITIVE_INFINITY;
    return kept;
  }

  /** The request template of a form, if one was kept. */
  requestTemplate(key: string): RequestTemplate | undefined {
    return this.requestTemplates.get(key);
  }

  /** Keeps a form's request template; a query mix of more forms than the bound starts again. */
  keepRequestTemplate(key: string, template: RequestTemplate): void {
    if (this.requestTemplates.size >= MAX_REQUEST_TEMPLATES) this.requestTemplates.clear();
    this.requestTemplates.set(key, template);
  }

  /** The bytes kept for `node`, an empty entry the first time or when its tree changed since. */
  nodeBytes(node: { readonly id: number }): NodeBytes {
    let entry = this.kept[node.id];
    // An entry whose bytes may lie in a slab before the last is written again: a slab goes once no entry looks into it.
    if (entry === undefined || entry.node !== node || entry.slab < this.slabs - 1)
      this.kept[node.id] = entry = { node, template: null, summary: null, seen: this.answers, slab: this.slabs };
    else entry.seen = this.answers;
    return entry;
  }

  /** A kept copy of `source[from, to)`. */
  keepBytes(source: Uint8Array, from: number, to: number): Uint8Array {
    const length = to - from;
    if (this.largestAnswer > SLAB_BYTES >> 1 || length > SLAB_BYTES >> 4) return source.slice(from, to);
    if (this.slab === null || this.slabUsed + length > SLAB_BYTES) {
      this.slab = new Uint8Array(SLAB_BYTES);
      this.slabUsed = 0;
      this.slabs += 1;
    }
    const copy = this.slab.subarray(this.slabUsed, this.slabUsed + length);
    copy.set(source.subarray(from, to));
    this.slabUsed += length;
    return copy;
  }

  /** Counts an answer of `bytes` written; now and then drops the entries no recent answer used. */
  answerWritten(bytes: number): void {
    this.answers += 1;
    if (bytes > this.largestAnswer) this.largestAnswer = bytes;
    if (this.answers % this.sweepAfter !== 0) return;
    const { kept } = this;
    for (let id = 0; id < kept.length; id += 1) {
      const entry = kept[id];
      if (entry !== undefined && this.answers - entry.seen > this.sweepAfter) kept[id] = undefined;
    }
  }

  /** Providers with bytes kept now (tests, metrics). */
  get entries(): number {
    let count = 0;
    for (const entry of this.kept) if (entry !== undefined) count += 1;
    return count;
  }
}

const SLAB_BYTES = 1 << 21;
