// GET /ext/headroom beside holds (docs/holds.md), proved by claiming on the
// app's virtual clock: headroom counts exactly the claims of its request that
// would be granted one after another at the same instant, where a hold keeps
// capacity from claims without an end, lets claims ending before its window
// use it, and lets its project draw at most what is left of it (ext_hold).
// Also: the candidates' read of holds judges at the app's clock (deps.clock),
// as the claims' guard does, so what is offered is what is granted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { random } from '../helpers/random.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const T0 = Date.parse('2031-03-01T00:00:00Z');
const MINUTE = 60_000;
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const at = (ms: number) => new Date(ms).toISOString();
const HOLDER = '33333333-0000-4000-8000-000000000003';
const OTHER = '44444444-0000-4000-8000-000000000004';
const CASES = Number(process.env.HEADROOM_HOLDS_CASES ?? 300);

let t: TestApp;
let now = T0;

beforeAll(async () => {
  t = await makeTestApp();
  t.deps.clock = () => new Date(now);
  // The holder's project exists (a hold names a project placement knows).
  const seed = await provider(t, { inventory: { VCPU: { total: 1 } } });
  expect((await claimOn(seed, HOLDER, { VCPU: 1 })).status).toBe(204);
});
afterAll(() => t.close());

type Resources = Record<string, number>;

/** Terms of a claim and of its query: ext_until (ms) and ext_hold, each optional. */
interface Terms {
  untilMs?: number;
  holdId?: string;
}

const termsQuery = (terms: Terms): string =>
  [
    ...(terms.untilMs === undefined ? [] : [`ext_until=${encodeURIComponent(at(terms.untilMs))}`]),
    ...(terms.holdId === undefined ? [] : [`ext_hold=${terms.holdId}`]),
  ].join('&');

const resourcesQuery = (resources: Resources): string =>
  Object.entries(resources)
    .map(([name, n]) => `${name}:${n}`)
    .join(',');

