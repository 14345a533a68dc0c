// The preemption search's data path against a reference: over random clouds
// (nested trees, a sharing provider, consumers on several providers and
// trees, own priorities and project defaults, earlier preemptions and holds)
// and random writes between searches (new, moved and deleted consumers,
// priorities set and removed, inventories changed, providers removed), the
// answer over what readPreemptionCloud reads (the engine's warm tree model
// and the allocations kept in memory between requests) equals, byte for
// byte, the answer over a reference cloud built from the whole cloud read at
// once (simulate's snapshot) with the rules of docs/preemption.md applied
// here: evictable = effective priority below P and not already a victim;
// taken = usage less the victims' plus what live holds hold. And in every
// answer: never a victim at or above P (nor one not evictable), never a
// request with victims while a victim-free one exists (victim-free first,
// and a limit cuts requests with victims before any victim-free one). The
// route's answer (the stock search's first pass, then the judged answer, the
// whole stock search only when it might fill the limit) equals the answer as
// it was before: the stock search when it fills the limit, else the judged
// one; on small clouds and on clouds of more trees than that first pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Microversion } from '../../src/microversion.js';
import { CloudModel, type Usage } from '../../src/placement/candidates/cloud-model.js';
import { appAllocationIndexes, type PreemptionCloud, readPreemptionCloud } from '../../src/ext/preemption/cloud.js';
import { answerOver, findPreemptionCandidates } from '../../src/ext/preemption/search.js';
import { HELD_CAPACITY } from '../../src/ext/holds/declaration.js';
import { EXACT_LIMIT, NO_VICTIMS_COST, resourceKey } from '../../src/ext/preemption/victims.js';
import { findAllocationCandidates } from '../../src/placement/candidates/index.js';
import { readWorld } from '../../src/ext/simulate/snapshot.js';
import { provider } from '../helpers/providers.js';
import { random, type Random } from '../helpers/random.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { USER } from './helpers.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

const SPOT = '6b4e8a0c-0000-4000-8000-00000000a001';
const BATCH = '6b4e8a0c-0000-4000-8000-00000000a002';
const PLAIN = '6b4e8a0c-0000-4000-8000-00000000a003';
const PROJECTS = [SPOT, BATCH, PLAIN];
const AGGREGATE = '6b4e8a0c-0000-4000-8000-00000000a0a0';
const mv = Microversion.parse('1.39')!;

