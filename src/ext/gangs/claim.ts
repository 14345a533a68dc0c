// POST /ext/gangs, the domain side: which member a refused gang claim is
// about (the write path refuses the whole batch with placement's message and
// names the consumers of the claim its refusal concerns), and one lease on
// the whole gang, written in the claim's own batch. The claim itself is POST
// /allocations' own write (one guarded batch for every member: capacity
// guards, generation checks), called by the route.
import { conflict, DomainError, invalid } from '../../errors.js';
import type { BatchReader } from '../../db/client.js';
import type { ClaimAlongside } from '../../placement/writes/kernel.js';
import { ClaimRefused, ConsumerGenerationMismatch } from '../../placement/writes/refusals.js';
import { type DomainFacts, readDomainFacts } from './domains.js';
import { leaseExpiryMs, leaseStatement } from '../allocation-ends.js';
import type { PostGangBody } from './schemas.js';

/**
 * The write path's refusal, reworded to name the member(s) it concerns (the refusal carries the
 * consumers of the claim it is about); other errors unchanged.
 */
export function refusalOfGang(err: unknown, members: PostGangBody['members']): unknown {
  if (!(err instanceof DomainError) || err.problem !== 'conflict') return err;
  const concerned = new Set(err instanceof ClaimRefused || err instanceof ConsumerGenerationMismatch ? err.consumers : []);
  const named = Object.keys(members).filter((uuid) => concerned.has(uuid));
  const who = named.length ? `member ${named.join(', member ')}` : 'a member';
  return conflict(`Gang not claimed (nothing written): ${who}: ${err.message}`, err.code);
}

/**
 * One lease on every member, one expiry (the sweep releases them together,
 * docs/gangs.md): statements for the claim's own write batch, so the gang is
 * never claimed without its lease.
 */
export function gangLease(consumers: readonly string[], seconds: number, nowMs: number): { statements: ClaimAlongside; expiresAt: string } {
  return {
    statements: consumers.map((uuid) => leaseStatement(uuid, seconds, nowMs)),
    expiresAt: new Date(leaseExpiryMs(seconds, nowMs)).toISOString(),
  };
}

/**
 * With a `domain`, every member must run on a host (a non-sharing provider's
 * root) that is a member of that aggregate: a gang split across domains is
 * refused before anything is written (400 naming the member). A domain no host
 * is in, and a provider that does not exist, are said as such.
 */
export async function checkGangDomain(reader: BatchReader, domain: string, members: PostGangBody['members']): Promise<void> {
  const providers = [...new Set(Object.values(members).flatMap((m) => Object.keys(m.allocations)))];
  checkGangDomainOf(await readDomainFacts(reader, [domain], providers), domain, members);
}

/** The same check on facts given (pure: a what-if copy of the cloud gives its own, ext/simulate). */
export function checkGangDomainOf({ rootsOf, providers: facts }: DomainFacts, domain: string, members: PostGangBody['members']): void {
  for (const [uuid, m] of Object.entries(members)) {
    const unknown = Object.keys(m.allocations).find((rp) => !facts.has(rp));
    if (unknown)
      throw invalid(
        `Gang not claimed (nothing written): member ${uuid}: Allocation for resource provider '${unknown}' that does not exist.`,
      );
  }
  const roots = rootsOf.get(domain);
  if (!roots) {
    throw invalid(
      `Gang not claimed (nothing written): domain ${domain} is not an aggregate any host is in (no root provider is a member of it)`,
    );
  }
  for (const [uuid, m] of Object.entries(members)) {
    const inside = Object.keys(m.allocations).some((rp) => {
      const f = facts.get(rp);
      return f !== undefined && !f.sharing && roots.has(f.root);
    });
    if (!inside) throw invalid(`Gang not claimed (nothing written): member ${uuid} is not on a host of domain ${domain}`);
  }
}
