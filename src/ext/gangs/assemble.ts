// Gangs out of one answer of the candidates engine (pure): each candidate is
// tied to its host (the root of the tree it runs on, not a sharing provider),
// then per domain one candidate per host is taken, the hosts with the most
// room first (byRoom), each host's candidates in the engine's order, while the
// members so far still fit together (amounts of several members on one
// provider, a sharing provider, add up against the summaries' capacity and
// usage), until `count` members. A domain's "free hosts" are the hosts where
// one member fits now; the tightest domain (fewest left free after the gang)
// comes first, then the domain's uuid.
import type { CandidatesBody } from '../../placement/candidates/index.js';
import type { DictAllocationRequestJson } from '../../placement/schemas/responses.js';
import type { DomainFacts } from './domains.js';
import type { GangQuery } from './query.js';

export type Allocations = Record<string, { resources: Record<string, number> }>;
export interface MemberRequest {
  allocations: Allocations;
  mappings?: Record<string, string[]>;
}
type Summary = CandidatesBody['provider_summaries'][string];

export interface Gang {
  /** The aggregate's uuid; null with ext_domain=any. */
  domain: string | null;
  allocation_requests: MemberRequest[];
  provider_summaries: Record<string, Summary>;
}

/** A gang as assembled, with what orders it. */
export interface RankedGang extends Gang {
  /** Hosts of the domain where a member fits now, less the gang's. */
  freeAfter: number;
}

export interface Candidate {
  request: MemberRequest;
  /** Root uuid of the host tree; null when every provider it uses is a sharing provider. */
  host: string | null;
}

/** The allocation requests of an answer (1.12+ dict form) each with its host. */
export function candidatesOf(body: CandidatesBody, facts: DomainFacts): Candidate[] {
  const out: Candidate[] = [];
  for (const raw of body.allocation_requests) {
    if (Array.isArray(raw.allocations)) continue;
    const dict = raw as DictAllocationRequestJson; // 1.12+ (gangs are 1.25+): never the list form
    const request: MemberRequest = dict.mappings
      ? { allocations: dict.allocations, mappings: dict.mappings }
      : { allocations: dict.allocations };
    let host: string | null = null;
    for (const uuid of Object.keys(request.allocations)) {
      const f = facts.providers.get(uuid);
      if (f && !f.sharing) host = f.root;
    }
    out.push({ request, host });
  }
  return out;
}

/** Every provider uuid an answer's requests use. */
export function usedProviders(body: CandidatesBody): string[] {
  const used = new Set<string>();
  for (const raw of body.allocation_requests)
    if (!Array.isArray(raw.allocations)) for (const uuid of Object.keys(raw.allocations)) used.add(uuid);
  return [...used];
}

/**
 * The gang of one domain (`inDomain`: which hosts belong), or null when
 * fewer than `count` hosts can take a member together.
 */
export function assembleGang(
  domain: string | null,
  candidates: readonly Candidate[],
  inDomain: (host: string) => boolean,
  count: number,
  summaries: Readonly<Record<string, Summary>>,
): RankedGang | null {
  const hosts = new Set<string>();
  const taken = new Set<string>();
  const added = new Map<string, number>(); // "provider class" -> amount the members so far add to its usage
  const members: MemberRequest[] = [];
  for (const { request, host } of byRoom(candidates, inDomain, summaries)) {
    hosts.add(host);
    if (members.length === count || taken.has(host)) continue;
    if (!fitsWith(request.allocations, added, summaries)) continue;
    for (const [uuid, { resources }] of Object.entries(request.allocations))
      for (const [rc, amount] of Object.entries(resources)) added.set(`${uuid} ${rc}`, (added.get(`${uuid} ${rc}`) ?? 0) + amount);
    taken.add(host);
    members.push(request);
  }
  if (members.length < count) return null;
  return {
    domain,
    allocation_requests: members,
    provider_summaries: summariesOf(members, taken, summaries),
    freeAfter: hosts.size - count,
  };
}

/**
 * The domain's candidates, the hosts with the most room first (how many
 * members like their first candidate they could still take), each host's
 * candidates in the engine's order, ties in the engine's order: a gang on the
 * emptiest hosts leaves the partly used ones for smaller requests and the
 * most room for the next gangs (three hosts taking two members each hold
 * three gangs of two, not two).
 */
function byRoom(
  candidates: readonly Candidate[],
  inDomain: (host: string) => boolean,
  summaries: Readonly<Record<string, Summary>>,
): { request: MemberRequest; host: string }[] {
  const room = new Map<string, number>();
  const mine: { request: MemberRequest; host: string; index: number }[] = [];
  candidates.forEach(({ request, host }, index) => {
    if (host === null || !inDomain(host)) return;
    if (!room.has(host)) room.set(host, roomOf(request.allocations, summaries));
    mine.push({ request, host, index });
  });
  return mine.sort((a, b) => room.get(b.host)! - room.get(a.host)! || a.index - b.index);
}

/** How many times the summaries' free capacity takes these allocations. */
function roomOf(allocations: Allocations, summaries: Readonly<Record<string, Summary>>): number {
  let times = Number.POSITIVE_INFINITY;
  for (const [uuid, { resources }] of Object.entries(allocations)) {
    for (const [rc, amount] of Object.entries(resources)) {
      const r = summaries[uuid]?.resources[rc];
      if (r && amount > 0) times = Math.min(times, Math.floor((r.capacity - r.used) / amount));
    }
  }
  return Number.isFinite(times) ? times : 0;
}

function fitsWith(allocations: Allocations, added: ReadonlyMap<string, number>, summaries: Readonly<Record<string, Summary>>): boolean {
  for (const [uuid, { resources }] of Object.entries(allocations)) {
    for (const [rc, amount] of Object.entries(resources)) {
      const before = added.get(`${uuid} ${rc}`);
      if (before === undefined) continue; // no earlier member uses it: the engine found it fits
      const r = summaries[uuid]?.resources[rc];
      if (!r || r.used + before + amount > r.capacity) return false;
    }
  }
  return true;
}

/** Summaries of the providers the members use and, from 1.29, of every provider of their host trees. */
function summariesOf(members: readonly MemberRequest[], roots: ReadonlySet<string>, summaries: Readonly<Record<string, Summary>>) {
  const out: Record<string, Summary> = {};
  for (const m of members) for (const uuid of Object.keys(m.allocations)) if (summaries[uuid]) out[uuid] = summaries[uuid];
  for (const [uuid, s] of Object.entries(summaries)) if (s.root_provider_uuid && roots.has(s.root_provider_uuid)) out[uuid] = s;
  return out;
}

/** Tightest domain first (fewest hosts left free after the gang), then by domain uuid. */
export function rankGangs(gangs: RankedGang[], query: GangQuery): Gang[] {
  gangs.sort((a, b) => a.freeAfter - b.freeAfter || (a.domain ?? '').localeCompare(b.domain ?? ''));
  const kept = query.limit === null ? gangs : gangs.slice(0, query.limit);
  return kept.map(({ domain, allocation_requests, provider_summaries }) => ({ domain, allocation_requests, provider_summaries }));
}