function claimOn(rp: string, project: string, resources: Resources, terms: Terms = {}, consumer = crypto.randomUUID()): Promise<Response> {
  const query = termsQuery(terms);
  return t.call('PUT', `/allocations/${consumer}${query ? `?${query}` : ''}`, {
    body: {
      allocations: { [rp]: { resources } },
      project_id: project,
      user_id: project,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });
}

async function holdOf(allocations: Record<string, Resources>, startMs: number, endMs: number, opts: Record<string, unknown> = {}) {
  return t.call('POST', '/ext/holds', {
    body: {
      project_id: HOLDER,
      start: at(startMs),
      end: at(endMs),
      allocations: Object.fromEntries(Object.entries(allocations).map(([rp, resources]) => [rp, { resources }])),
      ...opts,
    },
  });
}

/** Headroom per tree root of `resources` with `terms`. */
async function headroomOf(resources: Resources, terms: Terms): Promise<Map<string, number>> {
  const extra = termsQuery(terms);
  const res = await t.call('GET', `/ext/headroom?resources=${resourcesQuery(resources)}${extra ? `&${extra}` : ''}`);
  expect(res.status, await res.clone().text()).toBe(200);
  const body = (await res.json()) as { trees: { root_provider_uuid: string; count: number }[] };
  return new Map(body.trees.map((tree) => [tree.root_provider_uuid, tree.count]));
}

/** Claims `resources` on `rp` one after another until one is refused: how many were granted. */
async function grantedInARow(rp: string, project: string, resources: Resources, terms: Terms, consumers: string[] = []): Promise<number> {
  for (let granted = 0; granted < 200; granted += 1) {
    const consumer = crypto.randomUUID();
    const res = await claimOn(rp, project, resources, terms, consumer);
    if (res.status === 409) return granted;
    expect(res.status, await res.clone().text()).toBe(204);
    consumers.push(consumer);
  }
  throw new Error('runaway claim loop');
}

describe('GET /ext/headroom beside holds', () => {
  it('counts a lasting claim by what the hold leaves, a backfill by capacity, a draw by what is left of the hold', async () => {
    now = T0;
    const host = await provider(t, { inventory: { VCPU: { total: 8 } } });
    expect((await claimOn(host, OTHER, { VCPU: 1 })).status).toBe(204);
    const held = await holdOf({ [host]: { VCPU: 5 } }, T0 + HOUR, T0 + 3 * HOUR);
    expect(held.status, await held.clone().text()).toBe(201);
    const holdId = ((await held.json()) as { uuid: string }).uuid;
    const one = { VCPU: 1 };
    // Without an end: 8 - 1 used - 5 held = 2 (plain capacity would say 7).
    expect((await headroomOf(one, {})).get(host)).toBe(2);
    // Ending before the window: the held capacity too, 7.
    const before = { untilMs: T0 + HOUR - MINUTE };
    expect((await headroomOf(one, before)).get(host)).toBe(7);
    expect((await headroomOf({ VCPU: 2 }, before)).get(host)).toBe(3);
    // Both proved by claiming: two lasting claims, then five that end before the window.
    expect(await grantedInARow(host, OTHER, one, {})).toBe(2);
    expect((await headroomOf(one, {})).get(host)).toBeUndefined();
    expect((await headroomOf(one, before)).get(host)).toBe(5);
    const backfill: string[] = [];
    expect(await grantedInARow(host, OTHER, one, before, backfill)).toBe(5);
    // Inside the window, the backfill over (its consumers deleted, as the lease sweep does): the holder draws at most its 5.
    now = T0 + HOUR;
    for (const consumer of backfill) expect((await t.call('DELETE', `/allocations/${consumer}`)).status).toBe(204);
    expect((await headroomOf({ VCPU: 2 }, { holdId })).get(host)).toBe(2);
    expect(await grantedInARow(host, HOLDER, { VCPU: 2 }, { holdId })).toBe(2);
    expect((await headroomOf(one, { holdId })).get(host)).toBe(1);
    expect(await grantedInARow(host, HOLDER, one, { holdId })).toBe(1);
  });

  it(`equals the claims granted one after another on ${CASES} random small clouds with holds, leases and draws`, async () => {
    const r = random(4242);
    let drawnCases = 0;
    let heldCases = 0;
    for (let n = 0; n < CASES; n += 1) {
      // Each cloud on a day of its own: the clock only moves forward, earlier clouds' holds long over.
      const base = T0 + (n + 2) * DAY;
      now = base;
      const hosts: string[] = [];
      const totals = new Map<string, Resources>();
      for (let i = r.int(1, 2); i > 0; i -= 1) {
        const total: Resources = { VCPU: r.int(1, 8) };
        if (r.chance(0.5)) total.MEMORY_MB = r.int(1, 8);
        const host = await provider(t, { inventory: Object.fromEntries(Object.entries(total).map(([name, n]) => [name, { total: n }])) });
        hosts.push(host);
        totals.set(host, total);
      }
      const amountsOn = (max: number): Resources => {
        const resources: Resources = { VCPU: r.int(1, max) };
        if (r.chance(0.3)) resources.MEMORY_MB = r.int(1, max);
        return resources;
      };
      const untilFrom = (from: number): number => from + r.pick([5 * MINUTE, 50 * MINUTE, 2 * HOUR, 6 * HOUR]);
      for (let i = r.below(4); i > 0; i -= 1) {
        await claimOn(r.pick(hosts), OTHER, amountsOn(3), r.chance(0.5) ? { untilMs: untilFrom(now) } : {});
      }
      // Holds of a class each host has, up to its total (some still refused: the claims above are in the way).
      const holds: { id: string; startMs: number; held: Map<string, string> }[] = [];
      for (let i = r.int(0, 2); i > 0; i -= 1) {
        const held = new Map(r.some(hosts, 2).map((rp) => [rp, r.pick(Object.keys(totals.get(rp)!))]));
        const startMs = base + r.pick([10 * MINUTE, HOUR, 2 * HOUR]);
        const allocations = Object.fromEntries([...held].map(([rp, name]) => [rp, { [name]: r.int(1, totals.get(rp)![name]!) }]));
        const res = await holdOf(allocations, startMs, startMs + r.pick([30 * MINUTE, HOUR, 3 * HOUR]), {
          end_action: r.pick(['release', 'keep']),
          ignore_allocations: r.chance(0.2),
        });
        if (res.status === 201) holds.push({ id: ((await res.json()) as { uuid: string }).uuid, startMs, held });
      }
      // The request: lasting, ending at some time, or drawn from a hold (by its project, on what it holds).
      const mode = r.pick(['lasting', 'until', 'hold'] as const);
      const hold = mode === 'hold' && holds.length > 0 ? r.pick(holds) : undefined;
      // Time moves: a draw mostly inside its hold's window, else anywhere before, in or after the windows.
      const later = base + r.pick([0, 20 * MINUTE, 70 * MINUTE, 150 * MINUTE, 5 * HOUR]);
      if (hold && r.chance(0.8)) now = hold.startMs + r.pick([0, 10 * MINUTE]);
      else if (r.chance(0.6)) now = later;
      for (let i = holds.length > 0 ? r.below(3) : 0; i > 0; i -= 1) {
        const from = r.pick(holds);
        const [rp, name] = r.pick([...from.held]);
        await claimOn(rp, HOLDER, { [name]: r.int(1, 2) }, { holdId: from.id, ...(r.chance(0.3) ? { untilMs: untilFrom(now) } : {}) });
      }
      const resources = hold ? { [r.pick([...hold.held.values()])]: r.int(1, 3) } : amountsOn(3);
      const terms: Terms = mode === 'until' ? { untilMs: untilFrom(now) } : hold ? { holdId: hold.id } : {};
      const project = hold ? HOLDER : OTHER;
      const counted = await headroomOf(resources, terms);
      for (const host of hosts) {
        const expected = counted.get(host) ?? 0;
        const granted = await grantedInARow(host, project, resources, terms);
        expect(granted, `case ${n}: ${JSON.stringify({ resources, terms, hosts: hosts.length, holds: holds.length })}`).toBe(expected);
        if (holds.length > 0 && granted > 0) heldCases += 1;
        if (hold && granted > 0) drawnCases += 1;
      }
    }
    // The random clouds reach what they are for: counts beside holds, and draws from them.
    expect(heldCases).toBeGreaterThan(CASES / 10);
    expect(drawnCases).toBeGreaterThan(CASES / 30);
  }, 600_000);
});

describe("the candidates' read of holds on the app's clock", () => {
  it('offers what the claims guard grants at the virtual instant, inside a window and after it', async () => {
    now = T0 + 1000 * DAY;
    const host = await provider(t, { inventory: { PGPU: { total: 4 } } });
    const held = await holdOf({ [host]: { PGPU: 3 } }, now + HOUR, now + 2 * HOUR);
    expect(held.status, await held.clone().text()).toBe(201);
    const holdId = ((await held.json()) as { uuid: string }).uuid;
    const offered = async (query: string): Promise<number> => {
      const res = await t.call('GET', `/allocation_candidates?resources=PGPU:1&in_tree=${host}${query}`);
      expect(res.status, await res.clone().text()).toBe(200);
      const body = (await res.json()) as { provider_summaries: Record<string, { resources: Record<string, { capacity: number }> }> };
      return Object.keys(body.provider_summaries).length;
    };
    // Inside the window (on the virtual clock, years after the real one): the holder's draw is offered and granted.
    now += HOUR;
    expect(await offered(`&ext_hold=${holdId}`)).toBe(1);
    expect((await headroomOf({ PGPU: 1 }, { holdId })).get(host)).toBe(3);
    expect((await claimOn(host, HOLDER, { PGPU: 1 }, { holdId })).status).toBe(204);
    // A lasting claim gets what the hold leaves: one, then none offered, and refused.
    expect(await offered('')).toBe(1);
    expect((await claimOn(host, OTHER, { PGPU: 1 })).status).toBe(204);
    expect(await offered('')).toBe(0);
    expect((await claimOn(host, OTHER, { PGPU: 1 })).status).toBe(409);
    // After the window: the drawn claim still stands until swept, the rest is free to anyone, lasting or not.
    now += 2 * HOUR;
    expect(await offered(`&ext_hold=${holdId}`)).toBe(0);
    expect((await headroomOf({ PGPU: 1 }, {})).get(host)).toBe(2);
    expect(await offered('')).toBe(1);
    expect(await grantedInARow(host, OTHER, { PGPU: 1 }, {})).toBe(2);
  });
});
