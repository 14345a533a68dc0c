// POST /ext/gangs, the domain side: which member a refused gang claim is
// about (the write path refuses the whole batch with placement's message,
// naming a provider or a generation, not the consumer), and one lease on the
// whole gang. The claim itself is POST /allocations' own write (one guarded
// batch for every member: capacity guards, generation checks), called by the route.
import { conflict, DomainError } from '../../errors.js';
import type { DataStore } from '../../db/client.js';
import { putLease } from '../leases.js';
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

/** One lease on every member, one expiry: the sweep releases them together (docs/gangs.md). */
export async function leaseGang(store: DataStore, consumers: readonly string[], seconds: number, nowMs: number): Promise<string> {
  let expires = '';
  for (const uuid of consumers) {
    const lease = await putLease(store, uuid, seconds, nowMs);
    if (lease) expires = lease.expires_at;
  }
  return expires;
}