/** The reference: the whole cloud in one snapshot, the rules applied here. */
async function referenceCloud(priority: number, nowMs: number): Promise<PreemptionCloud> {
  const reader = t.deps.store.nearby;
  const world = await readWorld(reader, []);
  const [own, defaults, victims, holds] = await reader.readBatch([
    { sql: 'SELECT consumer_uuid AS uuid, priority FROM ext_consumer_priorities', args: [] },
    { sql: 'SELECT project_external_id AS project, priority FROM ext_project_priorities', args: [] },
    { sql: 'SELECT consumer_uuid AS uuid FROM ext_preemption_victims', args: [] },
    {
      sql: `SELECT x.resource_provider_id AS rp, x.resource_class_id AS cls, x.amount AS amount FROM ext_hold_amounts x
        JOIN ext_holds h ON h.uuid = x.hold_uuid WHERE h.end_ms > ?`,
      args: [nowMs],
    },
  ]);
  const ownBy = new Map(own!.rows.map((r) => [String(r.uuid), Number(r.priority)]));
  const defaultBy = new Map(defaults!.rows.map((r) => [String(r.project), Number(r.priority)]));
  const going = new Set(victims!.rows.map((r) => String(r.uuid)));
  const add = (usage: Usage, rp: number, cls: number, units: number) => {
    const perClass = usage.get(rp) ?? new Map<number, number>();
    usage.set(rp, perClass.set(cls, (perClass.get(cls) ?? 0) + units));
  };
  const usage: Usage = new Map();
  const taken: Usage = new Map();
  const evictable: PreemptionCloud['evictable'] = [];
  for (const consumer of [...world.consumers.values()].sort((a, b) => (a.uuid < b.uuid ? -1 : 1))) {
    for (const a of consumer.allocations) {
      add(usage, a.providerId, a.classId, a.used);
      if (!going.has(consumer.uuid)) add(taken, a.providerId, a.classId, a.used);
    }
    const effective = ownBy.get(consumer.uuid) ?? defaultBy.get(consumer.projectId);
    if (effective === undefined || effective >= priority || going.has(consumer.uuid) || consumer.allocations.length === 0) continue;
    evictable.push({
      uuid: consumer.uuid,
      project: consumer.projectId,
      priority: effective,
      generation: consumer.generation,
      allocations: consumer.allocations.map((a) => ({ ...a })),
      uses: consumer.allocations.reduce(
        (uses, a) => uses.set(resourceKey(a.providerId, a.classId), (uses.get(resourceKey(a.providerId, a.classId)) ?? 0) + a.used),
        new Map<string, number>(),
      ),
    });
  }
  for (const r of holds!.rows) add(taken, Number(r.rp), Number(r.cls), Number(r.amount));
  const providers = [...world.providers.values()].sort((a, b) => a.id - b.id);
  return {
    model: CloudModel.of(providers),
    lookups: {
      classIdByName: world.classIdByName,
      traitIdByName: world.traitIdByName,
      aggregateIdByUuid: world.aggregateIdByUuid,
      rootIdByProviderUuid: new Map(providers.map((p) => [p.uuid, p.rootId])),
    },
    usage,
    taken,
    evictable,
    classNameById: new Map([...world.classIdByName].map(([name, id]) => [id, name])),
    held: holds!.rows.length > 0,
    derived: {},
  };
}

interface Host {
  root: string;
  child: string | null;
}

interface Cloud {
  hosts: Host[];
  sharing: string | null;
  consumers: Map<string, { project: string }>;
}

async function put(consumer: string, allocations: Record<string, { resources: Record<string, number> }>, project: string) {
  return t.call('PUT', `/allocations/${consumer}`, {
    body: { allocations, project_id: project, user_id: USER, consumer_generation: null, consumer_type: 'INSTANCE' },
  });
}

/** Allocations of a random size on a host (its child, the sharing provider, sometimes a second host); whatever fits. */
function allocationsOf(r: Random, cloud: Cloud): Record<string, { resources: Record<string, number> }> {
  const host = r.pick(cloud.hosts);
  const allocations: Record<string, { resources: Record<string, number> }> = {
    [host.root]: { resources: { VCPU: r.int(1, 4), MEMORY_MB: 512 * r.int(1, 4) } },
  };
  if (host.child && r.chance(0.4)) allocations[host.child] = { resources: { VCPU: r.int(1, 2) } };
  if (cloud.sharing && r.chance(0.3)) allocations[cloud.sharing] = { resources: { DISK_GB: r.int(1, 20) } };
  const other = r.pick(cloud.hosts);
  if (other !== host && r.chance(0.15)) allocations[other.root] = { resources: { VCPU: 1 } };
  return allocations;
}

async function addConsumer(r: Random, cloud: Cloud): Promise<void> {
  const consumer = crypto.randomUUID();
  const project = r.pick(PROJECTS);
  if ((await put(consumer, allocationsOf(r, cloud), project)).status !== 204) return;
  cloud.consumers.set(consumer, { project });
  if (r.chance(0.3)) await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority: r.int(0, 12) } });
}

