// The in-memory search over a loaded research context. For each anchor tree
// (a root, possibly helped by sharing providers) every request group gets
// its list of choices; a depth-first search picks one choice per group,
// tree by tree, cutting a branch at its first choice that cannot fit, so
// `limit` stops the work early and the cartesian product of
// the whole cloud is never built. Semantics follow upstream placement's
// allocation_candidate.py (_merge_candidates, group policy, same_subtree).
import { capacityOf, fits } from '../capacity.js';
import type { CandidateInventories, Inventory, ProviderNode } from './research.js';

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

/** The order candidates are produced in (upstream's allocation_candidates_generation_strategy). */
export type GenerationStrategy = 'depth-first' | 'breadth-first';

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

/** The cartesian product of small lists (one unsuffixed group's options per class). */
function* product<T>(lists: T[][]): Generator<T[]> {
  if (lists.some((l) => l.length === 0)) return;
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
    for (const anyOf of memberOf) if (!intersects(anyOf, node.aggregates)) return false;
    return true;
  }

  /**
   * member_of as upstream applies it (bug 1792503). In the unsuffixed group a
   * provider of the anchor tree qualifies through itself or its root (an
   * aggregate on a root spans the tree), and a forbidden aggregate on the
   * root rules out the tree, sharing providers included; a sharing provider
   * must itself be in the aggregates. In a suffixed group only the provider
   * that satisfies the group counts, never its root. (`spans`, `forbids`:
   * the root whose aggregates count, or null. Hot: no allocation.)
   */
  private aggregatesOk(group: ResolvedGroup, providerId: number, spans: number | null, forbids: number | null): boolean {
    if (!group.memberOf.length && !group.forbiddenAggregates.size) return true;
    const node = this.input.nodes.get(providerId);
    if (group.memberOf.length && !this.inAllAggregates(node, group.memberOf)) {
      const spanning = spans === null ? undefined : this.input.nodes.get(spans);
      if (!this.inAllAggregates(spanning, group.memberOf)) return false;
    }
    if (group.forbiddenAggregates.size) {
      if (node && intersects(group.forbiddenAggregates, node.aggregates)) return false;
      const forbidding = forbids === null ? undefined : this.input.nodes.get(forbids);
      if (forbidding && intersects(group.forbiddenAggregates, forbidding.aggregates)) return false;
    }
    return true;
  }

  private traitsOk(group: ResolvedGroup, traits: Set<string>): boolean {
    for (const anyOf of group.requiredAnyOf) if (!someIn(anyOf, traits)) return false;
    return !someIn(group.forbiddenTraits, traits);
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
    const sharing = group.inTreeRoot === null ? (this.sharingByAnchor.get(anchor) ?? NO_IDS) : NO_IDS;
    const members = this.members.get(anchor) ?? NO_NODES;
    if (members.length === 1 && sharing.length === 0) return this.oneProviderChoice(group, anchor, members[0]!);
    const perClass: Piece[][] = [];
    for (const [classId, amount] of group.resources) {
      const options: Piece[] = [];
      if (this.treeAllowed(group, anchor)) {
        for (const node of members) {
          if (this.fitsAmount(node.id, classId, amount) && this.aggregatesOk(group, node.id, anchor, anchor)) {
            options.push({ providerId: node.id, classId, amount });
          }
        }
      }
      for (const sharer of sharing) {
        if (this.fitsAmount(sharer, classId, amount) && this.aggregatesOk(group, sharer, null, anchor)) {
          options.push({ providerId: sharer, classId, amount });
        }
      }
      if (!options.length) return [];
      perClass.push(options);
    }
    const choices: Choice[] = [];
    // One option per class (flat hosts): the one combination, without the product's generator.
    const combos = onlyOneEach(perClass) ? [perClass.map(first)] : product(perClass);
    for (const pieces of combos) {
      // Distinct providers in order of use (a handful: a list beats a Set).
      const providers: number[] = [];
      for (const piece of pieces) if (!providers.includes(piece.providerId)) providers.push(piece.providerId);
      // Required traits may come from any provider used; forbidden ones from none.
      if (group.forbiddenTraits.length && this.anyProviderHasSome(providers, group.forbiddenTraits)) continue;
      let required = true;
      for (const anyOf of group.requiredAnyOf) {
        if (!this.anyProviderHasSome(providers, anyOf)) {
          required = false;
          break;
        }
      }
      if (required) choices.push({ suffix: group.suffix, pieces, providers });
    }
    return choices;
  }

  /**
   * spreadChoices on a tree of one provider and no sharing provider (a flat
   * host): every class from that provider, or nothing. The same choice,
   * without the per-class option lists.
   */
  private oneProviderChoice(group: ResolvedGroup, anchor: number, node: ProviderNode): Choice[] {
    if (!this.treeAllowed(group, anchor) || !this.aggregatesOk(group, node.id, anchor, anchor)) return [];
    const pieces: Piece[] = new Array<Piece>(group.resources.length);
    for (let i = 0; i < group.resources.length; i += 1) {
      const [classId, amount] = group.resources[i]!;
      if (!this.fitsAmount(node.id, classId, amount)) return [];
      pieces[i] = { providerId: node.id, classId, amount };
    }
    const providers = [node.id];
    if (group.forbiddenTraits.length && this.anyProviderHasSome(providers, group.forbiddenTraits)) return [];
    for (const anyOf of group.requiredAnyOf) if (!this.anyProviderHasSome(providers, anyOf)) return [];
    return [{ suffix: group.suffix, pieces, providers }];
  }

  /** Whether one of `providers` has one of `traits`. */
  private anyProviderHasSome(providers: number[], traits: readonly string[]): boolean {
    for (const id of providers) if (someIn(traits, this.input.nodes.get(id)?.traits ?? NO_TRAITS)) return true;
    return false;
  }

  /** Suffixed group: one provider serves every class (or, resourceless, just matches). */
  private singleChoices(group: ResolvedGroup, anchor: number): Choice[] {
    const choices: Choice[] = [];
    const consider = (node: ProviderNode) => {
      if (!this.treeAllowed(group, node.rootId)) return;
      if (!group.resources.every(([classId, amount]) => this.fitsAmount(node.id, classId, amount))) return;
      if (!this.traitsOk(group, node.traits) || !this.aggregatesOk(group, node.id, null, null)) return;
      choices.push({
        suffix: group.suffix,
        pieces: group.resources.map(([classId, amount]) => ({ providerId: node.id, classId, amount })),
        providers: [node.id],
      });
    };
    for (const node of this.members.get(anchor) ?? []) consider(node);
    for (const sharer of this.sharingByAnchor.get(anchor) ?? NO_IDS) {
      const node = this.input.nodes.get(sharer);
      if (node && group.resources.length) consider(node);
    }
    return choices;
  }

  /** Whether `ancestor` is `id` or one of its ancestors (parent links; bounded against a cycle). */
  private isAncestorOrSelf(ancestor: number, id: number): boolean {
    let cur: number | null | undefined = id;
    for (let steps = 0; cur !== null && cur !== undefined && steps <= this.input.nodes.size; steps += 1) {
      if (cur === ancestor) return true;
      cur = this.input.nodes.get(cur)?.parentId;
    }
    return false;
  }

  /**
   * same_subtree for one set of suffixes over the first `count` choices: one
   * of the providers used is an ancestor (or self) of all the others.
   * Checked at every step of the search: no allocation beyond a short list.
   */
  private sameSubtreeOk(choices: Choice[], count: number, suffixes: string[]): boolean {
    const ids: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const choice = choices[i]!;
      if (!suffixes.includes(choice.suffix)) continue;
      for (const id of choice.providers) if (!ids.includes(id)) ids.push(id);
    }
    if (ids.length <= 1) return true;
    for (const candidate of ids) {
      let coversAll = true;
      for (const id of ids) {
        if (!this.isAncestorOrSelf(candidate, id)) {
          coversAll = false;
          break;
        }
      }
      if (coversAll) return true;
    }
    return false;
  }

  private consolidate(choices: Choice[]): AllocationRequest | null {
    if (choices.length === 1) return this.fromOneChoice(choices[0]!);
    const merged = new Map<number, Piece>();
    const mappings = new Map<string, number[]>();
    for (const choice of choices) {
      let list = mappings.get(choice.suffix);
      if (list === undefined) mappings.set(choice.suffix, (list = []));
      for (const id of choice.providers) if (!list.includes(id)) list.push(id);
      for (const piece of choice.pieces) {
        const key = pieceKey(piece);
        const seen = merged.get(key);
        if (seen) seen.amount += piece.amount;
        // A copy (amounts of several groups add up on it), written out: V8 reads spread-built objects slowly.
        else merged.set(key, { providerId: piece.providerId, classId: piece.classId, amount: piece.amount });
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

  /**
   * Every distinct allocation request, produced on demand: tree by tree
   * (depth-first, upstream's default), or one from each tree in turn
   * (breadth-first: a limited answer then spreads over as many hosts as it
   * can, upstream's allocation_candidates_generation_strategy). Also yields
   * `null` every few thousand steps of search, so that a caller can hand the
   * event loop to other requests during a long search.
   */
  *requests(anchors: Iterable<number>, strategy: GenerationStrategy = 'depth-first'): Generator<AllocationRequest | null> {
    if (strategy === 'depth-first') {
      let visited = 0;
      for (const anchor of anchors) {
        if ((visited += 1) % 256 === 0) yield null;
        yield* this.anchorRequests(anchor);
      }
      return;
    }
    let active = [...anchors].map((anchor) => this.anchorRequests(anchor));
    while (active.length) {
      const still: Generator<AllocationRequest | null>[] = [];
      for (const tree of active) {
        for (let next = tree.next(); !next.done; next = tree.next()) {
          yield next.value;
          if (next.value !== null) {
            still.push(tree);
            break;
          }
        }
      }
      active = still;
    }
  }

  /** The requests one anchor tree offers, in stable order. */
  private *anchorRequests(anchor: number): Generator<AllocationRequest | null> {
    if (!this.rootOk(anchor)) return;
    const lists: Choice[][] = [];
    for (const group of this.input.groups) {
      const choices = group.suffix === '' ? this.spreadChoices(group, anchor) : this.singleChoices(group, anchor);
      if (!choices.length) return;
      lists.push(choices);
    }
    if (lists.length === 1) {
      // One group: each choice was checked to fit and names distinct (provider, class) pairs.
      for (const choice of lists[0]!) {
        const request = this.fromOneChoice(choice);
        if (request && this.firstTime(request)) yield request;
      }
      return;
    }
    for (const combo of this.combinations(lists)) {
      if (combo === null) {
        yield null;
        continue;
      }
      const request = this.consolidate(combo);
      if (request && this.firstTime(request)) yield request;
    }
  }

  /**
   * False for a request already produced from another anchor. A provider that
   * shares nothing is offered only to its own tree's anchor (and one anchor
   * never repeats a request), so only requests made entirely of sharing
   * providers can recur across anchors.
   */
  private firstTime(request: AllocationRequest): boolean {
    const sharing = this.input.candidates.anchorsOfSharing;
    if (sharing.size === 0 && request.pieces.length > 0) return true;
    for (const piece of request.pieces) if (!sharing.has(piece.providerId)) return true;
    const key = requestKey(request);
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    return true;
  }

  /**
   * One choice per group, in the order of the cartesian product of `lists`
   * (last group varying fastest), keeping only combinations that fit the
   * inventories, respect group_policy=isolate and same_subtree. A depth-first
   * search that checks capacity and isolation as each group is chosen, so a
   * dead branch is cut at its first bad choice instead of being enumerated:
   * with isolate, a matching of the groups still to choose onto providers not
   * yet used must exist, so the search never walks into a corner it cannot
   * leave (8 groups on 8 one-PGPU children: 8 steps per candidate, not 8^8).
   */
  private *combinations(lists: Choice[][]): Generator<Choice[] | null> {
    const depth = lists.length;
    if (depth === 1) {
      // One group: each choice was checked to fit, and names distinct (provider, class) pairs.
      for (const choice of lists[0]!) yield [choice];
      return;
    }
    const isolate = this.input.groupPolicy === 'isolate' && lists.filter((l) => l[0]!.suffix !== '').length > 1;
    // same_subtree sets are checked once their last group is chosen.
    const subtreeChecksAt = new Map<number, string[][]>();
    for (const suffixes of this.input.sameSubtrees) {
      const last = Math.max(...suffixes.map((s) => lists.findIndex((l) => l[0]!.suffix === s)));
      if (last < 0) continue;
      subtreeChecksAt.set(last, [...(subtreeChecksAt.get(last) ?? []), suffixes]);
    }
    const chosen: Choice[] = new Array<Choice>(depth);
    /** (provider, class) -> amount taken by the groups chosen so far. */
    const taken = new Map<number, number>();
    /** Providers used by suffixed groups so far (isolate). */
    const isolated = new Set<number>();
    let steps = 0;
    const self = this;

    function* walk(level: number): Generator<Choice[] | null> {
      for (const choice of lists[level]!) {
        if ((steps += 1) % 4096 === 0) yield null;
        const suffixed = isolate && choice.suffix !== '';
        const provider = choice.providers[0]!;
        if (suffixed && isolated.has(provider)) continue;
        if (!self.take(taken, choice.pieces)) continue;
        chosen[level] = choice;
        if (suffixed) isolated.add(provider);
        let subtreeOk = true;
        for (const suffixes of subtreeChecksAt.get(level) ?? NO_SUBTREE_SETS) {
          if (!self.sameSubtreeOk(chosen, level + 1, suffixes)) {
            subtreeOk = false;
            break;
          }
        }
        if (subtreeOk && (!isolate || self.canIsolate(lists, level + 1, isolated))) {
          if (level + 1 === depth) yield chosen.slice();
          else yield* walk(level + 1);
        }
        if (suffixed) isolated.delete(provider);
        self.release(taken, choice.pieces);
      }
    }
    if (depth > 0 && (!isolate || this.canIsolate(lists, 0, isolated))) yield* walk(0);
  }

  /** Adds a choice's amounts to `taken` if every (provider, class) total still fits; otherwise leaves `taken` as it was. */
  private take(taken: Map<number, number>, pieces: Piece[]): boolean {
    for (let i = 0; i < pieces.length; i += 1) {
      const piece = pieces[i]!;
      const key = pieceKey(piece);
      const total = (taken.get(key) ?? 0) + piece.amount;
      const inv = this.inventory(piece.providerId, piece.classId);
      if (!inv || inv.used + total > capacityOf(inv) || total > inv.maxUnit) {
        this.release(taken, pieces.slice(0, i));
        return false;
      }
      taken.set(key, total);
    }
    return true;
  }

  private release(taken: Map<number, number>, pieces: Piece[]): void {
    for (const piece of pieces) {
      const key = pieceKey(piece);
      const total = taken.get(key)! - piece.amount;
      if (total === 0) taken.delete(key);
      else taken.set(key, total);
    }
  }

  /**
   * Whether the suffixed groups from `from` on can each get a provider of
   * their own, none of them in `used` (Kuhn's augmenting paths: a few groups
   * times a few providers).
   */
  private canIsolate(lists: Choice[][], from: number, used: ReadonlySet<number>): boolean {
    const groups: number[][] = [];
    for (let level = from; level < lists.length; level += 1) {
      const list = lists[level]!;
      if (list[0]!.suffix === '') continue;
      groups.push([...new Set(list.map((c) => c.providers[0]!).filter((id) => !used.has(id)))]);
    }
    if (groups.length === 0) return true;
    const ownerOf = new Map<number, number>();
    const tryAssign = (g: number, visited: Set<number>): boolean => {
      for (const provider of groups[g]!) {
        if (visited.has(provider)) continue;
        visited.add(provider);
        const owner = ownerOf.get(provider);
        if (owner === undefined || tryAssign(owner, visited)) {
          ownerOf.set(provider, g);
          return true;
        }
      }
      return false;
    };
    return groups.every((_, g) => tryAssign(g, new Set()));
  }
}

const pieceKey = (piece: Piece): number => piece.providerId * 1_048_576 + piece.classId;

const NO_TRAITS: ReadonlySet<string> = new Set();
const NO_IDS: readonly number[] = [];
const NO_NODES: readonly ProviderNode[] = [];
const NO_SUBTREE_SETS: readonly string[][] = [];
const first = <T>(list: T[]): T => list[0]!;
function onlyOneEach<T>(lists: T[][]): boolean {
  for (const list of lists) if (list.length !== 1) return false;
  return true;
}

function intersects(a: ReadonlySet<number>, b: ReadonlySet<number>): boolean {
  if (a.size > b.size) return intersects(b, a);
  for (const x of a) if (b.has(x)) return true;
  return false;
}

function someIn(names: readonly string[], set: ReadonlySet<string>): boolean {
  for (const name of names) if (set.has(name)) return true;
  return false;
}

function requestKey(request: AllocationRequest): string {
  const pieces = request.pieces
    .map((p) => `${p.providerId}:${p.classId}:${p.amount}`)
    .sort()
    .join(',');
  const mappings = [...request.mappings]
    .map(([s, ids]) => `${s}=${[...ids].sort((a, b) => a - b).join('.')}`)
    .sort()
    .join(';');
  return `${pieces}|${mappings}`;
}

/** How long a search runs before it lets other requests in. */
const SLICE_MS = 50;

/** setTimeout(0) exists in Node and in Workers alike (setImmediate does not). */
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Keeps at most `limit` requests as they are offered. Stable order keeps the
 * first ones and is done at `limit`; random order keeps a uniform sample
 * (reservoir), so memory stays O(limit) either way.
 */
export class RequestPicker {
  private readonly kept: AllocationRequest[] = [];
  private offered = 0;

  constructor(
    private readonly limit: number | null,
    private readonly randomize: boolean,
    private readonly cap: number,
  ) {}

  get done(): boolean {
    return (this.cap > 0 && this.offered >= this.cap) || (!this.randomize && this.limit !== null && this.kept.length >= this.limit);
  }

  /**
   * Takes requests until done. A long search gives the event loop back every
   * `SLICE_MS`, so one pathological request cannot stall the others.
   */
  async offer(source: Iterable<AllocationRequest | null>): Promise<void> {
    if (this.done) return;
    let sliceStart = Date.now();
    for (const request of source) {
      if (request === null) {
        if (Date.now() - sliceStart >= SLICE_MS) {
          await yieldToEventLoop();
          sliceStart = Date.now();
        }
        continue;
      }
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
