// GET /ext/holds/availability over provider trees (docs/holds.md): the
// earliest start at which an allocation-candidates query fits for a duration
// beside allocations that end and holds' windows.
// - 600 random clouds (nested trees, a sharing provider, traits) with
//   random allocations (lasting, leased, drawn from a hold) and holds, and
//   random queries (granular groups, isolate, nested, sharing, required
//   traits), answered by the engine over the calendar (earliestCandidate)
//   and by an oracle that knows nothing of the calendar: the placements the
//   engine finds on the empty cloud, each checked at every instant of every
//   start it tries on a millisecond-exact grid. The starts must agree, and
//   what the answer names must fit at every instant of its window.
// - Hand-written nested cases over HTTP: granular groups on NUMA children,
//   a sharing provider's disk, a gang of two hosts, bad queries.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Allocation, drawnEndMs, FOREVER, type Hold } from '../../src/ext/holds/model.js';
import { calendarOf, pairKey } from '../../src/ext/holds/calendar.js';
import { earliestCandidate } from '../../src/ext/holds/availability.js';
import type { CloudCalendar } from '../../src/ext/holds/calendar-repo.js';
import { CloudModel, type Lookups, type ProviderSpec } from '../../src/placement/candidates/cloud-model.js';
import { candidatesFromModel, type CandidateOptions } from '../../src/placement/candidates/index.js';
import { parseCandidateQueryString } from '../../src/placement/candidates/parse.js';
import { capacityOf } from '../../src/placement/capacity.js';
import { Microversion } from '../../src/microversion.js';
import { random, type Random } from '../helpers/random.js';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';
import { claim, PROJECT } from './helpers.js';

const MV = Microversion.parse('1.39')!;
const MIN = 60_000;
const CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_GPU'] as const;
const CLASS_ID = new Map<string, number>(CLASSES.map((name, i) => [name, i + 1]));
const TRAITS = ['CUSTOM_FAST', 'MISC_SHARES_VIA_AGGREGATE'];
const AGGREGATE = '5a9b0c1d-0000-4000-8000-00000000a001';
const uuidOf = (id: number) => `7c000000-0000-4000-8000-${String(id).padStart(12, '0')}`;

type Inventory = ProviderSpec['inventories'][number];
interface Cloud {
  specs: ProviderSpec[];
  allocations: Allocation[];
  holds: Hold[];
}

function inventory(r: Random, name: string): Inventory {
  const total = r.int(1, 8);
  return {
    classId: CLASS_ID.get(name)!,
    className: name,
    total,
    reserved: r.chance(0.15) ? 1 : 0,
    minUnit: 1,
    maxUnit: total * 2,
    stepSize: 1,
    allocationRatio: r.pick([1, 1, 1, 2]),
  };
}

/** One to three compute trees (a root, NUMA-like children, sometimes a grandchild), and sometimes a provider sharing disk with some. */
function randomSpecs(r: Random): ProviderSpec[] {
  const specs: ProviderSpec[] = [];
  let next = 1;
  const add = (parentId: number | null, rootId: number | null, names: string[], aggregates: number[] = []): number => {
    const id = next++;
    const traits = [...(r.chance(0.3) ? ['CUSTOM_FAST'] : [])];
    specs.push({
      id,
      uuid: uuidOf(id),
      parentId,
      rootId: rootId ?? id,
      traits,
      aggregates,
      inventories: names.map((n) => inventory(r, n)).sort((a, b) => a.classId - b.classId),
    });
    return id;
  };
  for (let tree = r.int(1, 3); tree > 0; tree -= 1) {
    const root = add(
      null,
      null,
      ['VCPU', ...(r.chance(0.6) ? ['MEMORY_MB'] : []), ...(r.chance(0.2) ? ['DISK_GB'] : [])],
      r.chance(0.6) ? [1] : [],
    );
    for (let child = r.int(0, 2); child > 0; child -= 1) {
      const numa = add(root, root, ['CUSTOM_GPU', ...(r.chance(0.4) ? ['VCPU'] : [])]);
      if (r.chance(0.2)) add(numa, root, ['CUSTOM_GPU']);
    }
  }
  if (r.chance(0.5)) {
    const shared = add(null, null, ['DISK_GB'], [1]);
    specs[shared - 1] = { ...specs[shared - 1]!, traits: ['MISC_SHARES_VIA_AGGREGATE'] };
  }
  return specs;
}

