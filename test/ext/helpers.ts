// Shared by the extension tests: claims made the way a scheduler makes them
// (the first candidate of a tree, through the API), and headroom reads.
import { expect } from 'vitest';
import { LEASE } from '../../src/db/columns.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

export const PROJECT = '6b4e8a0c-0000-4000-8000-000000000001';
export const USER = '6b4e8a0c-0000-4000-8000-000000000002';

/** An hour in milliseconds, and a moment in milliseconds as the ISO 8601 text the holds API takes. */
export const HOUR = 3600_000;
export const at = (ms: number) => new Date(ms).toISOString();

/**
 * When each of `consumers` has its allocations end (its lease's expiry, ISO
 * 8601), read from the rows: what gangs, holds and preemption write, seen
 * without the leases extension's routes (an app may not install them).
 */
export async function endsOf(t: TestApp, consumers: string[]): Promise<Record<string, string>> {
  const [read] = await t.deps.store.readBatch([
    {
      sql: `SELECT ${LEASE.consumerUuid} AS consumer, ${LEASE.expiresAtMs} AS ms FROM ext_leases WHERE ${LEASE.consumerUuid} IN (SELECT value FROM json_each(?))`,
      args: [JSON.stringify(consumers)],
    },
  ]);
  return Object.fromEntries(read!.rows.map((r) => [String(r.consumer), at(Number(r.ms))]));
}

export interface HeadroomBody {
  total: number;
  trees: { root_provider_uuid: string; count: number }[];
  incomplete?: true;
}

type Allocations = Record<string, { resources: Record<string, number> }>;

export async function headroom(t: TestApp, query: string, version?: string): Promise<HeadroomBody> {
  const res = await t.call('GET', `/ext/headroom?${query}`, { version });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as HeadroomBody;
}

export const countOf = (body: HeadroomBody, root: string): number =>
  body.trees.find((tree) => tree.root_provider_uuid === root)?.count ?? 0;

/** Every candidate's allocations, in the engine's stable order. */
export async function candidates(t: TestApp, query: string, version?: string): Promise<Allocations[]> {
  const res = await t.call('GET', `/allocation_candidates?${query}`, { version });
  expect(res.status, await res.clone().text()).toBe(200);
  const body = (await res.json()) as { allocation_requests: { allocations: Allocations }[] };
  return body.allocation_requests.map((r) => r.allocations);
}

export async function claim(t: TestApp, allocations: Allocations, consumer = crypto.randomUUID()): Promise<Response> {
  return t.call('PUT', `/allocations/${consumer}`, {
    body: { allocations, project_id: PROJECT, user_id: USER, consumer_generation: null, consumer_type: 'INSTANCE' },
  });
}

/**
 * Claims the first candidate that uses one of `tree`'s providers, again and
 * again, until there is none; returns how many claims went through and the
 * last one claimed (which must now be refused).
 */
export async function claimFirstUntilFull(
  t: TestApp,
  query: string,
  tree: ReadonlySet<string>,
  version?: string,
): Promise<{ granted: number; last: Allocations | null }> {
  let granted = 0;
  let last: Allocations | null = null;
  for (;;) {
    const first = (await candidates(t, query, version)).find((allocations) => Object.keys(allocations).some((rp) => tree.has(rp)));
    if (!first) return { granted, last };
    const res = await claim(t, first);
    expect(res.status, await res.clone().text()).toBe(204);
    granted += 1;
    last = first;
    if (granted > 500) throw new Error('runaway claim loop');
  }
}

/**
 * Claims as a scheduler does (PUT /allocations/{c}, `query` after the path), and
 * victims for preemption: a claim of `vcpu` on `host` with a priority of its own
 * (null: none, not preemptible). `app` is read at each call (a test's fresh app).
 */
export function preemptionHelpers(app: () => TestApp) {
  const claimAs = (consumer: string, allocations: Allocations, project = PROJECT, query = ''): Promise<Response> =>
    app().call('PUT', `/allocations/${consumer}${query}`, {
      body: { allocations, project_id: project, user_id: USER, consumer_generation: null, consumer_type: 'INSTANCE' },
    });
  const victimOn = async (host: string, vcpu: number, priority: number | null): Promise<string> => {
    const consumer = crypto.randomUUID();
    expect((await claimAs(consumer, { [host]: { resources: { VCPU: vcpu } } })).status).toBe(204);
    if (priority !== null)
      expect((await app().call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority } })).status).toBe(200);
    return consumer;
  };
  return { claimAs, victimOn };
}

/** The project preemptors of the preemption tests claim for. */
export const PREEMPTOR_PROJECT = '6b4e8a0c-0000-4000-8000-0000000000bb';

/** A body of POST /ext/preemptions: `vcpu` on `host` for the preemptor, `victims` evicted, 30 s of grace. */
export const preemptionBody = (
  host: string,
  victims: string[],
  vcpu = 8,
  priority: number | null = 10,
  preemptor: string = crypto.randomUUID(),
) => ({
  preemptor: {
    consumer_uuid: preemptor,
    project_id: PREEMPTOR_PROJECT,
    priority: priority ?? undefined,
    allocations: { [host]: { resources: { VCPU: vcpu } } },
  },
  victims,
  grace_seconds: 30,
});

/** The holds tests' stage: a fresh app whose clock reads `now()` (virtual), and a host of 16 PGPU and `vcpu` VCPU. */
export async function gpuHostOnVirtualClock(now: () => number, vcpu: number): Promise<{ t: TestApp; gpu: string }> {
  const t = await makeTestApp();
  t.deps.clock = () => new Date(now());
  const gpu = await provider(t, { inventory: { PGPU: { total: 16 }, VCPU: { total: vcpu } } });
  return { t, gpu };
}
