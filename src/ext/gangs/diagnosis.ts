// "Why no host" for a gang (count=N, docs/gangs.md), the gangs' part of
// GET /diagnostics/allocation_candidates (a DiagnosisPart, installed from the
// extension's object): the gang search of
// GET /ext/gang_candidates is run as it is (same engine answer, same domains),
// and when no domain holds N hosts that take a member together, the answer
// names the best domain (the most hosts that fit one member) and what it
// lacks: how many hosts short, and for its hosts that fit no member the
// per-host reason of the plain diagnosis (the member request replayed
// constraint by constraint, why-no-host.ts).
import * as z from 'zod';
import {
  type Diagnosis,
  type DiagnosisContext,
  type DiagnosisPart,
  diagnoseCandidates,
  HostVerdict,
} from '../../diagnostics/why-no-host.js';
import type { Microversion } from '../../microversion.js';
import type { CandidateRequest } from '../../placement/candidates/parse.js';
import { MV } from '../../placement/versions.js';
import { badQuery } from '../../shared/validation-messages.js';
import { readDomainFacts } from './domains.js';
import { GANG_KEYS, type GangQuery, parseGangQuery, searchDomains } from './index.js';

/** Most hosts of the best domain explained one by one (each costs a small query). */
export const MAX_DOMAIN_HOSTS = 50;

export const BestDomain = z.object({
  domain: z.string().nullable().describe("the aggregate's uuid; null with ext_domain=any"),
  hosts: z
    .number()
    .int()
    .describe('hosts (root providers, sharing providers excepted) in the domain; with ext_domain=any, the hosts that fit'),
  hosts_that_fit: z.number().int().describe('hosts that can take one member now'),
  hosts_short: z.number().int().describe('count minus hosts_that_fit (0: enough hosts, but the members do not fit together)'),
  lacks: z.string(),
  hosts_that_do_not_fit: z
    .array(HostVerdict)
    .describe(`the domain's other hosts, each with the first constraint it fails (at most ${MAX_DOMAIN_HOSTS})`),
  more_hosts_that_do_not_fit: z.number().int().optional().describe('how many more were not explained'),
});
export type BestDomain = z.infer<typeof BestDomain>;

export const GangDiagnosis = z.object({
  count: z.number().int(),
  domain: z.enum(['aggregate', 'any']),
  domains_that_fit: z.number().int().describe('domains that hold a gang of count now (GET /ext/gang_candidates answers one per domain)'),
  reason: z.string(),
  best_domain: BestDomain.optional().describe('only when no domain holds the gang: the domain with the most hosts that fit a member'),
  incomplete: z
    .literal(true)
    .optional()
    .describe("the engine's candidate cap or time budget cut the search: a domain may have more room than found"),
});
export type GangDiagnosis = z.infer<typeof GangDiagnosis>;

/** The diagnosis with the gang's verdict. */
export type GangAwareDiagnosis = Diagnosis & { gang?: GangDiagnosis };

const hostsText = (n: number) => `${n} host${n === 1 ? '' : 's'}`;

/**
 * The plain diagnosis of one member (`member`: the query without the gang's
 * parameters) plus the gang's verdict; `query` is the whole query, gang
 * parameters included, as GET /ext/gang_candidates takes it.
 */
