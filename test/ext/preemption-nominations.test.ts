// Nominated capacity over 10,000 random runs, driven in process at the write
// kernel (the claim write path of PUT/POST /allocations with its installed
// guards, and POST /ext/preemptions' createPreemption) on a file database:
// over HTTP 10,000 runs would take far too long for the suite. Each run, on a
// host of a random tree (a root, sometimes a NUMA child; VCPU and memory):
// random preemptible consumers and some that are not, a preemption of a random
// victim set for a preemptor that fits once they are gone, then third-party
// claims racing the victims' deletions (issued at once, their order left to
// the store; some victims' owners are slow and go later), then the
// preemptor's claim with ext_hold. Runs go in waves, one per host, so that
// the setup and the cleanup of a wave are one write each. Asserted every run:
// no third-party claim lands on nominated capacity (on every nominated pair,
// what all but the victims hold leaves the nomination whole), and the
// preemptor's claim always succeeds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.js';
import { createPreemption } from '../../src/ext/preemption/preemptions.js';
import { removeHold } from '../../src/ext/holds/repo.js';
import type { ConsumerClaim } from '../../src/placement/repo/allocations.js';
import { claimAllocations } from '../../src/placement/writes/claims.js';
import { ClaimRefused } from '../../src/placement/writes/refusals.js';
import { provider } from '../helpers/providers.js';
import { random, type Random } from '../helpers/random.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { USER } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

const RUNS = Number(process.env.NOMINATION_RUNS ?? 10_000);
const HOSTS = 100;
/** Projects with a default priority (their consumers are preemptible), and one without. */
const LOW = '6b4e8a0c-0000-4000-8000-00000000b001';
const MID = '6b4e8a0c-0000-4000-8000-00000000b002';
const NONE = '6b4e8a0c-0000-4000-8000-00000000b003';
const PREEMPTOR = '6b4e8a0c-0000-4000-8000-00000000b004';
const OUTSIDER = '6b4e8a0c-0000-4000-8000-00000000b005';

type Allocations = Record<string, Record<string, number>>;

interface Host {
  root: string;
  child: string | null;
  capacity: Map<string, number>;
}

const pair = (rp: string, cls: string) => `${rp} ${cls}`;

async function claim(uuid: string, project: string, allocations: Allocations, params?: Map<string, string>): Promise<boolean> {
  const claims: ConsumerClaim[] = [{ uuid, projectId: project, userId: USER, consumerType: 'INSTANCE', generation: null, allocations }];
  const nowMs = Date.now();
  const alongside = params ? t.deps.writeHooks.claimParams.flatMap((p) => p.alongside(params, claims, nowMs)) : undefined;
  try {
    await claimAllocations(t.deps, claims, {
      requireGeneration: false,
      now: new Date(nowMs).toISOString(),
      endpoint: 'consumer_allocations',
      ...(alongside ? { alongside } : {}),
      ...(params ? { params } : {}),
    });
    return true;
  } catch (err) {
    // Refused: over capacity (the kernel), or held (the holds' claim guard).
    if (err instanceof ClaimRefused || (err instanceof DomainError && err.problem === 'conflict')) return false;
    throw err;
  }
}

/** What the store holds per consumer, per (provider, class). */
async function allocationsNow(): Promise<Map<string, Map<string, number>>> {
  const [rows] = await t.deps.store.readBatch([
    {
      sql: `SELECT a.consumer_id AS consumer, p.uuid AS rp, rc.name AS cls, a.used AS used FROM allocations a
        JOIN resource_providers p ON p.id = a.resource_provider_id JOIN resource_classes rc ON rc.id = a.resource_class_id`,
      args: [],
    },
  ]);
  const by = new Map<string, Map<string, number>>();
  for (const r of rows!.rows) {
    const perPair = by.get(String(r.consumer)) ?? new Map<string, number>();
    by.set(String(r.consumer), perPair.set(pair(String(r.rp), String(r.cls)), Number(r.used)));
  }
  return by;
}

function randomAllocations(r: Random, host: Host, scale: number): Allocations {
  const allocations: Allocations = { [host.root]: { VCPU: r.int(1, scale), MEMORY_MB: 512 * r.int(1, scale) } };
  if (host.child && r.chance(0.5)) allocations[host.child] = { VCPU: r.int(1, 2) };
  return allocations;
}