async function makeCloud(r: Random, size = { hosts: [2, 6], consumers: [6, 24] }): Promise<Cloud> {
  const cloud: Cloud = { hosts: [], sharing: null, consumers: new Map() };
  const shared = r.chance(0.4);
  if (shared) {
    cloud.sharing = await provider(t, {
      inventory: { DISK_GB: { total: r.pick([50, 100]) } },
      traits: ['MISC_SHARES_VIA_AGGREGATE'],
      aggregates: [AGGREGATE],
    });
  }
  for (let h = 0; h < r.int(size.hosts[0]!, size.hosts[1]!); h += 1) {
    const root = await provider(t, {
      inventory: { VCPU: { total: r.pick([4, 8, 12, 16]) }, MEMORY_MB: { total: 1024 * r.pick([4, 8, 16]) } },
      traits: r.chance(0.4) ? ['CUSTOM_FAST'] : [],
      ...(shared && r.chance(0.7) ? { aggregates: [AGGREGATE] } : {}),
    });
    const child = r.chance(0.3) ? await provider(t, { parent: root, inventory: { VCPU: { total: r.pick([2, 4]) } } }) : null;
    cloud.hosts.push({ root, child });
  }
  for (let c = 0; c < r.int(size.consumers[0]!, size.consumers[1]!); c += 1) await addConsumer(r, cloud);
  await t.call('PUT', `/ext/priorities/${SPOT}`, { body: { priority: r.int(0, 3) } });
  if (r.chance(0.7)) await t.call('PUT', `/ext/priorities/${BATCH}`, { body: { priority: r.int(2, 8) } });
  return cloud;
}

/** One random write: what a cloud does between two searches. */
async function change(r: Random, cloud: Cloud): Promise<void> {
  const consumers = [...cloud.consumers.keys()];
  const roll = r.below(9);
  if (roll === 0 || consumers.length === 0) return addConsumer(r, cloud);
  const consumer = r.pick(consumers);
  if (roll === 1) {
    await t.call('DELETE', `/allocations/${consumer}`);
    cloud.consumers.delete(consumer);
  } else if (roll === 2) {
    // Moved (or resized), same project or another.
    const project = r.chance(0.3) ? r.pick(PROJECTS) : cloud.consumers.get(consumer)!.project;
    const got = await t.call('GET', `/allocations/${consumer}`);
    const generation = ((await got.json()) as { consumer_generation?: number }).consumer_generation ?? null;
    const res = await t.call('PUT', `/allocations/${consumer}`, {
      body: { allocations: allocationsOf(r, cloud), project_id: project, user_id: USER, consumer_generation: generation },
    });
    if (res.status === 204) cloud.consumers.set(consumer, { project });
  } else if (roll === 3) {
    await t.call('PUT', `/ext/consumers/${consumer}/priority`, { body: { priority: r.int(0, 12) } });
  } else if (roll === 4) {
    await t.call('DELETE', `/ext/consumers/${consumer}/priority`);
  } else if (roll === 5) {
    await t.call('PUT', `/ext/priorities/${r.pick(PROJECTS)}`, { body: { priority: r.int(0, 10) } });
  } else if (roll === 6) {
    // An inventory grows or shrinks (the tree model moves on).
    const host = r.pick(cloud.hosts);
    const read = (await (await t.call('GET', `/resource_providers/${host.root}`)).json()) as { generation: number };
    await t.call('PUT', `/resource_providers/${host.root}/inventories/VCPU`, {
      body: { resource_provider_generation: read.generation, total: r.pick([4, 8, 12, 16, 24]) },
    });
  } else if (roll === 7) {
    // A preemption: its victims go, its nomination is held.
    const host = r.pick(cloud.hosts);
    await t.call('POST', '/ext/preemptions', {
      body: {
        preemptor: {
          consumer_uuid: crypto.randomUUID(),
          project_id: PLAIN,
          priority: 100,
          allocations: { [host.root]: { resources: { VCPU: r.int(1, 3) } } },
        },
        victims: [consumer],
        grace_seconds: 60,
      },
    });
  } else {
    // A host with nothing on it goes, or a new one comes.
    const bare = cloud.hosts.find((h) => h.child === null);
    if (r.chance(0.5) && bare && cloud.hosts.length > 2) {
      for (const [uuid] of cloud.consumers) await t.call('DELETE', `/allocations/${uuid}`);
      cloud.consumers.clear();
      if ((await t.call('DELETE', `/resource_providers/${bare.root}`)).status === 204) cloud.hosts.splice(cloud.hosts.indexOf(bare), 1);
    } else {
      cloud.hosts.push({ root: await provider(t, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 8192 } } }), child: null });
    }
  }
}