export async function diagnoseGang(
  ctx: DiagnosisContext,
  query: Record<string, string[]>,
  member: CandidateRequest,
  gang: GangQuery,
  mv: Microversion,
  hostNames: string[],
): Promise<GangAwareDiagnosis> {
  const search = await searchDomains(ctx.store.nearby, query, mv, ctx.options);
  const fit = search.gangs.length;
  const verdict: GangDiagnosis = { count: gang.count, domain: gang.domain, domains_that_fit: fit, reason: '' };
  if (search.incomplete) verdict.incomplete = true;
  if (fit > 0) {
    verdict.reason = `${fit} domain${fit === 1 ? '' : 's'} hold${fit === 1 ? 's' : ''} a gang of ${gang.count}`;
    return { ...(await diagnoseCandidates(ctx, member, mv, hostNames)), gang: verdict };
  }
  // The best domain: most hosts that fit a member, then the first by uuid (the search's order).
  let best: { domain: string | null; fit: number } | null = null;
  for (const [domain, n] of search.hostsPerDomain) if (!best || n > best.fit) best = { domain, fit: n };
  if (!best) {
    verdict.reason = gang.domains
      ? `none of the aggregates ${gang.domains.join(', ')} has a host (a root provider) as member`
      : 'no aggregate has a host (a root provider) as member: there is no domain';
    return { ...(await diagnoseCandidates(ctx, member, mv, hostNames)), gang: verdict };
  }
  const members = best.domain === null ? [] : [...(search.domainRoots.get(best.domain) ?? [])].sort();
  // A sharing provider (MISC_SHARES_VIA_AGGREGATE) in the domain serves its hosts: it is no host itself.
  const { providers } = await readDomainFacts(ctx.store.nearby, [], members);
  const roots = members.filter((root) => !providers.get(root)?.sharing);
  const notFitting = roots.filter((root) => !search.fittingHosts.has(root));
  const explained = notFitting.slice(0, MAX_DOMAIN_HOSTS);
  const asked = new Set(hostNames);
  const diagnosis = await diagnoseCandidates(ctx, member, mv, [...hostNames, ...explained.filter((root) => !asked.has(root))]);
  const wanted = new Set(explained);
  const short = Math.max(0, gang.count - best.fit);
  const where = best.domain === null ? 'the cloud (ext_domain=any)' : `aggregate ${best.domain}`;
  const lacks =
    short > 0
      ? `${hostsText(short)} short: ${hostsText(best.fit)} of ${where} can take a member, ${gang.count} needed`
      : `${hostsText(best.fit)} of ${where} can each take a member, but not ${gang.count} members together (their amounts on a shared provider add up)`;
  const bestDomain: BestDomain = {
    domain: best.domain,
    hosts: best.domain === null ? best.fit : roots.length,
    hosts_that_fit: best.fit,
    hosts_short: short,
    lacks,
    hosts_that_do_not_fit: diagnosis.hosts.filter((v) => wanted.has(v.host)),
  };
  if (notFitting.length > explained.length) bestDomain.more_hosts_that_do_not_fit = notFitting.length - explained.length;
  verdict.best_domain = bestDomain;
  verdict.reason = `no domain holds a gang of ${gang.count}; the best, ${where}: ${lacks}`;
  return { ...diagnosis, hosts: diagnosis.hosts.filter((v) => asked.has(v.host)), gang: verdict };
}

/** The gangs' question to GET /diagnostics/allocation_candidates: count=N (and its domain parameters), as GET /ext/gang_candidates takes them. */
export const gangDiagnosis: DiagnosisPart = {
  key: 'gang',
  schema: GangDiagnosis.optional().describe('count=N given (1.25+): whether a gang of N fits in one domain, and if not, why'),
  question: {
    query: [
      { name: 'count', description: 'extension (1.25+): explain a gang of this many hosts, as GET /ext/gang_candidates searches it' },
      { name: 'ext_domain', description: "extension, with count: 'aggregate' (default) or 'any'" },
      { name: 'ext_domain_member_of', description: 'extension, with count: in:AGG1,AGG2 - only these aggregates may be domains' },
    ],
    answers: 'and with count the gang verdict',
    // `limit` counts gangs there, but alone it is the plain query's own.
    takes: (query) => GANG_KEYS.some((key) => key !== 'limit' && key in query),
    ask: (query, mv, parse) => {
      if (!mv.atLeast(MV.GRANULAR)) throw badQuery('count (a gang) needs microversion 1.25 or later');
      const { gang, rest } = parseGangQuery(query);
      const member = parse(rest);
      return (ctx, hosts) => diagnoseGang(ctx, query, member, gang, mv, hosts);
    },
  },
};