/** Adds `allocations` to `used` when they fit the host's capacity; false (and nothing added) when not. */
function fitInto(used: Map<string, number>, host: Host, allocations: Allocations): boolean {
  const entries = Object.entries(allocations).flatMap(([rp, resources]) =>
    Object.entries(resources).map(([cls, n]) => [pair(rp, cls), n] as const),
  );
  if (entries.some(([key, n]) => (used.get(key) ?? 0) + n > host.capacity.get(key)!)) return false;
  for (const [key, n] of entries) used.set(key, (used.get(key) ?? 0) + n);
  return true;
}

/** One run on one host: its consumers, its victims, what the preemptor asks for (it fits once they are gone). */
interface Run {
  label: string;
  host: Host;
  held: Map<string, { project: string; allocations: Allocations }>;
  victims: string[];
  /** Victims whose owners are slow: they go after the outsiders. */
  slow: string[];
  preemptor: string;
  wanted: Allocations;
  outsiders: { uuid: string; allocations: Allocations }[];
  hold?: string;
  landed: string[];
}

function planRun(r: Random, host: Host, label: string): Run | null {
  // Preemptible consumers (and some that are not) fill part of the host.
  const held = new Map<string, { project: string; allocations: Allocations }>();
  const used = new Map<string, number>();
  for (let c = 0; c < r.int(1, 6); c += 1) {
    const allocations = randomAllocations(r, host, 4);
    const project = r.pick([LOW, LOW, MID, NONE]);
    if (fitInto(used, host, allocations)) held.set(crypto.randomUUID(), { project, allocations });
  }
  const preemptible = [...held].filter(([, c]) => c.project !== NONE).map(([uuid]) => uuid);
  if (preemptible.length === 0) return null;
  const victims = preemptible.filter(() => r.chance(0.6));
  if (victims.length === 0) victims.push(preemptible[0]!);
  // The preemptor asks for what its victims leave free, or a little less; only where a victim frees something.
  const staying = new Map<string, number>();
  for (const [uuid, c] of held) if (!victims.includes(uuid)) fitInto(staying, host, c.allocations);
  const freedBy = new Set(
    victims.flatMap((v) => Object.entries(held.get(v)!.allocations).flatMap(([rp, res]) => Object.keys(res).map((cls) => pair(rp, cls)))),
  );
  const wanted: Allocations = {};
  for (const [key, capacity] of host.capacity) {
    const room = capacity - (staying.get(key) ?? 0);
    const [rp, cls] = key.split(' ') as [string, string];
    const amount = room - r.int(0, 1) * (cls === 'MEMORY_MB' ? 512 : 1);
    if (amount > 0 && freedBy.has(key) && (rp === host.root || r.chance(0.5))) (wanted[rp] ??= {})[cls] = amount;
  }
  if (Object.keys(wanted).length === 0) return null;
  return {
    label,
    host,
    held,
    victims,
    slow: victims.filter(() => r.chance(0.2)),
    preemptor: crypto.randomUUID(),
    wanted,
    outsiders: Array.from({ length: r.int(1, 2) }, () => ({ uuid: crypto.randomUUID(), allocations: randomAllocations(r, host, 6) })),
    landed: [],
  };
}

async function claimAll(claims: ConsumerClaim[]): Promise<void> {
  if (claims.length === 0) return;
  await claimAllocations(t.deps, claims, { requireGeneration: false, now: new Date().toISOString(), endpoint: 'allocations' });
}

const removal = (uuid: string): ConsumerClaim => ({ uuid, allocations: {} });

/**
 * A wave of runs, one per host, interleaved where the store lets them: the
 * consumers of every run in one claim, the preemptions at once, then every
 * outsider and every victim's deletion at once, the check, the slow victims,
 * the preemptors' claims at once, and everything removed.
 */
