// The JSON writer's bytes kept between answers, held by the presenter and
// keyed by the provider node they were written for. A node of the trees kept
// in memory lives until its tree changes (a change replaces every node of the
// tree), so the node itself is what makes a provider's summary template
// valid: its uuid, parent, root, inventories and traits are the node's, fixed
// for its life. What else the bytes hold (the presentation, usage figures)
// is compared before they are copied (json.ts). The model knows nothing of them.
// Looked up by provider id, then checked to be the same node: an array read
// is a load, where a WeakMap or Map keyed by node costs a hash probe per
// provider and answer, which showed in a warm full answer's CPU
// (docs/performance.md, "Presentation caches kept by the presenter").

/** `parts[0] + used[0] + parts[1] + ... + parts[n]` (UTF-8), the used figures being those of `classIds`. */
export interface SummaryTemplate {
  /** The presentation it was written for (json.ts shapeKeyOf). */
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
