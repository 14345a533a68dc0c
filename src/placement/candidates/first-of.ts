// ext_first_of=_A,_B,... (extension, docs/extensions-gpu.md; KEP-4816's prioritized list
// on Placement's granular groups): per tree, only the first alternative that
// can be satisfied there, with every other group of the request, is used.
// One search per combination of alternatives (a variant: the request without
// the alternatives not chosen), tried tree by tree in order of preference, so
// a request with three alternatives costs at most three searches of each
// tree, and a tree that takes the first costs one.
import { pyRepr } from '../../shared/validation-messages.js';
import { badCandidateRequest } from './errors.js';
import type { RequestGroup } from './parse.js';
import type { ProviderNode } from './research.js';
import {
  type AllocationRequest,
  CandidateSearch,
  type GenerationStrategy,
  requestsInOrder,
  type ResolvedGroup,
  type SearchInput,
} from './search.js';

/** Most combinations of alternatives one request may ask for (each is a search of a tree). */
const MAX_FIRST_OF_VARIANTS = 64;

/**
 * ext_first_of=_A,_B,...: suffixes of real groups, worded as upstream words
 * same_subtree's; a group may be an alternative in one list only.
 */
export function parseFirstOf(values: string[], groups: RequestGroup[]): string[][] {
  const lists: string[][] = [];
  const known = new Set(groups.map((g) => g.suffix));
  const seen = new Set<string>();
  for (const value of values) {
    const suffixes = value.split(',').map((s) => s.trim());
    if (suffixes.includes('')) {
      throw badCandidateRequest(
        'Empty string (unsuffixed group) can not be specified in `ext_first_of` query param.',
        'placement.query.bad_value',
      );
    }
    const missing = suffixes.filter((s) => !known.has(s));
    if (missing.length) {
      throw badCandidateRequest(
        `Real suffixes should be specified in \`ext_first_of\`: ${pyRepr(missing)} not found in ${pyRepr([...known])}.`,
        'placement.query.bad_value',
      );
    }
    const repeated = suffixes.filter((s, i) => seen.has(s) || suffixes.indexOf(s) !== i);
    if (repeated.length) {
      throw badCandidateRequest(
        `A group may be named once in \`ext_first_of\`: ${pyRepr([...new Set(repeated)])}.`,
        'placement.query.bad_value',
      );
    }
    for (const s of suffixes) seen.add(s);
    lists.push(suffixes);
  }
  const variants = lists.reduce((n, list) => n * list.length, 1);
  if (variants > MAX_FIRST_OF_VARIANTS) {
    throw badCandidateRequest(
      `\`ext_first_of\` may combine at most ${MAX_FIRST_OF_VARIANTS} alternatives; these lists combine ${variants}.`,
      'placement.query.bad_value',
    );
  }
  return lists;
}

/**
 * The groups of each variant, most preferred first: the first list's choice
 * varies slowest, so an earlier list's preference outranks a later one's.
 */
export function variantsOf<G extends { suffix: string }>(groups: G[], firstOf: string[][]): G[][] {
  let choices: string[][] = [[]];
  for (const list of firstOf) choices = choices.flatMap((chosen) => list.map((suffix) => [...chosen, suffix]));
  const alternatives = new Set(firstOf.flat());
  return choices.map((chosen) => groups.filter((g) => !alternatives.has(g.suffix) || chosen.includes(g.suffix)));
}

/** A search over trees: CandidateSearch, or several of them tried in order per tree. */
export interface TreeSearch {
  addTrees(nodes: Iterable<ProviderNode>): void;
  requests(anchors: Iterable<number>, strategy?: GenerationStrategy): Generator<AllocationRequest | null>;
  /** The first request a tree offers with usage as it stands now (headroom), or null. */
  firstRequestOf(anchor: number): AllocationRequest | null;
}

export class FirstOfSearch implements TreeSearch {
  private readonly searches: CandidateSearch[];

  constructor(input: SearchInput, variants: ResolvedGroup[][]) {
    this.searches = variants.map((groups) => new CandidateSearch({ ...input, groups }));
  }

  addTrees(nodes: Iterable<ProviderNode>): void {
    const list = [...nodes];
    for (const search of this.searches) search.addTrees(list);
  }

  requests(anchors: Iterable<number>, strategy: GenerationStrategy = 'depth-first'): Generator<AllocationRequest | null> {
    return requestsInOrder(anchors, strategy, (anchor) => this.treeRequests(anchor));
  }

  /** The most preferred variant's first request on the tree. */
  firstRequestOf(anchor: number): AllocationRequest | null {
    for (const search of this.searches) {
      const request = search.firstRequestOf(anchor);
      if (request) return request;
    }
    return null;
  }

  /** The first variant that gives the tree any request gives all of its requests; later ones are not tried. */
  private *treeRequests(anchor: number): Generator<AllocationRequest | null> {
    for (const search of this.searches) {
      let found = false;
      for (const request of search.anchorRequests(anchor)) {
        if (request !== null) found = true;
        yield request;
      }
      if (found) return;
    }
  }
}