const gridTime = (r: Random, lo: number, hi: number) => r.int(lo, hi) * MIN;

function randomCloud(r: Random): Cloud {
  const specs = randomSpecs(r);
  const pairs = specs.flatMap((s) => s.inventories.map((i) => ({ providerId: s.id, classId: i.classId })));
  const holds: Hold[] = [];
  for (let n = r.int(0, 4); n > 0; n -= 1) {
    const startMs = gridTime(r, -2, 8);
    const amounts = new Map<string, number>();
    for (const p of r.some(pairs, 3)) amounts.set(pairKey(p.providerId, p.classId), r.int(1, 4));
    holds.push({
      id: `hold-${n}`,
      project: 'H',
      startMs,
      endMs: Math.max(startMs + gridTime(r, 1, 6), MIN),
      amounts,
      endAction: r.pick(['release', 'keep'] as const),
    });
  }
  const allocations: Allocation[] = [];
  for (const p of pairs) {
    if (!r.chance(0.5)) continue;
    for (let n = r.int(1, 2); n > 0; n -= 1) {
      const key = pairKey(p.providerId, p.classId);
      const leased = r.chance(0.3) ? FOREVER : gridTime(r, 0, 8);
      const from = r.chance(0.25) ? holds.find((h) => h.amounts.has(key)) : undefined;
      allocations.push({
        consumer: `c${allocations.length}`,
        project: from ? 'H' : 'P',
        key,
        amount: r.int(1, 3),
        endsAtMs: from ? drawnEndMs(from, leased) : leased,
        holdId: from?.id ?? null,
      });
    }
  }
  return { specs, allocations, holds };
}

function randomQuery(r: Random): string {
  const n = () => r.int(1, 3);
  const fast = r.chance(0.25);
  switch (r.below(6)) {
    case 0:
      return `resources=VCPU:${n()}${fast ? '&required=CUSTOM_FAST' : ''}`;
    case 1:
      return `resources=VCPU:${n()},MEMORY_MB:${n()}`;
    case 2:
      return `resources=VCPU:${n()}&resources1=CUSTOM_GPU:${n()}${fast ? '&required1=CUSTOM_FAST' : ''}`;
    case 3:
      return `resources1=VCPU:${n()}&resources2=CUSTOM_GPU:${n()}&group_policy=${r.pick(['none', 'isolate'])}`;
    case 4:
      return `resources=VCPU:${n()},DISK_GB:${n()}`;
    default:
      return `resources1=CUSTOM_GPU:1&resources2=CUSTOM_GPU:${n()}&group_policy=isolate`;
  }
}

const LOOKUPS = (specs: ProviderSpec[]): Lookups => ({
  classIdByName: CLASS_ID,
  traitIdByName: new Map(TRAITS.map((t, i) => [t, i + 1])),
  aggregateIdByUuid: new Map([[AGGREGATE, 1]]),
  rootIdByProviderUuid: new Map(specs.map((s) => [s.uuid, s.rootId])),
});

const OPTIONS: CandidateOptions = { randomize: false, maxCandidates: 0, treeCacheProviders: 0, now: 0 };

// ---- The oracle: no calendar, no pruning; every instant where anything can change.