function randomQuery(r: Random, cloud: Cloud): Record<string, string[]> {
  const query: Record<string, string[]> = {};
  const resources = [`VCPU:${r.int(1, 8)}`, `MEMORY_MB:${512 * r.int(1, 8)}`];
  if (cloud.sharing && r.chance(0.3)) resources.push(`DISK_GB:${r.int(1, 30)}`);
  const granular = r.chance(0.15);
  const suffix = granular ? '1' : '';
  if (granular) {
    query.resources1 = [`VCPU:${r.int(1, 3)}`];
    query.resources2 = [`MEMORY_MB:${512 * r.int(1, 4)}`];
    query.group_policy = ['none'];
  } else {
    query.resources = [resources.join(',')];
  }
  if (r.chance(0.15)) query[`required${suffix}`] = ['CUSTOM_FAST'];
  if (r.chance(0.1)) query[`member_of${suffix}`] = [AGGREGATE];
  if (r.chance(0.05)) query[`in_tree${suffix}`] = [r.pick(cloud.hosts).root];
  if (r.chance(0.5)) query.limit = [String(r.int(1, 6))];
  return query;
}

async function clear(cloud: Cloud): Promise<void> {
  for (const uuid of cloud.consumers.keys()) await t.call('DELETE', `/allocations/${uuid}`);
  // The preemptors' nominations and any consumer the cloud lost track of.
  const [rest] = await t.deps.store.readBatch([{ sql: 'SELECT uuid FROM consumers', args: [] }]);
  for (const row of rest!.rows) await t.call('DELETE', `/allocations/${String(row.uuid)}`);
  for (const host of cloud.hosts) {
    if (host.child) await t.call('DELETE', `/resource_providers/${host.child}`);
    await t.call('DELETE', `/resource_providers/${host.root}`);
  }
  if (cloud.sharing) await t.call('DELETE', `/resource_providers/${cloud.sharing}`);
}

describe('the preemption search over what readPreemptionCloud reads', () => {
  it(
    'answers as over the whole cloud read at once, over thousands of random searches between random writes',
    { timeout: 180_000 },
    async () => {
      let searches = 0;
      let withVictims = 0;
      for (let seed = 1; seed <= 20; seed += 1) {
        const r = random(seed * 7919);
        const cloud = await makeCloud(r);
        for (let step = 0; step < 100; step += 1) {
          const outcome = await searchAndCompare(r, cloud, `seed ${seed} step ${step}`);
          searches += 1;
          if (outcome.withVictims) withVictims += 1;
        }
        await clear(cloud);
      }
      expect(searches).toBeGreaterThanOrEqual(2000);
      expect(withVictims).toBeGreaterThan(searches / 5);
    },
  );

  it(
    "answers as it always did on clouds of more trees than the stock search's first pass (the whole stock search tried only when it might fill the limit)",
    { timeout: 180_000 },
    async () => {
      let quickMissed = 0;
      for (let seed = 101; seed <= 102; seed += 1) {
        const r = random(seed * 7919);
        const cloud = await makeCloud(r, { hosts: [70, 80], consumers: [80, 140] });
        for (let step = 0; step < 60; step += 1) {
          const outcome = await searchAndCompare(r, cloud, `seed ${seed} step ${step}`, true);
          if (outcome.quickMissed) quickMissed += 1;
        }
        await clear(cloud);
      }
      expect(quickMissed).toBeGreaterThan(10);
    },
  );
});

