// Prioritized alternatives among granular groups (CandidateRequest.alternatives,
// which an extension's parameter sets; KEP-4816's prioritized list on
// Placement's granular groups): per tree, only the first alternative that can
// be satisfied there, with every other group of the request, is used.
// One search per combination of alternatives (a variant: the request without
// the alternatives not chosen), tried tree by tree in order of preference, so
// a request with three alternatives costs at most three searches of each
// tree, and a tree that takes the first costs one.
import type { ProviderNode } from './cloud-model.js';
import {
  type AllocationRequest,
  CandidateSearch,
  type GenerationStrategy,
  requestsInOrder,
  type ResolvedGroup,
  type SearchInput,
} from './search.js';

/**
 * The groups of each variant, most preferred first: the first list's choice
 * varies slowest, so an earlier list's preference outranks a later one's.
 */
export function variantsOf<G extends { suffix: string }>(groups: G[], lists: string[][]): G[][] {
  let choices: string[][] = [[]];
  for (const list of lists) choices = choices.flatMap((chosen) => list.map((suffix) => [...chosen, suffix]));
  const alternatives = new Set(lists.flat());
  return choices.map((chosen) => groups.filter((g) => !alternatives.has(g.suffix) || chosen.includes(g.suffix)));
}

/** A search over trees: CandidateSearch, or several of them tried in order per tree. */
export interface TreeSearch {
  addTrees(nodes: Iterable<ProviderNode>): void;
  requests(anchors: Iterable<number>, strategy?: GenerationStrategy): Generator<AllocationRequest | null>;
  /** The first request a tree offers with usage as it stands now (headroom), or null. */
  firstRequestOf(anchor: number): AllocationRequest | null;
}

export class AlternativesSearch implements TreeSearch {
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