/** The load of a pair at instant t, by the rule's words: allocations still there, drawn ones as their hold's use while it is active, and active holds. */
function oracleLoad(cloud: Cloud, key: string, t: number): number {
  let load = 0;
  const drawn = new Map<string, number>();
  const active = cloud.holds.filter((h) => h.startMs <= t && t < h.endMs && h.amounts.has(key));
  for (const a of cloud.allocations) {
    if (a.key !== key || t > a.endsAtMs) continue;
    if (a.holdId !== null && active.some((h) => h.id === a.holdId)) drawn.set(a.holdId, (drawn.get(a.holdId) ?? 0) + a.amount);
    else load += a.amount;
  }
  for (const h of active) load += Math.max(h.amounts.get(key)!, drawn.get(h.id) ?? 0);
  return load;
}

type Pieces = Map<string, number>;

function piecesOf(allocations: Record<string, { resources: Record<string, number> }>, specs: ProviderSpec[]): Pieces {
  const idOf = new Map(specs.map((s) => [s.uuid, s.id]));
  const pieces: Pieces = new Map();
  for (const [uuid, { resources }] of Object.entries(allocations))
    for (const [rc, amount] of Object.entries(resources)) {
      const key = pairKey(idOf.get(uuid)!, CLASS_ID.get(rc)!);
      pieces.set(key, (pieces.get(key) ?? 0) + amount);
    }
  return pieces;
}

/** Every instant of [s, s + d) the load can differ at: s, and each grid instant and the millisecond after it inside. */
function instantsOf(s: number, d: number): number[] {
  const out = [s];
  for (let g = Math.ceil(s / MIN) * MIN - MIN; g < s + d; g += MIN) for (const t of [g, g + 1]) if (t > s && t < s + d) out.push(t);
  return out;
}

function fitsThroughout(cloud: Cloud, capacity: Map<string, number>, pieces: Pieces, s: number, d: number): boolean {
  const instants = instantsOf(s, d);
  for (const [key, amount] of pieces) for (const t of instants) if (oracleLoad(cloud, key, t) + amount > capacity.get(key)!) return false;
  return true;
}

/** The earliest start from `from` at which some placement the empty cloud offers fits throughout, trying every millisecond where the answer may change. */
function oracleStart(cloud: Cloud, placements: Pieces[], capacity: Map<string, number>, from: number, d: number): number | null {
  const starts = new Set<number>([from]);
  for (let g = -3 * MIN; g <= 20 * MIN; g += MIN) for (const t of [g, g + 1]) if (t > from) starts.add(t);
  for (const s of [...starts].sort((a, b) => a - b)) if (placements.some((p) => fitsThroughout(cloud, capacity, p, s, d))) return s;
  return null;
}

describe('availability over random trees, against an oracle', () => {
  it('agrees on the earliest start of 600 random queries, and what it names fits at every instant of its window', async () => {
    let later = 0;
    let never = 0;
    let now = 0;
    for (let seed = 1; seed <= 600; seed += 1) {
      const r = random(seed);
      const cloud = randomCloud(r);
      const query = randomQuery(r);
      const request = parseCandidateQueryString(query, MV);
      const model = CloudModel.of(cloud.specs);
      const lookups = LOOKUPS(cloud.specs);
      const capacity = new Map(cloud.specs.flatMap((s) => s.inventories.map((i) => [pairKey(s.id, i.classId), capacityOf(i)] as const)));
      const empty = await candidatesFromModel({ model, usage: new Map(), lookups }, { ...request, limit: null }, MV, OPTIONS);
      const placements = empty.allocation_requests.map((a) =>
        piecesOf(a.allocations as Record<string, { resources: Record<string, number> }>, cloud.specs),
      );
      const from = gridTime(r, 0, 4) + (r.chance(0.2) ? r.int(1, 30) * 1000 : 0);
      const d = gridTime(r, 1, 5) + (r.chance(0.2) ? 1 : 0);
      const calendar: CloudCalendar = { model, lookups, calendar: calendarOf(cloud.allocations, cloud.holds, 0), hookResults: new Map() };
      const answer = await earliestCandidate(calendar, request, MV, OPTIONS, { fromMs: from, durationMs: d });
      const expected = oracleStart(cloud, placements, capacity, from, d);
      const what = `seed ${seed}: ${query} from ${from} for ${d}`;
      expect(answer?.startMs ?? null, what).toBe(expected);
      if (answer) {
        const named = piecesOf(answer.found.requests[0]!.allocations, cloud.specs);
        expect(fitsThroughout(cloud, capacity, named, answer.startMs, d), `${what}: the answer's placement fits`).toBe(true);
        if (answer.startMs > from) later += 1;
        else now += 1;
      } else never += 1;
    }
    // The cases exercise every kind of answer, not only one.
    expect(later).toBeGreaterThan(60);
    expect(now).toBeGreaterThan(60);
    expect(never).toBeGreaterThan(20);
  }, 120_000);
});