/** One random search (after a random write, sometimes), compared; `limited`: always with a limit. */
async function searchAndCompare(
  r: Random,
  cloud: Cloud,
  label: string,
  limited = false,
): Promise<{ withVictims: boolean; quickMissed: boolean }> {
  if (r.chance(0.35)) await change(r, cloud);
  const priority = r.int(0, 12);
  const query = randomQuery(r, cloud);
  if (limited) query.limit ??= [String(r.int(1, 6))];
  const request = t.deps.candidates.parse(query, mv);
  const options = t.deps.candidates.options({ randomize: false });
  const nowMs = Date.now();
  const got = await answerOver(
    await readPreemptionCloud(t.deps.store.nearby, appAllocationIndexes(t.deps.extensions), HELD_CAPACITY, priority, nowMs, options),
    request,
    priority,
    mv,
    options,
  );
  const reference = await referenceCloud(priority, nowMs);
  const expected = await answerOver(reference, request, priority, mv, options);
  expect(JSON.stringify(got), label).toBe(JSON.stringify(expected));
  // With a limit (trees that cannot make it are not judged), the first of the whole answer, every tree judged.
  if (request.limit !== null) {
    const whole = await answerOver(reference, { ...request, limit: null }, priority, mv, options);
    expect(JSON.stringify(expected.allocation_requests), label).toBe(JSON.stringify(whole.allocation_requests.slice(0, request.limit)));
  }
  // Never a victim at or above P, nor one the reference does not count evictable.
  const evictable = new Map(reference.evictable.map((c) => [c.uuid, c.priority]));
  for (const v of got.allocation_requests.flatMap((a) => a.victims)) {
    expect(v.priority, label).toBeLessThan(priority);
    expect(evictable.get(v.consumer_uuid), label).toBe(v.priority);
  }
  // Never a request with victims while a victim-free one exists: they come first, and a limit cuts them first.
  const firstWithVictims = got.allocation_requests.findIndex((a) => a.victims.length > 0);
  if (firstWithVictims >= 0) {
    expect(
      got.allocation_requests.slice(firstWithVictims).every((a) => a.victims.length > 0),
      label,
    ).toBe(true);
    const all = await answerOver(reference, { ...request, limit: null }, priority, mv, options);
    expect(all.allocation_requests.filter((a) => a.victims.length === 0).length, label).toBe(firstWithVictims);
  }
  // The route's whole answer (a stock first pass, then the judged one, the whole stock search only when it might fill the
  // limit) against the answer as it always was: the stock search when it fills the limit, else the judged one.
  let quickMissed = false;
  if (request.limit !== null) {
    const route = await findPreemptionCandidates(
      t.deps.store.nearby,
      appAllocationIndexes(t.deps.extensions),
      HELD_CAPACITY,
      request,
      priority,
      mv,
      options,
      nowMs,
    );
    const stock = await findAllocationCandidates(t.deps.store.nearby, request, mv, options);
    const quick = await findAllocationCandidates(t.deps.store.nearby, request, mv, { ...options, firstPassOnly: true });
    quickMissed = quick.allocation_requests.length < request.limit;
    const before =
      stock.allocation_requests.length >= request.limit
        ? {
            allocation_requests: stock.allocation_requests.map((shown) => ({
              ...shown,
              victims: [],
              cost: NO_VICTIMS_COST,
              method: 'exact',
            })),
            provider_summaries: stock.provider_summaries,
            preemption: { priority, exact_limit: EXACT_LIMIT, methods: stock.allocation_requests.length ? ['exact'] : [] },
          }
        : expected;
    expect(JSON.stringify(route), `${label}: the route`).toBe(JSON.stringify(before));
  }
  return { withVictims: got.allocation_requests.some((a) => a.victims.length > 0), quickMissed };
}
