// The in-memory search over a loaded research context. For each anchor tree
// (a root, possibly helped by sharing providers) every request group gets
// its list of choices; the merge walks the product of those lists lazily,
// tree by tree, so `limit` stops the work early and the cartesian product of
// the whole cloud is never built. Semantics follow upstream placement's
// allocation_candidate.py (_merge_candidates, group policy, same_subtree).
import { capacityOf, fits } from '../../oracle-rules/capacity.js';
import type { CandidateInventories, Inventory, ProviderNode } from './research.js';

export const SHARES_TRAIT = 'MISC_SHARES_VIA_AGGREGATE';

/** A request group with names resolved to ids. */
export interface ResolvedGroup {
  suffix: string;
  /** class id -> amount, sorted by class id as upstream walks them. */
  resources: [number, number][];
  requiredAnyOf: string[][];
  forbiddenTraits: string[];
  /** Each inner set: at least one of these aggregate ids. */
  memberOf: Set<number>[];
  forbiddenAggregates: Set<number>;
  /** Root of the in_tree provider; -1 when that provider does not exist. */
  inTreeRoot: number | null;
}

export interface SearchInput {
  groups: ResolvedGroup[];
  groupPolicy: 'none' | 'isolate' | null;
  sameSubtrees: string[][];
  rootRequired: string[];
  rootForbidden: string[];
  /** Below 1.29 a candidate may use only one provider per tree. */
  nestedAware: boolean;
  candidates: CandidateInventories;
  nodes: Map<number, ProviderNode>;
}

export interface Piece {
  providerId: number;
  classId: number;
  amount: number;
}

/** One group's share of an allocation request. */
interface Choice {
  suffix: string;
  pieces: Piece[];
  /** Providers that satisfied the group (for mappings and policies), in order. */
  providers: number[];
}

export interface AllocationRequest {
  pieces: Piece[];
  /** suffix -> provider ids that satisfied it. */
  mappings: Map<string, number[]>;
}

function* product<T>(lists: T[][]): Generator<T[]> {
  if (lists.some((l) => l.length === 0)) return;
  if (lists.every((l) => l.length === 1)) { // the common case on flat trees
    yield lists.map((l) => l[0]!);
    return;
  }
  const index = lists.map(() => 0);
  for (;;) {
    yield lists.map((l, i) => l[index[i]!]!);
    let pos = lists.length - 1;
    while (pos >= 0) {
      index[pos]! += 1;
      if (index[pos]! < lists[pos]!.length) break;
      index[pos] = 0;
      pos -= 1;
    }
    if (pos < 0) return;
  }
}

export class CandidateSearch {
  private readonly members = new Map<number, ProviderNode[]>();
  /** anchor root -> sharing providers (from other trees) that share with it. */
  private readonly sharingByAnchor = new Map<number, number[]>();
  /** Keys of the requests produced so far: a request reachable from several anchors is given once. */
  private readonly seen = new Set<string>();

  constructor(private readonly input: SearchInput) {
    this.addTrees(input.nodes.values());
    for (const [sharing, anchors] of input.candidates.anchorsOfSharing) {
      const own = input.candidates.rootOf.get(sharing);
      for (const anchor of anchors) {
        if (anchor === own) continue;
        let list = this.sharingByAnchor.get(anchor);
        if (!list) this.sharingByAnchor.set(anchor, (list = []));
        list.push(sharing);
      }
    }
  }

  /** Makes more trees searchable (trees are loaded in chunks when a limit allows stopping early). */
  addTrees(nodes: Iterable<ProviderNode>): void {
    for (const node of nodes) {
      if (this.input.nodes.get(node.id) !== node) this.input.nodes.set(node.id, node);
      let list = this.members.get(node.rootId);
      if (!list) this.members.set(node.rootId, (list = []));
      if (!list.includes(node)) list.push(node);
    }
  }

  private inventory(providerId: number, classId: number): Inventory | undefined {
    return this.input.candidates.byProvider.get(providerId)?.get(classId);
  }

  private fitsAmount(providerId: number, classId: number, amount: number): boolean {
    const inv = this.inventory(providerId, classId);
    return inv !== undefined && fits(inv, inv.used, amount);
  }

  private inAllAggregates(node: ProviderNode | undefined, memberOf: Set<number>[]): boolean {
    if (!node) return false;
    return memberOf.every((anyOf) => intersects(anyOf, node.aggregates));
  }

  /**
   * member_of as upstream applies it (bug 1792503). In the unsuffixed group a
   * provider of the anchor tree qualifies through itself or its root (an
   * aggregate on a root spans the tree), and a forbidden aggregate on the
   * root rules out the tree, sharing providers included; a sharing provider
   * must itself be in the aggregates. In a suffixed group only the provider
   * that satisfies the group counts, never its root.
   */
  private aggregatesOk(group: ResolvedGroup, providerId: number, root: { spans: number | null; forbids: number | null }): boolean {
    const node = this.input.nodes.get(providerId);
    const spanning = root.spans === null ? undefined : this.input.nodes.get(root.spans);
    if (group.memberOf.length && !this.inAllAggregates(node, group.memberOf) && !this.inAllAggregates(spanning, group.memberOf)) {
      return false;
    }
    if (group.forbiddenAggregates.size) {
      if (node && intersects(group.forbiddenAggregates, node.aggregates)) return false;
      const forbidding = root.forbids === null ? undefined : this.input.nodes.get(root.forbids);
      if (forbidding && intersects(group.forbiddenAggregates, forbidding.aggregates)) return false;
    }
    return true;
  }

