// The in-memory search over a loaded research context. For each anchor tree
// (a root, possibly helped by sharing providers) every request group gets
// its list of choices; a depth-first search picks one choice per group,
// tree by tree, cutting a branch at its first choice that cannot fit, so
// `limit` stops the work early and the cartesian product of
// the whole cloud is never built. Semantics follow upstream placement's
// allocation_candidate.py (_merge_candidates, group policy, same_subtree).
// The search runs within a time budget (TimeBudget, at the end), which
// headroom's walk (src/ext/headroom) takes too.
import { capacityOf, fits } from '../capacity.js';
import type { CapacityRule, Piece } from './index.js';
import type { CandidateInventories, Inventory, ProviderNode } from './cloud-model.js';

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
  /**
   * Providers the installed hooks keep out (device taints, index.ts): never a
   * choice, and a root here takes its whole tree out. Empty on a cloud without taints.
   */
  excluded?: ReadonlySet<number>;
  /** The installed hooks' capacity condition (shared counters, index.ts); null or absent where none constrains anything. */
  capacity?: CapacityRule | null;
}

/** The order candidates are produced in (upstream's allocation_candidates_generation_strategy). */
export type GenerationStrategy = 'depth-first' | 'breadth-first';

export type { Piece } from './index.js';

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
  /** group_policy=isolate with more than one suffixed group: each must get a provider of its own. */
  private readonly isolate: boolean;
  /** same_subtree sets by the index of their last group: checked once that group is chosen. */
  private readonly subtreeChecksAt: (string[][] | undefined)[] = [];
  /** same_subtree sets at each index of one of their other groups: whether the groups still to choose can complete them. */
  private readonly partialSubtreeChecksAt: (PartialSubtreeCheck[] | undefined)[] = [];
  /** The state of the walks done at once (one at a time, so one state serves them all). */
  private readonly eagerWalk: Walk;
  private readonly excluded: ReadonlySet<number>;
  /** The installed hooks' capacity condition (an extension's, e.g. shared counters); null on a cloud without any, so stock searches pay nothing. */
  private readonly extraCapacity: CapacityRule | null;

  constructor(private readonly input: SearchInput) {
    const { groups } = input;
    this.excluded = input.excluded ?? NO_EXCLUDED;
    this.isolate = input.groupPolicy === 'isolate' && groups.filter((g) => g.suffix !== '').length > 1;
    // A tree's choice lists come in group order (anchorRequests), so levels are group indices.
    for (const suffixes of input.sameSubtrees) {
      const levels = suffixes.map((s) => groups.findIndex((g) => g.suffix === s)).filter((level) => level >= 0);
      if (!levels.length) continue;
      const last = Math.max(...levels);
      (this.subtreeChecksAt[last] ??= []).push(suffixes);
      for (const level of levels) {
        if (level === last) continue;
        const laterLevels = levels.filter((other) => other > level);
        (this.partialSubtreeChecksAt[level] ??= []).push({ suffixes, laterLevels });
      }
    }
    this.eagerWalk = { chosen: new Array<Choice>(groups.length), taken: new TakenAmounts(), isolated: new Set() };
    this.extraCapacity = input.capacity ?? null;
    this.addTrees(input.nodes.values());
    for (const [sharing, anchors] of input.candidates.anchorsOfSharing) {
      const own = input.candidates.rootOf.get(sharing);
      if (this.excluded.size && (this.excluded.has(sharing) || (own !== undefined && this.excluded.has(own)))) continue;
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
      // A tainted provider (or any provider of a tainted root) is known but never a choice.
      if (this.excluded.size && (this.excluded.has(node.id) || this.excluded.has(node.rootId))) continue;
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
    return (
      inv !== undefined &&
      fits(inv, inv.used, amount) &&
      (this.extraCapacity === null || this.extraCapacityFits([{ providerId, classId, amount }]))
    );
  }

  /** Whether `pieces` (several may share a provider) meet the hooks' capacity condition. Only called when there is one. */
  private extraCapacityFits(pieces: readonly Piece[], taken?: TakenAmounts): boolean {
    return this.extraCapacity!.fits(pieces, taken);
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
      if (this.extraCapacity !== null && !this.extraCapacityFits(pieces)) continue;
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
    if (this.extraCapacity !== null && !this.extraCapacityFits(pieces)) return [];
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
    const members = this.members.get(anchor) ?? NO_NODES;
    for (let i = 0; i < members.length; i += 1) this.addSingleChoice(group, members[i]!, choices);
    if (group.resources.length) {
      for (const sharer of this.sharingByAnchor.get(anchor) ?? NO_IDS) {
        const node = this.input.nodes.get(sharer);
        if (node) this.addSingleChoice(group, node, choices);
      }
    }
    return choices;
  }

  /** `node` as the one provider of a suffixed group, when it can be. (Hot: one per provider, group and tree; no closures.) */
  private addSingleChoice(group: ResolvedGroup, node: ProviderNode, choices: Choice[]): void {
    if (!this.treeAllowed(group, node.rootId)) return;
    const { resources } = group;
    for (let i = 0; i < resources.length; i += 1) {
      const [classId, amount] = resources[i]!;
      if (!this.fitsAmount(node.id, classId, amount)) return;
    }
    if (!this.traitsOk(group, node.traits) || !this.aggregatesOk(group, node.id, null, null)) return;
    const pieces = new Array<Piece>(resources.length);
    for (let i = 0; i < resources.length; i += 1) {
      const [classId, amount] = resources[i]!;
      pieces[i] = { providerId: node.id, classId, amount };
    }
    if (this.extraCapacity !== null && resources.length > 1 && !this.extraCapacityFits(pieces)) return;
    choices.push({ suffix: group.suffix, pieces, providers: [node.id] });
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
    const ids = providersOfSet(choices, count, suffixes);
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

  /**
   * same_subtree before the last group of its set is chosen: the providers
   * its groups used so far (up to `level`) must have a common ancestor, and
   * one provider of the finished set must be an ancestor (or self) of all:
   * the lowest common ancestor is used already, or a group still to choose
   * offers it or one of its ancestors. A necessary condition only, so the
   * final check stays; it cuts a branch as soon as it cannot succeed (eight
   * groups on twenty sibling leaves: 20 x 8 x 20 steps instead of 20^8).
   */
  private subtreeStillPossible(chosen: Choice[], lists: Choice[][], level: number, check: PartialSubtreeCheck): boolean {
    const ids = providersOfSet(chosen, level + 1, check.suffixes);
    if (ids.length <= 1) return true;
    // Up from the first provider to the lowest ancestor of them all (none: they are in different trees).
    let lowest: number | null | undefined = ids[0];
    for (let steps = 0; lowest !== null && lowest !== undefined && steps <= this.input.nodes.size; steps += 1) {
      const candidate: number = lowest;
      if (ids.every((id) => this.isAncestorOrSelf(candidate, id))) break;
      lowest = this.input.nodes.get(candidate)?.parentId;
    }
    if (lowest === null || lowest === undefined) return false;
    if (ids.includes(lowest)) return true;
    for (const later of check.laterLevels) {
      for (const choice of lists[later]!) {
        for (const id of choice.providers) if (this.isAncestorOrSelf(id, lowest)) return true;
      }
    }
    return false;
  }

  /**
   * Before 1.29 a candidate uses at most one provider of each tree
   * (consolidate's last check): the providers of the choice at `level` may
   * not share a tree with another provider chosen so far. Checked as each
   * group is chosen, so such a branch ends at its first bad choice.
   */
  private oneProviderPerTree(chosen: Choice[], level: number): boolean {
    const { nodes } = this.input;
    const providers = chosen[level]!.providers;
    for (let p = 0; p < providers.length; p += 1) {
      const id = providers[p]!;
      const root = nodes.get(id)?.rootId;
      for (let q = 0; q < p; q += 1) if (nodes.get(providers[q]!)?.rootId === root) return false;
      for (let i = 0; i < level; i += 1) {
        for (const other of chosen[i]!.providers) if (other !== id && nodes.get(other)?.rootId === root) return false;
      }
    }
    return true;
  }

  private consolidate(choices: Choice[]): AllocationRequest | null {
    if (choices.length === 1) return this.fromOneChoice(choices[0]!);
    // A handful of pieces: a list searched in place beats a Map per request.
    const pieces: Piece[] = [];
    const mappings = new Map<string, number[]>();
    for (const choice of choices) {
      // Each group is one choice, so a suffix comes once; its provider list is distinct and never changed after.
      mappings.set(choice.suffix, choice.providers);
      for (const piece of choice.pieces) {
        const same = samePiece(pieces, piece);
        if (same) same.amount += piece.amount;
        // A copy (amounts of several groups add up on it), written out: V8 reads spread-built objects slowly.
        else pieces.push({ providerId: piece.providerId, classId: piece.classId, amount: piece.amount });
      }
    }
    // Groups were searched independently: amounts folded onto one provider must still fit.
    for (const piece of pieces) {
      const inv = this.inventory(piece.providerId, piece.classId);
      if (!inv || inv.used + piece.amount > capacityOf(inv) || piece.amount > inv.maxUnit) return null;
    }
    if (this.extraCapacity !== null && !this.extraCapacityFits(pieces)) return null;
    // Before 1.29, one provider per tree was judged as each group was chosen (oneProviderPerTree).
    return { pieces, mappings };
  }

  /** One group: its pieces were each checked to fit and name distinct (provider, class) pairs. */
  private fromOneChoice(choice: Choice): AllocationRequest | null {
    if (!this.input.nestedAware) {
      const roots = new Set(choice.providers.map((id) => this.input.nodes.get(id)?.rootId));
      if (roots.size !== choice.providers.length) return null;
    }
    return { pieces: choice.pieces, mappings: new Map<string, number[]>().set(choice.suffix, choice.providers) };
  }

  /**
   * Every distinct allocation request, produced on demand: tree by tree
   * (depth-first, upstream's default), or one from each tree in turn
   * (breadth-first: a limited answer then spreads over as many hosts as it
   * can, upstream's allocation_candidates_generation_strategy). Also yields
   * `null` every few thousand steps of search, so that a caller can hand the
   * event loop to other requests during a long search.
   */
  requests(anchors: Iterable<number>, strategy: GenerationStrategy = 'depth-first'): Generator<AllocationRequest | null> {
    return requestsInOrder(anchors, strategy, (anchor) => this.treeRequests(anchor));
  }

  /**
   * anchorRequests, with a single group's requests as a list (the usual query:
   * its choices are found at once anyway), so a full answer over a thousand
   * hosts makes no generator per tree.
   */
  private treeRequests(anchor: number): Iterable<AllocationRequest | null> {
    return this.input.groups.length === 1 ? this.oneGroupRequests(anchor, true) : this.anchorRequests(anchor);
  }

  /** A single group's requests on `anchor`: each choice was checked to fit and names distinct (provider, class) pairs. */
  private oneGroupRequests(anchor: number, dedupe: boolean): AllocationRequest[] {
    const requests: AllocationRequest[] = [];
    if (!this.rootOk(anchor) || this.excluded.has(anchor)) return requests;
    const group = this.input.groups[0]!;
    const choices = group.suffix === '' ? this.spreadChoices(group, anchor) : this.singleChoices(group, anchor);
    for (let i = 0; i < choices.length; i += 1) {
      const request = this.fromOneChoice(choices[i]!);
      if (request && (!dedupe || this.firstTime(request))) requests.push(request);
    }
    return requests;
  }

  /**
   * The first request `anchor` offers with usage as it stands now (headroom:
   * the claim a scheduler taking the first answer would make), or null.
   * Not deduplicated across anchors: each tree is judged on its own.
   */
  firstRequestOf(anchor: number): AllocationRequest | null {
    for (const request of this.anchorRequests(anchor, false)) if (request) return request;
    return null;
  }

  /**
   * The requests one anchor tree offers, in stable order (`dedupe`: each
   * request once across anchors); also for alternatives.ts, which tries several
   * searches per tree.
   */
  *anchorRequests(anchor: number, dedupe = true): Generator<AllocationRequest | null> {
    if (this.input.groups.length === 1) {
      yield* this.oneGroupRequests(anchor, dedupe);
      return;
    }
    if (!this.rootOk(anchor) || this.excluded.has(anchor)) return;
    const lists: Choice[][] = [];
    for (const group of this.input.groups) {
      const choices = group.suffix === '' ? this.spreadChoices(group, anchor) : this.singleChoices(group, anchor);
      if (!choices.length) return;
      lists.push(choices);
    }
    for (const combo of this.combinations(lists)) {
      if (combo === null) {
        yield null;
        continue;
      }
      const request = this.consolidate(combo);
      if (request && (!dedupe || this.firstTime(request))) yield request;
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
   * A tree with few combinations (the usual case) is walked at once, without
   * a generator per level; a larger one lazily, so `limit` and the candidate
   * cap stop it early and a long walk can hand over the event loop.
   */
  private *combinations(lists: Choice[][]): Generator<Choice[] | null> {
    const depth = lists.length;
    if (depth === 1) {
      // One group: each choice was checked to fit, and names distinct (provider, class) pairs.
      for (const choice of lists[0]!) yield [choice];
      return;
    }
    let count = 1;
    for (const list of lists) count *= list.length;
    if (count <= EAGER_COMBINATIONS) {
      const found: Choice[][] = [];
      const walk = this.eagerWalk;
      if (!this.isolate || this.canIsolate(lists, 0, walk.isolated)) this.walkInto(walk, lists, 0, found);
      yield* found;
      return;
    }
    const walk: Walk = { chosen: new Array<Choice>(depth), taken: new TakenAmounts(), isolated: new Set() };
    let steps = 0;
    const self = this;
    function* lazily(level: number): Generator<Choice[] | null> {
      for (const choice of lists[level]!) {
        if ((steps += 1) % 4096 === 0) yield null;
        const step = self.enter(walk, lists, level, choice);
        if (step === Step.Skipped) continue;
        if (step === Step.Open) {
          if (level + 1 === depth) yield walk.chosen.slice(0, depth);
          else yield* lazily(level + 1);
        }
        self.leave(walk, choice);
      }
    }
    if (!this.isolate || this.canIsolate(lists, 0, walk.isolated)) yield* lazily(0);
  }

  /** combinations() of a small tree, into `found`, in the same order. */
  private walkInto(walk: Walk, lists: Choice[][], level: number, found: Choice[][]): void {
    for (const choice of lists[level]!) {
      const step = this.enter(walk, lists, level, choice);
      if (step === Step.Skipped) continue;
      if (step === Step.Open) {
        if (level + 1 === lists.length) found.push(walk.chosen.slice(0, lists.length));
        else this.walkInto(walk, lists, level + 1, found);
      }
      this.leave(walk, choice);
    }
  }

  /**
   * Chooses `choice` for group `level` if its amounts still fit with the
   * choices above it (and, under isolate, its provider is free). Open: every
   * check passed, go deeper; Closed: chosen but a dead end (same_subtree, or
   * no isolation left for the groups below). Both must be undone by leave().
   */
  private enter(walk: Walk, lists: Choice[][], level: number, choice: Choice): Step {
    const suffixed = this.isolate && choice.suffix !== '';
    const provider = choice.providers[0]!;
    if (suffixed && walk.isolated.has(provider)) return Step.Skipped;
    if (!this.take(walk.taken, choice.pieces)) return Step.Skipped;
    walk.chosen[level] = choice;
    if (suffixed) walk.isolated.add(provider);
    for (const suffixes of this.subtreeChecksAt[level] ?? NO_SUBTREE_SETS) {
      if (!this.sameSubtreeOk(walk.chosen, level + 1, suffixes)) return Step.Closed;
    }
    for (const check of this.partialSubtreeChecksAt[level] ?? NO_PARTIAL_CHECKS) {
      if (!this.subtreeStillPossible(walk.chosen, lists, level, check)) return Step.Closed;
    }
    if (!this.input.nestedAware && !this.oneProviderPerTree(walk.chosen, level)) return Step.Closed;
    if (this.isolate && !this.canIsolate(lists, level + 1, walk.isolated)) return Step.Closed;
    return Step.Open;
  }

  private leave(walk: Walk, choice: Choice): void {
    if (this.isolate && choice.suffix !== '') walk.isolated.delete(choice.providers[0]!);
    this.release(walk.taken, choice.pieces);
  }

  /** Adds a choice's amounts to `taken` if every (provider, class) total still fits; otherwise leaves `taken` as it was. */
  private take(taken: TakenAmounts, pieces: Piece[]): boolean {
    for (let i = 0; i < pieces.length; i += 1) {
      const piece = pieces[i]!;
      const total = taken.of(piece) + piece.amount;
      const inv = this.inventory(piece.providerId, piece.classId);
      if (!inv || inv.used + total > capacityOf(inv) || total > inv.maxUnit) {
        for (let j = 0; j < i; j += 1) taken.add(pieces[j]!, -pieces[j]!.amount);
        return false;
      }
      taken.add(piece, piece.amount);
    }
    if (this.extraCapacity !== null && !this.extraCapacityFits(pieces, taken)) {
      this.release(taken, pieces);
      return false;
    }
    return true;
  }

  private release(taken: TakenAmounts, pieces: Piece[]): void {
    for (const piece of pieces) taken.add(piece, -piece.amount);
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

/**
 * The amounts the groups chosen so far take per (provider, class): at most
 * a few pieces per group chosen, so short parallel lists searched in place,
 * with no allocation per step of the search (a Map allocated on every set).
 */
class TakenAmounts {
  private readonly providers: number[] = [];
  private readonly classes: number[] = [];
  private readonly amounts: number[] = [];

  private indexOf(piece: Piece): number {
    for (let i = 0; i < this.providers.length; i += 1) {
      if (this.providers[i] === piece.providerId && this.classes[i] === piece.classId) return i;
    }
    return -1;
  }

  /** Calls `fn` with each (class, amount) taken on `providerId`. */
  forEachOn(providerId: number, fn: (classId: number, amount: number) => void): void {
    for (let i = 0; i < this.providers.length; i += 1) if (this.providers[i] === providerId) fn(this.classes[i]!, this.amounts[i]!);
  }

  of(piece: Piece): number {
    const i = this.indexOf(piece);
    return i < 0 ? 0 : this.amounts[i]!;
  }

  /** Adds `amount` (negative to give back) to the piece's (provider, class); an entry back at 0 leaves the lists. */
  add(piece: Piece, amount: number): void {
    const i = this.indexOf(piece);
    if (i >= 0) {
      const total = this.amounts[i]! + amount;
      if (total !== 0) {
        this.amounts[i] = total;
        return;
      }
      const last = this.providers.length - 1;
      this.providers[i] = this.providers[last]!;
      this.classes[i] = this.classes[last]!;
      this.amounts[i] = this.amounts[last]!;
      this.providers.pop();
      this.classes.pop();
      this.amounts.pop();
      return;
    }
    this.providers.push(piece.providerId);
    this.classes.push(piece.classId);
    this.amounts.push(amount);
  }
}

/** The distinct providers the first `count` choices of a same_subtree set's groups use, in order. */
function providersOfSet(choices: Choice[], count: number, suffixes: string[]): number[] {
  const ids: number[] = [];
  for (let i = 0; i < count; i += 1) {
    const choice = choices[i]!;
    if (!suffixes.includes(choice.suffix)) continue;
    for (const id of choice.providers) if (!ids.includes(id)) ids.push(id);
  }
  return ids;
}

/** The piece of `pieces` on the same provider and class as `piece`, if any. */
function samePiece(pieces: Piece[], piece: Piece): Piece | undefined {
  for (let i = 0; i < pieces.length; i += 1) {
    const other = pieces[i]!;
    if (other.providerId === piece.providerId && other.classId === piece.classId) return other;
  }
  return undefined;
}

const NO_TRAITS: ReadonlySet<string> = new Set();
const NO_EXCLUDED: ReadonlySet<number> = new Set();
const NO_IDS: readonly number[] = [];
const NO_NODES: readonly ProviderNode[] = [];
const NO_SUBTREE_SETS: readonly string[][] = [];
const NO_PARTIAL_CHECKS: readonly PartialSubtreeCheck[] = [];

/** A same_subtree set seen from one of its groups before the last: the levels of its groups still to choose. */
interface PartialSubtreeCheck {
  suffixes: string[];
  laterLevels: number[];
}

/** A tree with at most this many combinations of choices is walked at once (no generators; still bounded work). */
const EAGER_COMBINATIONS = 64;

/** The choices made so far in one walk of a tree's combinations, and what they take. */
interface Walk {
  chosen: Choice[];
  taken: TakenAmounts;
  /** Providers used by suffixed groups so far (isolate). */
  isolated: Set<number>;
}

/** What choosing one choice at one level of a walk led to. */
const Step = { Skipped: 0, Closed: 1, Open: 2 } as const;
type Step = (typeof Step)[keyof typeof Step];
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

/**
 * The requests of every anchor tree, `perTree` giving one tree's: tree by
 * tree (depth-first), or one from each tree in turn (breadth-first). Yields
 * `null` every 256 trees, so a caller can hand over the event loop.
 */
export function* requestsInOrder(
  anchors: Iterable<number>,
  strategy: GenerationStrategy,
  perTree: (anchor: number) => Iterable<AllocationRequest | null>,
): Generator<AllocationRequest | null> {
  if (strategy === 'depth-first') {
    let visited = 0;
    for (const anchor of anchors) {
      if ((visited += 1) % 256 === 0) yield null;
      const requests = perTree(anchor);
      if (Array.isArray(requests)) for (let i = 0; i < requests.length; i += 1) yield requests[i];
      else yield* requests;
    }
    return;
  }
  let active = [...anchors].map((anchor) => perTree(anchor)[Symbol.iterator]());
  while (active.length) {
    const still: Iterator<AllocationRequest | null>[] = [];
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

/** How long a search runs before it lets other requests in. */
/**
 * Keeps at most `limit` requests as they are offered. Stable order keeps the
 * first ones and is done at `limit`; random order keeps a uniform sample
 * (reservoir), so memory stays O(limit) either way.
 */
export class RequestPicker {
  private readonly kept: AllocationRequest[] = [];
  private offered = 0;
  /** When the search gives up and answers with what it has. */
  private readonly budget: TimeBudget;
  private outOfTime = false;

  constructor(
    private readonly limit: number | null,
    private readonly randomize: boolean,
    private readonly cap: number,
    timeBudgetMs = 0,
  ) {
    this.budget = new TimeBudget(timeBudgetMs);
  }

  get done(): boolean {
    return (
      this.outOfTime ||
      (this.cap > 0 && this.offered >= this.cap) ||
      (!this.randomize && this.limit !== null && this.kept.length >= this.limit)
    );
  }

  /** Takes requests until done; a long search shares the event loop (TimeBudget, below). */
  async offer(source: Iterable<AllocationRequest | null>): Promise<void> {
    if (this.done) return;
    for (const request of source) {
      if (request === null) {
        const step = this.budget.step();
        if (step === 'spent') {
          this.outOfTime = true;
          return;
        }
        if (step === 'pause') await this.budget.pause();
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

  /** Why the search stopped before every candidate was seen, if it did: the cap or the time budget (a limit is no cut). */
  get cutBy(): 'cap' | 'time_budget' | null {
    if (this.outOfTime) return 'time_budget';
    return this.cap > 0 && this.offered >= this.cap ? 'cap' : null;
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

// --- The time budget ----------------------------------------------------------
// How long one search may run before it answers with what it found, and how
// it shares the event loop meanwhile: the candidates' search (RequestPicker)
// and headroom's walk (src/ext/headroom) take the same budget.
/** How long a search runs before it gives the event loop back, so one pathological request cannot stall the others. */
const SLICE_MS = 50;

/** setTimeout(0) exists in Node and in Workers alike (setImmediate does not). */
const yieldToEventLoop = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

export class TimeBudget {
  private readonly deadline: number;
  private sliceStart: number;

  /** `ms` 0 or absent: no limit. */
  constructor(
    ms = 0,
    private readonly clock: () => number = Date.now,
  ) {
    const now = clock();
    this.deadline = ms > 0 ? now + ms : Number.POSITIVE_INFINITY;
    this.sliceStart = now;
  }

  /**
   * Between two steps of a search, synchronously (a search takes thousands of
   * steps, and an await at each one costs a turn of the microtask queue):
   * 'spent' when the budget is spent (the search answers with what it has),
   * 'pause' when a slice has run and the caller gives the event loop back
   * (`await budget.pause()`) before its next step, 'go' otherwise.
   */
  step(): 'go' | 'pause' | 'spent' {
    const now = this.clock();
    if (now >= this.deadline) return 'spent';
    return now - this.sliceStart >= SLICE_MS ? 'pause' : 'go';
  }

  /** Gives the event loop back; the next slice starts when it returns. */
  async pause(): Promise<void> {
    await yieldToEventLoop();
    this.sliceStart = this.clock();
  }
}
