// Gangs (docs/gangs.md): N hosts at once, each on a different root, all
// inside one domain (an aggregate), or none. Built on the candidates engine's
// public answer: one search of the whole query (every group, trait, taint,
// toleration, shared counter, ext_first_of as /allocation_candidates applies
// them), then the candidates are grouped by the domains of their hosts and
// one per host is taken while the members fit together (assemble.ts).
import type { BatchReader } from '../../db/client.js';
import type { Microversion } from '../../microversion.js';
import { type CandidateOptions, type CandidatesBody, searchCandidates } from '../../placement/candidates/index.js';
import { parseCandidateRequestWithExt } from '../../placement/candidates/parse.js';
import { assembleGang, candidatesOf, type Gang, type RankedGang, rankGangs, usedProviders } from './assemble.js';
import { type DomainFacts, readDomainFacts } from './domains.js';
import { type GangQuery, parseGangQuery } from './query.js';

export { GANG_KEYS, parseGangQuery, type GangQuery } from './query.js';
export type { Gang } from './assemble.js';

export interface GangAnswer {
  gangs: Gang[];
  /** Only when the engine's candidate cap or time budget cut the search: a domain may have more room than found. */
  incomplete?: true;
}

/** The options the gang search runs the engine with: stable order, one candidate per tree in turn (a cap cuts hosts evenly). */
export function gangSearchOptions(options: CandidateOptions): CandidateOptions {
  return { ...options, randomize: false, generationStrategy: 'breadth-first' };
}

/** What a gang search found, before ranking: every domain's gang (or none) and whether the search was cut. */
export interface DomainSearch {
  gangs: RankedGang[];
  /** Per domain (null: ext_domain=any), how many hosts can take one member now. */
  hostsPerDomain: Map<string | null, number>;
  /** Aggregate uuid -> its root members (the domains searched; empty with ext_domain=any). */
  domainRoots: Map<string, Set<string>>;
  /** The hosts (root uuids) that can take one member now, in any domain. */
  fittingHosts: Set<string>;
  incomplete: boolean;
}

/** Searches every domain for a gang of `count` (`query`: the whole GET query, gang parameters included). */
export async function searchDomains(
  reader: BatchReader,
  query: Record<string, string[]>,
  mv: Microversion,
  options: CandidateOptions,
  countRequired = true,
): Promise<DomainSearch & { gang: ReturnType<typeof parseGangQuery>['gang'] }> {
  const { gang, rest } = parseGangQuery(query, countRequired);
  const request = parseCandidateRequestWithExt(rest, mv, options.params);
  request.limit = null;
  const opts = gangSearchOptions(options);
  // The engine says whether its search stopped early (the candidate cap, the time budget): the gangs are then a lower bound.
  const { body, stopped } = await searchCandidates(reader, request, mv, opts);
  const facts = await readDomainFacts(reader, gang.domain === 'any' ? [] : gang.domains, usedProviders(body));
  return { gang, ...domainSearchOf(body, facts, gang, stopped !== null) };
}

/** The gangs of one engine answer, given the domains' facts (pure: a what-if copy of the cloud gives its own, ext/simulate). */
export function domainSearchOf(body: CandidatesBody, facts: DomainFacts, gang: GangQuery, cut: boolean): DomainSearch {
  const candidates = candidatesOf(body, facts);
  const gangs: RankedGang[] = [];
  const fittingHosts = new Set<string>();
  for (const c of candidates) if (c.host !== null) fittingHosts.add(c.host);
  const hostsPerDomain = new Map<string | null, number>();
  const domains: [string | null, (host: string) => boolean][] =
    gang.domain === 'any' ? [[null, () => true]] : [...facts.rootsOf].map(([agg, roots]) => [agg, (host: string) => roots.has(host)]);
  for (const [domain, inDomain] of domains) {
    const hosts = new Set<string>();
    for (const host of fittingHosts) if (inDomain(host)) hosts.add(host);
    hostsPerDomain.set(domain, hosts.size);
    if (hosts.size < gang.count) continue;
    const found = assembleGang(domain, candidates, inDomain, gang.count, body.provider_summaries);
    if (found) gangs.push(found);
  }
  return { gangs, hostsPerDomain, domainRoots: gang.domain === 'any' ? new Map() : facts.rootsOf, fittingHosts, incomplete: cut };
}

/** GET /ext/gang_candidates: at most `limit` gangs, the tightest domain first. */
export async function findGangs(
  reader: BatchReader,
  query: Record<string, string[]>,
  mv: Microversion,
  options: CandidateOptions,
): Promise<GangAnswer> {
  const { gang, gangs, incomplete } = await searchDomains(reader, query, mv, options);
  const ranked = rankGangs(gangs, gang);
  return incomplete ? { gangs: ranked, incomplete: true } : { gangs: ranked };
}