  private traitsOk(group: ResolvedGroup, traits: Set<string>): boolean {
    return group.requiredAnyOf.every((anyOf) => anyOf.some((t) => traits.has(t))) && !group.forbiddenTraits.some((t) => traits.has(t));
  }

  private rootOk(rootId: number): boolean {
    const { rootRequired, rootForbidden } = this.input;
    if (!rootRequired.length && !rootForbidden.length) return true;
    const root = this.input.nodes.get(rootId);
    if (!root) return false;
    return rootRequired.every((t) => root.traits.has(t)) && !rootForbidden.some((t) => root.traits.has(t));
  }

  private treeAllowed(group: ResolvedGroup, rootId: number): boolean {
    return group.inTreeRoot === null || group.inTreeRoot === rootId;
  }

  /** Unsuffixed group: each class from any provider of the tree or a sharing provider anchored to it. */
  private spreadChoices(group: ResolvedGroup, anchor: number): Choice[] {
    const perClass: Piece[][] = [];
    const sharing = group.inTreeRoot === null ? (this.sharingByAnchor.get(anchor) ?? []) : [];
    for (const [classId, amount] of group.resources) {
      const options: Piece[] = [];
      if (this.treeAllowed(group, anchor)) {
        for (const node of this.members.get(anchor) ?? []) {
          if (this.fitsAmount(node.id, classId, amount) && this.aggregatesOk(group, node.id, { spans: anchor, forbids: anchor })) {
            options.push({ providerId: node.id, classId, amount });
          }
        }
      }
      for (const sharer of sharing) {
        if (this.fitsAmount(sharer, classId, amount) && this.aggregatesOk(group, sharer, { spans: null, forbids: anchor })) {
          options.push({ providerId: sharer, classId, amount });
        }
      }
      if (!options.length) return [];
      perClass.push(options);
    }
    const choices: Choice[] = [];
    for (const pieces of product(perClass)) {
      const providers = [...new Set(pieces.map((p) => p.providerId))];
      // Required traits may come from any provider used; forbidden ones from none.
      const traitSets = providers.map((id) => this.input.nodes.get(id)?.traits ?? NO_TRAITS);
      if (group.forbiddenTraits.some((t) => traitSets.some((traits) => traits.has(t)))) continue;
      if (!group.requiredAnyOf.every((anyOf) => anyOf.some((t) => traitSets.some((traits) => traits.has(t))))) continue;
      choices.push({ suffix: group.suffix, pieces, providers });
    }
    return choices;
  }

  /** Suffixed group: one provider serves every class (or, resourceless, just matches). */
  private singleChoices(group: ResolvedGroup, anchor: number): Choice[] {
    const choices: Choice[] = [];
    const consider = (node: ProviderNode) => {
      if (!this.treeAllowed(group, node.rootId)) return;
      if (!group.resources.every(([classId, amount]) => this.fitsAmount(node.id, classId, amount))) return;
      if (!this.traitsOk(group, node.traits) || !this.aggregatesOk(group, node.id, { spans: null, forbids: null })) return;
      choices.push({
        suffix: group.suffix,
        pieces: group.resources.map(([classId, amount]) => ({ providerId: node.id, classId, amount })),
        providers: [node.id],
      });
    };
    for (const node of this.members.get(anchor) ?? []) consider(node);
    for (const sharer of this.sharingByAnchor.get(anchor) ?? []) {
      const node = this.input.nodes.get(sharer);
      if (node && group.resources.length) consider(node);
    }
    return choices;
  }

  private isolated(choices: Choice[]): boolean {
    if (this.input.groupPolicy !== 'isolate') return true;
    const suffixed = choices.filter((c) => c.suffix !== '');
    if (this.input.groupPolicy !== 'isolate' || suffixed.length <= 1) return true;
    const used = new Set(suffixed.flatMap((c) => c.providers));
    return used.size === suffixed.length;
  }

  private ancestorsOf(id: number): Set<number> {
    const seen = new Set<number>();
    let cur: number | null | undefined = id;
    while (cur !== null && cur !== undefined && !seen.has(cur)) {
      seen.add(cur);
      cur = this.input.nodes.get(cur)?.parentId;
    }
    return seen;
  }

  /** Within each same_subtree set, one of the providers used is an ancestor (or self) of all the others. */
  private sameSubtreeOk(choices: Choice[]): boolean {
    for (const suffixes of this.input.sameSubtrees) {
      const ids = [...new Set(choices.filter((c) => suffixes.includes(c.suffix)).flatMap((c) => c.providers))];
      if (ids.length <= 1) continue;
      const common = ids.map((id) => this.ancestorsOf(id)).reduce((a, b) => new Set([...a].filter((x) => b.has(x))));
      if (!ids.some((id) => common.has(id))) return false;
    }
    return true;
  }

