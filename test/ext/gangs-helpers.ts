// Shared by the gang tests: reads of GET /ext/gang_candidates and claims of
// a found gang through POST /ext/gangs, as a scheduler makes them.
import { expect } from 'vitest';
import type { TestApp } from '../helpers/test-app.js';
import { PROJECT, USER } from './helpers.js';

export type Allocations = Record<string, { resources: Record<string, number> }>;
export interface GangBody {
  domain: string | null;
  allocation_requests: { allocations: Allocations; mappings?: Record<string, string[]> }[];
  provider_summaries: Record<string, { resources: Record<string, { capacity: number; used: number }>; root_provider_uuid?: string }>;
}
export interface GangAnswer {
  gangs: GangBody[];
  incomplete?: true;
}

export async function gangCandidates(t: TestApp, query: string, version?: string): Promise<GangAnswer> {
  const res = await t.call('GET', `/ext/gang_candidates?${query}`, { version });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as GangAnswer;
}

/** POST /ext/gangs of `gang`'s members, each a new consumer (or the given uuids). */
export function claimGang(t: TestApp, gang: GangBody, extra: Record<string, unknown> = {}, consumers?: string[]): Promise<Response> {
  const members: Record<string, unknown> = {};
  gang.allocation_requests.forEach((request, i) => {
    members[consumers?.[i] ?? crypto.randomUUID()] = {
      allocations: request.allocations,
      project_id: PROJECT,
      user_id: USER,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
  });
  return t.call('POST', '/ext/gangs', { body: { domain: gang.domain, members, ...extra } });
}

/** The root (host) of every member, from the summaries (1.29+). */
export const hostsOf = (gang: GangBody): string[] =>
  gang.allocation_requests.map((r) => {
    const roots = Object.keys(r.allocations).map((rp) => gang.provider_summaries[rp]?.root_provider_uuid ?? rp);
    return roots[0]!;
  });