async function wave(runs: Run[]): Promise<void> {
  await claimAll(
    runs.flatMap((run) =>
      [...run.held].map(([uuid, c]) => ({
        uuid,
        projectId: c.project,
        userId: USER,
        consumerType: 'INSTANCE',
        generation: null,
        allocations: c.allocations,
      })),
    ),
  );
  await Promise.all(
    runs.map(async (run) => {
      const made = await createPreemption(
        {
          store: t.deps.store,
          nowMs: () => Date.now(),
          newId: t.deps.newId,
          reported: (kind, event, nowMs) => t.deps.extensions.eventStatements(kind, event, nowMs),
        },
        {
          preemptor: {
            consumer_uuid: run.preemptor,
            project_id: PREEMPTOR,
            allocations: Object.fromEntries(Object.entries(run.wanted).map(([rp, resources]) => [rp, { resources }])),
          },
          victims: run.victims,
          grace_seconds: 60,
        },
        10,
      );
      run.hold = made.hold_uuid;
    }),
  );
  // Outsiders claim while the victims go, all at once.
  await Promise.all(
    runs.flatMap((run) => [
      claimAll(run.victims.filter((v) => !run.slow.includes(v)).map(removal)),
      ...run.outsiders.map(async (o) => {
        if (await claim(o.uuid, OUTSIDER, o.allocations)) run.landed.push(o.uuid);
      }),
    ]),
  );
  // Nothing an outsider holds eats into a nomination: on every nominated pair, everyone but the
  // victims leaves the preemptor's amount whole.
  const now = await allocationsNow();
  for (const run of runs) {
    for (const [rp, resources] of Object.entries(run.wanted)) {
      for (const [cls, amount] of Object.entries(resources)) {
        const key = pair(rp, cls);
        let others = 0;
        for (const [consumer, perPair] of now) if (!run.victims.includes(consumer)) others += perPair.get(key) ?? 0;
        expect(others + amount, `${run.label}: ${key}, outsiders landed: ${run.landed.length}`).toBeLessThanOrEqual(
          run.host.capacity.get(key)!,
        );
      }
    }
  }
  await claimAll(runs.flatMap((run) => run.slow.map(removal)));
  await Promise.all(
    runs.map(async (run) => {
      const claimed = await claim(run.preemptor, PREEMPTOR, run.wanted, new Map([['ext_hold', run.hold!]]));
      expect(claimed, `${run.label}: the preemptor's claim`).toBe(true);
    }),
  );
  await claimAll(
    runs.flatMap((run) => [...run.held.keys(), ...run.landed, run.preemptor].filter((u) => !run.victims.includes(u)).map(removal)),
  );
  await Promise.all(runs.map((run) => removeHold(t.deps.store, run.hold!)));
  expect((await allocationsNow()).size).toBe(0);
}

describe('nominated capacity over 10,000 random runs', () => {
  it('no third party ever takes it, and the preemptor always claims it', { timeout: 600_000 }, async () => {
    for (const [project, priority] of [
      [LOW, 0],
      [MID, 5],
    ] as const) {
      expect((await t.call('PUT', `/ext/priorities/${project}`, { body: { priority } })).status).toBe(200);
    }
    const r = random(43);
    const hosts: Host[] = [];
    for (let h = 0; h < HOSTS; h += 1) {
      const vcpu = r.pick([4, 8, 16]);
      const memory = 1024 * r.pick([4, 8, 16]);
      const root = await provider(t, { inventory: { VCPU: { total: vcpu }, MEMORY_MB: { total: memory } } });
      const childVcpu = r.pick([2, 4]);
      const child = r.chance(0.3) ? await provider(t, { parent: root, inventory: { VCPU: { total: childVcpu } } }) : null;
      const capacity = new Map([
        [pair(root, 'VCPU'), vcpu],
        [pair(root, 'MEMORY_MB'), memory],
      ]);
      if (child) capacity.set(pair(child, 'VCPU'), childVcpu);
      hosts.push({ root, child, capacity });
    }
    let runs = 0;
    let waves = 0;
    while (runs < RUNS) {
      const planned = hosts.flatMap((host, h) => planRun(r, host, `wave ${waves} host ${h}`) ?? []).slice(0, RUNS - runs);
      await wave(planned);
      runs += planned.length;
      waves += 1;
    }
    expect(runs).toBe(RUNS);
  });
});