  private consolidate(choices: Choice[]): AllocationRequest | null {
    if (choices.length === 1) return this.fromOneChoice(choices[0]!);
    const merged = new Map<string, Piece>();
    const mappings = new Map<string, number[]>();
    for (const choice of choices) {
      const list = mappings.get(choice.suffix) ?? [];
      for (const id of choice.providers) if (!list.includes(id)) list.push(id);
      mappings.set(choice.suffix, list);
      for (const piece of choice.pieces) {
        const key = `${piece.providerId}:${piece.classId}`;
        const seen = merged.get(key);
        if (seen) seen.amount += piece.amount;
        else merged.set(key, { ...piece });
      }
    }
    const pieces = [...merged.values()];
    // Groups were searched independently: amounts folded onto one provider must still fit.
    for (const piece of pieces) {
      const inv = this.inventory(piece.providerId, piece.classId);
      if (!inv || inv.used + piece.amount > capacityOf(inv) || piece.amount > inv.maxUnit) return null;
    }
    if (!this.input.nestedAware) {
      const roots = pieces.map((p) => this.input.nodes.get(p.providerId)?.rootId);
      const providers = new Set(pieces.map((p) => p.providerId));
      if (new Set(roots).size !== providers.size) return null;
    }
    return { pieces, mappings };
  }

  /** One group: its pieces were each checked to fit and name distinct (provider, class) pairs. */
  private fromOneChoice(choice: Choice): AllocationRequest | null {
    if (!this.input.nestedAware) {
      const roots = new Set(choice.providers.map((id) => this.input.nodes.get(id)?.rootId));
      if (roots.size !== choice.providers.length) return null;
    }
    return { pieces: choice.pieces, mappings: new Map([[choice.suffix, choice.providers]]) };
  }

  /** Every distinct allocation request, tree by tree, produced on demand. */
  *requests(anchors: Iterable<number>): Generator<AllocationRequest> {
    const seen = this.seen;
    for (const anchor of anchors) {
      if (!this.rootOk(anchor)) continue;
      const lists: Choice[][] = [];
      for (const group of this.input.groups) {
        const choices = group.suffix === '' ? this.spreadChoices(group, anchor) : this.singleChoices(group, anchor);
        if (!choices.length) break;
        lists.push(choices);
      }
      if (lists.length !== this.input.groups.length) continue;
      for (const combo of product(lists)) {
        if (!this.isolated(combo) || !this.sameSubtreeOk(combo)) continue;
        const request = this.consolidate(combo);
        if (!request) continue;
        // A provider that shares nothing is offered only to its own tree's
        // anchor (and one anchor never repeats a request), so only requests
        // made entirely of sharing providers can recur across anchors.
        if (request.pieces.every((p) => this.input.candidates.anchorsOfSharing.has(p.providerId))) {
          const key = requestKey(request);
          if (seen.has(key)) continue;
          seen.add(key);
        }
        yield request;
      }
    }
  }
}

const NO_TRAITS: ReadonlySet<string> = new Set();

function intersects(a: ReadonlySet<number>, b: ReadonlySet<number>): boolean {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  for (const x of small) if (large.has(x)) return true;
  return false;
}

function requestKey(request: AllocationRequest): string {
  const pieces = request.pieces.map((p) => `${p.providerId}:${p.classId}:${p.amount}`).sort().join(',');
  const mappings = [...request.mappings].map(([s, ids]) => `${s}=${[...ids].sort((a, b) => a - b).join('.')}`).sort().join(';');
  return `${pieces}|${mappings}`;
}

/**
 * Keeps at most `limit` requests as they are offered. Stable order keeps the
 * first ones and is done at `limit`; random order keeps a uniform sample
 * (reservoir), so memory stays O(limit) either way.
 */
export class RequestPicker {
  private readonly kept: AllocationRequest[] = [];
  private offered = 0;

  constructor(private readonly limit: number | null, private readonly randomize: boolean, private readonly cap: number) {}

  get done(): boolean {
    return (this.cap > 0 && this.offered >= this.cap) || (!this.randomize && this.limit !== null && this.kept.length >= this.limit);
  }

  offer(source: Iterable<AllocationRequest>): void {
    if (this.done) return;
    for (const request of source) {
      this.offered += 1;
      if (this.limit === null || this.kept.length < this.limit) {
        this.kept.push(request);
      } else if (this.randomize) {
        const j = Math.floor(Math.random() * this.offered);
        if (j < this.limit) this.kept[j] = request;
      }
      if (this.done) return;
    }
  }

  result(): AllocationRequest[] {
    const out = [...this.kept];
    if (this.randomize) {
      for (let i = out.length - 1; i > 0; i -= 1) {
        const j = Math.floor(Math.random() * (i + 1));
        [out[i], out[j]] = [out[j]!, out[i]!];
      }
    }
    return out;
  }
}
