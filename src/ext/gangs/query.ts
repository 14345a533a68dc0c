// The gang parameters of GET /ext/gang_candidates (and headroom's count):
// taken out of the query before the rest goes to the candidates engine's own
// parser, which rejects keys it does not know. Pure.
import { invalid } from '../../errors.js';
import { isUuidLike, normalizeUuid } from '../../shared/uuid.js';

/** Most members one gang may ask for. */
export const MAX_GANG = 1000;

export type DomainKind = 'aggregate' | 'any';

export interface GangQuery {
  /** Members: N hosts, each on a different root. */
  count: number;
  domain: DomainKind;
  /** ext_domain_member_of=in:A,B: only these aggregates may be domains; null: every aggregate. */
  domains: string[] | null;
  /** Most gangs answered; null: one per domain. */
  limit: number | null;
}

export const GANG_KEYS = ['count', 'ext_domain', 'ext_domain_member_of', 'limit'] as const;

const bad = (message: string) => invalid(`Invalid query string parameters: ${message}`);

function single(query: Record<string, string[]>, key: string): string | undefined {
  const values = query[key];
  if (!values) return undefined;
  if (values.length !== 1) throw bad(`'${key}' may be given once`);
  return values[0];
}

function positiveInt(raw: string, key: string, max: number): number {
  if (!/^[1-9][0-9]*$/.test(raw) || Number(raw) > max) throw bad(`'${key}' must be an integer from 1 to ${max}, got '${raw}'`);
  return Number(raw);
}

/** Splits the query into the gang's parameters and what the engine parses (every other key). */
export function parseGangQuery(query: Record<string, string[]>, countRequired = true): { gang: GangQuery; rest: Record<string, string[]> } {
  // A gang crosses a project's limit N times over: POST /ext/gangs enforces limits in the claim, the search does not pretend to.
  if (query.ext_within_limits) throw bad("'ext_within_limits' is not taken here: POST /ext/gangs checks project limits in the claim");
  const rawCount = single(query, 'count');
  if (rawCount === undefined && countRequired) throw bad("'count' is required (the number of hosts of the gang)");
  const count = rawCount === undefined ? 1 : positiveInt(rawCount, 'count', MAX_GANG);
  const rawDomain = single(query, 'ext_domain') ?? 'aggregate';
  if (rawDomain !== 'aggregate' && rawDomain !== 'any') throw bad(`'ext_domain' must be 'aggregate' or 'any', got '${rawDomain}'`);
  const rawMembers = single(query, 'ext_domain_member_of');
  let domains: string[] | null = null;
  if (rawMembers !== undefined) {
    if (rawDomain === 'any') throw bad("'ext_domain_member_of' needs ext_domain=aggregate");
    const list = rawMembers.startsWith('in:') ? rawMembers.slice(3) : rawMembers;
    domains = list.split(',').map((uuid) => {
      if (!isUuidLike(uuid)) throw bad(`'ext_domain_member_of' takes aggregate uuids (in:UUID,UUID...), got '${uuid}'`);
      return normalizeUuid(uuid);
    });
  }
  const rawLimit = single(query, 'limit');
  const limit = rawLimit === undefined ? null : positiveInt(rawLimit, 'limit', Number.MAX_SAFE_INTEGER);
  const rest: Record<string, string[]> = {};
  for (const [key, values] of Object.entries(query)) if (!(GANG_KEYS as readonly string[]).includes(key)) rest[key] = values;
  return { gang: { count, domain: rawDomain, domains, limit }, rest };
}