// ---- Hand-written nested cases over HTTP.

const T0 = Date.parse('2030-01-01T00:00:00Z');
const HOUR = 3600_000;
const at = (ms: number) => new Date(ms).toISOString();

interface Answer {
  start: string | null;
  end: string | null;
  resource_provider_uuid: string | null;
  allocation_requests: { allocations: Record<string, { resources: Record<string, number> }> }[];
  domain?: string | null;
}

// The trees from the engine's warm tree model (default), and read whole into a model of the request's own (cache off).
describe.each(['20000', '0'])('GET /ext/holds/availability over nested trees (tree cache %s)', (cache) => {
  let t: TestApp;
  let now = T0;
  let host: string;
  let numa0: string;
  let numa1: string;
  let disk: string;
  let aggregate: string;

  beforeEach(async () => {
    t = await makeTestApp({ PLACEMENT_CANDIDATE_TREE_CACHE: cache });
    now = T0;
    t.deps.clock = () => new Date(now);
    aggregate = crypto.randomUUID();
    host = await provider(t, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } }, aggregates: [aggregate] });
    numa0 = await provider(t, { parent: host, inventory: { PGPU: { total: 2 } } });
    numa1 = await provider(t, { parent: host, inventory: { PGPU: { total: 2 } } });
    disk = await provider(t, { inventory: { DISK_GB: { total: 100 } }, traits: ['MISC_SHARES_VIA_AGGREGATE'], aggregates: [aggregate] });
  });
  afterEach(() => t.close());

  async function ask(query: string): Promise<Answer> {
    const res = await t.call('GET', `/ext/holds/availability?${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as Answer;
  }

  async function leased(allocations: Record<string, { resources: Record<string, number> }>, seconds: number): Promise<void> {
    const consumer = crypto.randomUUID();
    expect((await claim(t, allocations, consumer)).status).toBe(204);
    expect((await t.call('PUT', `/ext/leases/${consumer}`, { body: { seconds } })).status).toBe(200);
  }

  async function hold(allocations: Record<string, { resources: Record<string, number> }>, startMs: number, endMs: number): Promise<void> {
    const res = await t.call('POST', '/ext/holds', { body: { project_id: PROJECT, start: at(startMs), end: at(endMs), allocations } });
    expect(res.status, await res.clone().text()).toBe(201);
  }

  it('finds when two GPUs on distinct NUMA children, CPUs on the host and shared disk are all free for the whole window', async () => {
    const query = 'resources=VCPU:2,DISK_GB:50&resources1=PGPU:2&resources2=PGPU:2&group_policy=isolate';
    const free = await ask(`${query}&duration=3600`);
    expect(free.start).toBe(at(T0));
    expect(free.resource_provider_uuid).toBeNull();
    const [request] = free.allocation_requests;
    expect(Object.keys(request!.allocations).sort()).toEqual([disk, host, numa0, numa1].sort());

    // One GPU of numa0 until T0 + 1 h (leased), numa1 held from T0 + 2 h to T0 + 3 h.
    await leased({ [numa0]: { resources: { PGPU: 1 } } }, 3600);
    await hold({ [numa1]: { resources: { PGPU: 1 } } }, T0 + 2 * HOUR, T0 + 3 * HOUR);
    // The lease still counts at its last instant: free from a millisecond after, for half an hour before the hold.
    expect((await ask(`${query}&duration=1800`)).start).toBe(at(T0 + HOUR + 1));
    // An hour from then would reach the hold's first instant: after the hold.
    expect((await ask(`${query}&duration=3600`)).start).toBe(at(T0 + 3 * HOUR));
    // Two hours from then would cross the hold: after the hold.
    expect((await ask(`${query}&duration=7200`)).start).toBe(at(T0 + 3 * HOUR));
    // One GPU per child (no isolate needed) fits now beside both.
    expect((await ask('resources1=PGPU:1&resources2=PGPU:1&group_policy=isolate&duration=7200')).start).toBe(at(T0));

    // The shared disk: 60 GB leased for two hours, then a 50 GB query fits only after.
    await leased({ [disk]: { resources: { DISK_GB: 60 } } }, 7200);
    expect((await ask('resources=VCPU:1,DISK_GB:50&duration=60')).start).toBe(at(T0 + 2 * HOUR + 1));
    // More than the cloud ever has: never.
    expect(await ask('resources=VCPU:1,DISK_GB:101&duration=60')).toMatchObject({ start: null, end: null, allocation_requests: [] });
  });

  it('answers a gang (count, ext_domain) when enough hosts are free together', async () => {
    const second = await provider(t, { inventory: { VCPU: { total: 8 }, MEMORY_MB: { total: 4096 } }, aggregates: [aggregate] });
    await leased({ [second]: { resources: { VCPU: 6 } } }, 1800);
    const gang = await ask('resources=VCPU:4&count=2&duration=600');
    expect(gang.start).toBe(at(T0 + HOUR / 2 + 1));
    expect(gang.domain).toBe(aggregate);
    expect(gang.allocation_requests.map((r) => Object.keys(r.allocations)[0]).sort()).toEqual([host, second].sort());
    const any = await ask('resources=VCPU:4&count=2&ext_domain=any&duration=600');
    expect(any).toMatchObject({ start: at(T0 + HOUR / 2 + 1), domain: null });
    expect((await ask('resources=VCPU:4&count=3&duration=600')).start).toBeNull();
  });

  it("leaves a tainted tree out, as the candidates do, unless the query tolerates the taint's key", async () => {
    await leased({ [host]: { resources: { VCPU: 8 } } }, 3600);
    const spare = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const { generation } = (await (await t.call('GET', `/resource_providers/${spare}`)).json()) as { generation: number };
    const tainted = await t.call('PUT', `/ext/resource_providers/${spare}/taints`, {
      body: { resource_provider_generation: generation, taints: [{ key: 'maintenance', value: '', effect: 'NoSchedule', reason: 'BIOS' }] },
    });
    expect(tainted.status, await tainted.clone().text()).toBe(200);
    // The host is busy for an hour and the spare is tainted: after the lease.
    expect(await ask('resources=VCPU:4&duration=600')).toMatchObject({ start: at(T0 + HOUR + 1), resource_provider_uuid: host });
    expect(await ask('resources=VCPU:4&duration=600&ext_tolerate=maintenance')).toMatchObject({
      start: at(T0),
      resource_provider_uuid: spare,
    });
  });

  it.each([
    ['no duration', 'resources=VCPU:1'],
    ['a duration of 0', 'resources=VCPU:1&duration=0'],
    ['an after that is no time', 'resources=VCPU:1&duration=60&after=tomorrow'],
    ['an unknown class', 'resources=CUSTOM_NOPE:1&duration=60'],
    ['ext_until', `resources=VCPU:1&duration=60&ext_until=${at(T0 + HOUR)}`],
    ['an unknown parameter', 'resources=VCPU:1&duration=60&colour=red'],
  ])('refuses %s with a 400', async (_what, query) => {
    const res = await t.call('GET', `/ext/holds/availability?${query}`);
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail.length).toBeGreaterThan(0);
  });
});
