// The JSON writer's bytes kept between answers, held by the presenter and
// keyed by the provider node they were written for. A node of the trees kept
// in memory lives until its tree changes (a change replaces every node of the
// tree), so the node itself is what makes a provider's summary template
// valid: its uuid, parent, root, inventories and traits are the node's, fixed
// for its life. What else the bytes hold (the presentation, usage figures,
// class names, amounts, other trees' providers) is compared before they are
// copied (json.ts). The model knows nothing of them.
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

/** A provider's summary as last written: from which template, with which usage figures (the template's classIds' order). */
export interface KeptSummary {
  template: SummaryTemplate;
  used: number[];
  bytes: Uint8Array;
}

/** An allocation request a provider anchored: its form (json.ts RequestForm's key) and its other providers' uuid bytes. */
export interface KeptRequest {
  key: string;
  uuids: Uint8Array[];
  bytes: Uint8Array;
}

/** What the presenter keeps for one provider node. */
export interface NodeBytes {
  /** The node these bytes were written for: a node of the same id that is not this one is another version of its tree. */
  readonly node: object;
  template: SummaryTemplate | null;
  summary: KeptSummary | null;
  /** Requests it anchored, the latest first. */
  requests: KeptRequest[];
  /** The answer that last used the entry (sweep). */
  seen: number;
  /** The slab its bytes were written into from (keepBytes). */
  slab: number;
}

/**
 * Kept bytes are copied into slabs, one after the other in the order an
 * answer writes them, so that the next answer reads them from a few
 * contiguous buffers rather than from a small buffer of its own each. An
 * entry is written again once its slab is older than the one before the
 * current (nodeBytes), so at most two slabs stay in use; that holds the
 * bytes of a whole answer only while answers stay under half a slab, so a
 * process whose answers grew larger keeps a buffer per piece instead.
 */
const SLAB_BYTES = 1 << 21;
let slab: Uint8Array | null = null;
let slabUsed = 0;
/** Slabs started so far (the current one's number). */
let slabs = 0;
let largestAnswer = 0;
/** Entries by provider id (ids are small dense integers: a holey array). */
const kept: (NodeBytes | undefined)[] = [];
let answers = 0;
/** Entries unused for this many answers go: a deleted provider's, or a replaced node's nobody asked for since. */
const SWEEP_AFTER = 4096;

/** The bytes kept for `node`, an empty entry the first time or when its tree changed since. */
export function nodeBytes(node: { readonly id: number }): NodeBytes {
  let entry = kept[node.id];
  // An entry whose bytes may lie in a slab before the last is written again: a slab goes once no entry looks into it.
  if (entry === undefined || entry.node !== node || entry.slab < slabs - 1)
    kept[node.id] = entry = { node, template: null, summary: null, requests: [], seen: answers, slab: slabs };
  else entry.seen = answers;
  return entry;
}

/** A kept copy of `source[from, to)`. */
export function keepBytes(source: Uint8Array, from: number, to: number): Uint8Array {
  const length = to - from;
  if (largestAnswer > SLAB_BYTES >> 1 || length > SLAB_BYTES >> 4) return source.slice(from, to);
  if (slab === null || slabUsed + length > SLAB_BYTES) {
    slab = new Uint8Array(SLAB_BYTES);
    slabUsed = 0;
    slabs += 1;
  }
  const copy = slab.subarray(slabUsed, slabUsed + length);
  copy.set(source.subarray(from, to));
  slabUsed += length;
  return copy;
}

/** Counts an answer of `bytes` written; now and then drops the entries no recent answer used. */
export function answerWritten(bytes: number): void {
  answers += 1;
  if (bytes > largestAnswer) largestAnswer = bytes;
  if (answers % SWEEP_AFTER !== 0) return;
  for (let id = 0; id < kept.length; id += 1) {
    const entry = kept[id];
    if (entry !== undefined && answers - entry.seen > SWEEP_AFTER) kept[id] = undefined;
  }
}
