// POST /ext/gangs, the domain side: which member a refused gang claim is
// about (the write path refuses the whole batch with placement's message,
// naming a provider or a generation, not the consumer), and one lease on the
// whole gang, written in the claim's own batch. The claim itself is POST /allocations' own write (one guarded
// batch for every member: capacity guards, generation checks), called by the route.
import { conflict, DomainError, invalid } from '../../errors.js';
import type { BatchReader } from '../../db/client.js';
import type { ClaimAlongside } from '../../placement/writes/hooks.js';
import { readDomainFacts } from './domains.js';
import { leaseExpiryMs, leaseStatement } from '../leases/leases.js';
import type { PostGangBody } from './schemas.js';

/** The write path's refusal, reworded to name the member(s) it concerns; other errors unchanged. */
export function refusalOfGang(err: unknown, members: PostGangBody['members']): unknown {
  if (!(err instanceof DomainError) || err.problem !== 'conflict') return err;
  const named = Object.entries(members)
    .filter(([uuid, part]) => err.message.includes(uuid) || Object.keys(part.allocations).some((rp) => err.message.includes(rp)))
    .map(([uuid]) => uuid);
  const generation = /expected (\S+) but got (\S+)/.exec(err.message);
  if (!named.length && generation) {
    const got = generation[2] === 'null' ? null : Number(generation[2]);
    for (const [uuid, part] of Object.entries(members)) if ((part.consumer_generation ?? null) === got) named.push(uuid);
  }
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
 * refused before anything is written (400 naming the member).
 */
export async function checkGangDomain(reader: BatchReader, domain: string, members: PostGangBody['members']): Promise<void> {
  const providers = [...new Set(Object.values(members).flatMap((m) => Object.keys(m.allocations)))];
  const { rootsOf, providers: facts } = await readDomainFacts(reader, [domain], providers);
  const roots = rootsOf.get(domain) ?? new Set<string>();
  for (const [uuid, m] of Object.entries(members)) {
    const inside = Object.keys(m.allocations).some((rp) => {
      const f = facts.get(rp);
      return f !== undefined && !f.sharing && roots.has(f.root);
    });
    if (!inside) throw invalid(`Gang not claimed (nothing written): member ${uuid} is not on a host of domain ${domain}`);
  }
}
