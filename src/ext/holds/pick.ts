// The hold form built from an allocation-candidates query with `count`
// (docs/holds.md): placement picks the providers at creation, as GET
// /ext/gang_candidates would (count members on distinct hosts, one domain,
// ext_domain allowed), through the gangs' search on the engine's public entry
// points; what it picks is pinned as the hold's explicit amounts.
import type { BatchReader } from '../../db/client.js';
import { conflict } from '../../errors.js';
import type { Microversion } from '../../microversion.js';
import type { CandidateOptions } from '../../placement/candidates/index.js';
import { findGangs, type Gang } from '../gangs/index.js';
import { HOLD_UNSATISFIABLE } from './service.js';

export type HeldAllocations = Record<string, { resources: Record<string, number> }>;

/** The query text's parameters, as the routes read a query (repeatable names kept). */
export function queryOf(text: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [name, value] of new URLSearchParams(text.startsWith('?') ? text.slice(1) : text)) (out[name] ??= []).push(value);
  return out;
}

/**
 * The allocations a hold of `query` pins: the first gang the gangs' search
 * ranks (tightest domain first), its members' allocations summed per
 * provider and class. 409 hold_unsatisfiable when no gang fits now.
 */
export async function pickHeld(reader: BatchReader, query: string, mv: Microversion, options: CandidateOptions): Promise<HeldAllocations> {
  const params = queryOf(query);
  if (!params.count) params.count = ['1'];
  const { gangs } = await findGangs(reader, { ...params, limit: ['1'] }, mv, options);
  return heldOfFirstGang(gangs, query, params.count[0]!);
}

/** What a hold of `query` pins from the gangs a search ranked (the first one's members, summed); 409 when none. */
export function heldOfFirstGang(gangs: readonly Gang[], query: string, count: string): HeldAllocations {
  const gang = gangs[0];
  if (!gang)
    throw conflict(
      `Hold not admitted: no ${count} hosts fit '${query}' together now (GET /diagnostics/allocation_candidates with this query says why)`,
      HOLD_UNSATISFIABLE,
    );
  const held: HeldAllocations = {};
  for (const member of gang.allocation_requests) {
    for (const [provider, { resources }] of Object.entries(member.allocations)) {
      const into = (held[provider] ??= { resources: {} }).resources;
      for (const [rc, n] of Object.entries(resources)) into[rc] = (into[rc] ?? 0) + n;
    }
  }
  return held;
}
