// GET /ext/headroom?count=N: how many more gangs of N fit per domain. Each
// tree's headroom (how many first-candidate claims of the request it takes
// now, headroom.ts) caps how many gangs can have a member there; a gang
// needs N different hosts, so k gangs fit in a domain when its hosts' counts,
// each capped at k, add up to k x N (the largest such k). As headroom does,
// each tree is counted from usage as it is now, on its own: a sharing
// provider several trees reach is counted in each of them.
import type { BatchReader } from '../../db/client.js';
import type { Microversion } from '../../microversion.js';
import type { CandidateOptions } from '../../placement/candidates/index.js';
import { parseCandidateRequestWithExt } from '../../placement/candidates/parse.js';
import { readDomainFacts } from '../gangs/domains.js';
import { parseGangQuery } from '../gangs/query.js';
import { type Headroom, findHeadroom } from './headroom.js';

export interface DomainHeadroom {
  /** The aggregate's uuid; null with ext_domain=any. */
  domain: string | null;
  gangs: number;
}

export interface GangHeadroom extends Headroom {
  count: number;
  /** Domains where at least one gang of `count` fits, most gangs first, then by uuid. */
  domains: DomainHeadroom[];
}

/** The most gangs of `count` distinct hosts that hosts with these per-host counts can hold. */
export function gangsThatFit(perHost: readonly number[], count: number): number {
  let lo = 0;
  let hi = Math.floor(perHost.reduce((a, b) => a + b, 0) / count);
  while (lo < hi) {
    const k = Math.ceil((lo + hi) / 2);
    const slots = perHost.reduce((sum, c) => sum + Math.min(c, k), 0);
    if (slots >= k * count) lo = k;
    else hi = k - 1;
  }
  return lo;
}

export async function findGangHeadroom(
  reader: BatchReader,
  query: Record<string, string[]>,
  mv: Microversion,
  options: CandidateOptions,
): Promise<GangHeadroom> {
  const { gang, rest } = parseGangQuery(query);
  const headroom = await findHeadroom(reader, parseCandidateRequestWithExt(rest, mv, options.params), mv, options);
  const perTree = new Map(headroom.trees.map((t) => [t.root_provider_uuid, t.count]));
  const domains: DomainHeadroom[] = [];
  if (gang.domain === 'any') {
    const gangs = gangsThatFit([...perTree.values()], gang.count);
    if (gangs > 0) domains.push({ domain: null, gangs });
  } else {
    const { rootsOf } = await readDomainFacts(reader, gang.domains, []);
    for (const [domain, roots] of rootsOf) {
      const gangs = gangsThatFit(
        [...roots].map((root) => perTree.get(root) ?? 0),
        gang.count,
      );
      if (gangs > 0) domains.push({ domain, gangs });
    }
    domains.sort((a, b) => b.gangs - a.gangs || (a.domain ?? '').localeCompare(b.domain ?? ''));
  }
  return { ...headroom, count: gang.count, domains };
}
