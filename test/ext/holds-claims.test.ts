// Claims beside holds (docs/holds.md), through the API on a virtual clock:
// outsiders never get held capacity of a window that has begun or will begin
// unless their claim ends before it (ext_until, enforced by a lease written
// in the claim's batch); the hold's project draws from it (ext_hold) inside
// its window, on its providers, up to its amount; racing claims at the
// window's start leave the hold's project all of it; end_action=release
// removes the drawn claims at the first sweep after the end.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runSweeps } from '../../src/jobs/sweeps.js';
import { endsOf, gpuHostOnVirtualClock } from './helpers.js';
import { parseSamples, sampleValue } from '../helpers/prometheus-text.js';
import { errorOf, sameDatabaseApp, type TestApp } from '../helpers/test-app.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const HOUR = 3600_000;
const at = (ms: number) => new Date(ms).toISOString();
const HELD_FOR = '11111111-0000-4000-8000-000000000001';
const OTHER = '22222222-0000-4000-8000-000000000002';

let t: TestApp;
let now = T0;
let gpu: string;

beforeEach(async () => {
  now = T0;
  ({ t, gpu } = await gpuHostOnVirtualClock(() => now, 64));
  expect((await claimOn(t, HELD_FOR, { VCPU: 1 })).status).toBe(204);
});
afterEach(() => t.close());

function claimOn(
  app: TestApp,
  project: string,
  resources: Record<string, number>,
  query = '',
  consumer = crypto.randomUUID(),
): Promise<Response> {
  return app.call('PUT', `/allocations/${consumer}${query}`, {
    body: {
      allocations: { [gpu]: { resources } },
      project_id: project,
      user_id: project,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    },
  });
}

/** A second app on the same database and virtual clock: two connections writing at once. Close `other.store` after. */
async function secondApp(): Promise<{ second: TestApp; other: TestApp['deps'] }> {
  const second = await sameDatabaseApp(t, () => now);
  return { second, other: second.deps };
}

async function hold(amount: number, startMs: number, endMs: number, endAction: 'release' | 'keep' = 'release'): Promise<string> {
  const res = await t.call('POST', '/ext/holds', {
    body: {
      project_id: HELD_FOR,
      start: at(startMs),
      end: at(endMs),
      end_action: endAction,
      allocations: { [gpu]: { resources: { PGPU: amount } } },
    },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { uuid: string }).uuid;
}

async function usage(project: string): Promise<number> {
  const res = await t.call('GET', `/usages?project_id=${project}`, { version: '1.9' });
  return ((await res.json()) as { usages: Record<string, number> }).usages.PGPU ?? 0;
}

describe('backfill before a window', () => {
  it('offers held capacity only to a claim that ends before the window starts, and writes its lease', async () => {
    await hold(12, T0 + 2 * HOUR, T0 + 4 * HOUR);
    // Without an end it would still hold the GPUs at the window's start.
    const lasting = await claimOn(t, OTHER, { PGPU: 5 });
    expect(lasting.status).toBe(409);
    expect((await errorOf(lasting)).code).toBe('placement.ext.capacity_held');
    expect((await claimOn(t, OTHER, { PGPU: 4 })).status).toBe(204);
    // Ending at the start is too late; a minute before is not.
    expect((await claimOn(t, OTHER, { PGPU: 12 }, `?ext_until=${at(T0 + 2 * HOUR)}`)).status).toBe(409);
    const backfill = crypto.randomUUID();
    expect((await claimOn(t, OTHER, { PGPU: 12 }, `?ext_until=${at(T0 + 2 * HOUR - 60_000)}`, backfill)).status).toBe(204);
    expect(await endsOf(t, [backfill])).toEqual({ [backfill]: at(T0 + 2 * HOUR - 60_000) });
    // Seconds from now work too; nothing is left before the window.
    expect((await claimOn(t, OTHER, { PGPU: 1 }, '?ext_until=60')).status).toBe(409);
  });

  it('writes a lease with ext_until where nothing is held (the one-batch claim), and refuses a malformed one', async () => {
    const consumer = crypto.randomUUID();
    expect((await claimOn(t, OTHER, { PGPU: 16 }, '?ext_until=600', consumer)).status).toBe(204);
    expect(await endsOf(t, [consumer])).toEqual({ [consumer]: at(T0 + 600_000) });
    for (const bad of ['?ext_until=soon', `?ext_until=${at(T0 - 1000)}`, '?ext_hold=nope', '?ext_other=1']) {
      const res = await claimOn(t, OTHER, { VCPU: 1 }, bad);
      expect(res.status, bad).toBe(400);
    }
    // Refused before anything was written.
    expect(await usage(OTHER)).toBe(16);
  });
});

describe('drawing from a hold', () => {
  it("is the hold's project's, inside its window, on what it holds, up to its amount", async () => {
    const id = await hold(8, T0 + HOUR, T0 + 2 * HOUR);
    const early = await claimOn(t, HELD_FOR, { PGPU: 1 }, `?ext_hold=${id}`);
    expect(early.status).toBe(409);
    expect((await errorOf(early)).code).toBe('placement.ext.hold_draw_refused');
    now = T0 + HOUR;
    expect((await claimOn(t, OTHER, { PGPU: 1 }, `?ext_hold=${id}`)).status).toBe(409);
    expect((await claimOn(t, HELD_FOR, { VCPU: 1 }, `?ext_hold=${id}`)).status).toBe(409);
    expect((await claimOn(t, HELD_FOR, { PGPU: 5 }, `?ext_hold=${id}`)).status).toBe(204);
    expect((await claimOn(t, HELD_FOR, { PGPU: 3 }, `?ext_hold=${id}`)).status).toBe(204);
    const over = await claimOn(t, HELD_FOR, { PGPU: 1 }, `?ext_hold=${id}`);
    expect(over.status).toBe(409);
    expect((await errorOf(over)).detail).toContain('has 0 of 8');
    // The drawn 8 are the hold's use, not on top of it: the other 8 are free for anyone.
    expect((await claimOn(t, OTHER, { PGPU: 8 })).status).toBe(204);
    expect((await claimOn(t, OTHER, { PGPU: 1 })).status).toBe(409);
  });
});

describe('racing at the window start', () => {
  it('leaves all 16 held units to the hold: 16 drawn claims granted, 32 outsiders refused, nothing over capacity', async () => {
    const id = await hold(16, T0 + HOUR, T0 + 2 * HOUR);
    now = T0 + HOUR;
    const { second, other } = await secondApp();
    try {
      const outsiders = Array.from({ length: 32 }, (_, i) => claimOn(i % 2 ? t : second, OTHER, { PGPU: 1 }));
      const drawn = Array.from({ length: 16 }, (_, i) => claimOn(i % 2 ? second : t, HELD_FOR, { PGPU: 1 }, `?ext_hold=${id}`));
      const [o, d] = await Promise.all([Promise.all(outsiders), Promise.all(drawn)]);
      expect(o.filter((r) => r.status === 204).length).toBe(0);
      expect(d.filter((r) => r.status === 204).length).toBe(16);
      expect(await usage(HELD_FOR)).toBe(16);
      expect(await usage(OTHER)).toBe(0);
    } finally {
      other.store.close();
    }
  });
});

describe('holds racing claims and holds', () => {
  it('a hold of everything and 16 lasting claims at once: never both, and two holds of 10 of 16: one', async () => {
    const { second, other } = await secondApp();
    const holdBody = (amount: number) => ({
      project_id: HELD_FOR,
      start: at(T0 + HOUR),
      end: at(T0 + 2 * HOUR),
      allocations: { [gpu]: { resources: { PGPU: amount } } },
    });
    try {
      const [hold, ...claims] = await Promise.all([
        second.call('POST', '/ext/holds', { body: holdBody(16) }),
        ...Array.from({ length: 16 }, (_, i) => claimOn(i % 2 ? t : second, OTHER, { PGPU: 1 })),
      ]);
      const granted = claims.filter((r) => r.status === 204).length;
      if (hold!.status === 201) expect(granted).toBe(0);
      else {
        expect(hold!.status).toBe(409);
        expect(granted).toBeGreaterThan(0);
      }
      expect(await usage(OTHER)).toBe(granted);
      // Clear the ground, then two holds that do not fit together.
      for (const h of ((await (await t.call('GET', '/ext/holds')).json()) as { holds: { uuid: string }[] }).holds) {
        await t.call('DELETE', `/ext/holds/${h.uuid}`);
      }
      const consumers = (
        (await (await t.call('GET', `/resource_providers/${gpu}/allocations`)).json()) as { allocations: Record<string, unknown> }
      ).allocations;
      for (const c of Object.keys(consumers)) await t.call('DELETE', `/allocations/${c}`);
      const both = await Promise.all([
        t.call('POST', '/ext/holds', { body: holdBody(10) }),
        second.call('POST', '/ext/holds', { body: holdBody(10) }),
      ]);
      expect(both.map((r) => r.status).sort()).toEqual([201, 409]);
    } finally {
      other.store.close();
    }
  });
});

describe('the end of a hold', () => {
  it('end_action=release: the drawn claims are gone at the first sweep after the end; keep: they stay', async () => {
    const released = await hold(8, T0 + HOUR, T0 + 2 * HOUR, 'release');
    const kept = await hold(8, T0 + HOUR, T0 + 2 * HOUR, 'keep');
    now = T0 + HOUR;
    const a = crypto.randomUUID();
    const b = crypto.randomUUID();
    expect((await claimOn(t, HELD_FOR, { PGPU: 8 }, `?ext_hold=${released}`, a)).status).toBe(204);
    expect((await claimOn(t, HELD_FOR, { PGPU: 8 }, `?ext_hold=${kept}`, b)).status).toBe(204);
    now = T0 + 2 * HOUR - 1;
    await runSweeps(t.deps);
    expect(await usage(HELD_FOR)).toBe(16);
    now = T0 + 2 * HOUR;
    await runSweeps(t.deps);
    expect((await t.call('GET', `/allocations/${a}`)).status).toBe(200);
    expect(((await (await t.call('GET', `/allocations/${a}`)).json()) as { allocations: object }).allocations).toEqual({});
    expect(await usage(HELD_FOR)).toBe(8);
    expect((await t.call('GET', `/ext/holds/${released}`)).status).toBe(404);
    expect((await t.call('GET', `/ext/holds/${kept}`)).status).toBe(404);
  });
});

describe('leases renewed or confirmed beside holds (/ext/leases)', () => {
  it('refuses confirming a backfill claim or renewing it past the window, naming the hold; keeps what breaks nothing', async () => {
    const id = await hold(12, T0 + 2 * HOUR, T0 + 4 * HOUR);
    const backfill = crypto.randomUUID();
    expect((await claimOn(t, OTHER, { PGPU: 12 }, `?ext_until=${at(T0 + HOUR)}`, backfill)).status).toBe(204);
    // Confirmed, it would last forever: into the window.
    const confirm = await t.call('DELETE', `/ext/leases/${backfill}`);
    expect(confirm.status).toBe(409);
    const refused = await errorOf(confirm);
    expect(refused.code).toBe('placement.ext.capacity_held');
    expect(refused.detail).toContain(id);
    // Renewed past the window's start (3 hours from now) it would too; renewed to end before it, it does not.
    const past = await t.call('PUT', `/ext/leases/${backfill}`, { body: { seconds: 3 * 3600 } });
    expect(past.status).toBe(409);
    expect((await errorOf(past)).detail).toContain(id);
    const within = await t.call('PUT', `/ext/leases/${backfill}`, { body: { seconds: 3600 + 1800 } });
    expect(within.status, await within.clone().text()).toBe(200);
    expect(await within.json()).toMatchObject({ expires_at: at(T0 + HOUR + 1800_000) });
    // Nothing refused was written: the lease is the renewed one.
    expect(await (await t.call('GET', `/ext/leases/${backfill}`)).json()).toMatchObject({ expires_at: at(T0 + HOUR + 1800_000) });
    // A lease whose claim fits beside the hold is confirmed and renewed freely.
    const small = crypto.randomUUID();
    expect((await claimOn(t, OTHER, { PGPU: 3 }, '?ext_until=600', small)).status).toBe(204);
    expect((await t.call('PUT', `/ext/leases/${small}`, { body: { seconds: 5 * 3600 } })).status).toBe(200);
    expect((await t.call('DELETE', `/ext/leases/${small}`)).status).toBe(204);
    // Once the hold is gone, the backfill claim may last.
    expect((await t.call('DELETE', `/ext/holds/${id}`)).status).toBe(204);
    expect((await t.call('DELETE', `/ext/leases/${backfill}`)).status).toBe(204);
  });
});

describe('leases confirmed at once beside a hold', () => {
  it('two confirms that each fit alone but not together: one passes, one is refused', async () => {
    await hold(12, T0 + 2 * HOUR, T0 + 4 * HOUR);
    const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
    for (const c of [a, b]) expect((await claimOn(t, OTHER, { PGPU: 3 }, `?ext_until=${at(T0 + HOUR)}`, c)).status).toBe(204);
    const both = await Promise.all([a, b].map((c) => t.call('DELETE', `/ext/leases/${c}`)));
    expect(both.map((r) => r.status).sort()).toEqual([204, 409]);
  });
});

describe('holds in GET /metrics', () => {
  it('shows per class what is held ahead of and in its window, and what is drawn from it', async () => {
    const scrape = async () => parseSamples(await (await t.call('GET', '/metrics')).text());
    const id = await hold(10, T0 + HOUR, T0 + 2 * HOUR);
    let samples = await scrape();
    expect(sampleValue(samples, 'placement_ext_held', { resourcetype: 'PGPU', window: 'upcoming' })).toBe(10);
    expect(sampleValue(samples, 'placement_ext_held', { resourcetype: 'PGPU', window: 'active' })).toBeUndefined();
    now = T0 + HOUR;
    expect((await claimOn(t, HELD_FOR, { PGPU: 4 }, `?ext_hold=${id}`)).status).toBe(204);
    samples = await scrape();
    expect(sampleValue(samples, 'placement_ext_held', { resourcetype: 'PGPU', window: 'active' })).toBe(10);
    expect(sampleValue(samples, 'placement_ext_held_drawn', { resourcetype: 'PGPU' })).toBe(4);
    now = T0 + 2 * HOUR;
    samples = await scrape();
    expect(sampleValue(samples, 'placement_ext_held', { resourcetype: 'PGPU', window: 'active' })).toBeUndefined();
    expect(sampleValue(samples, 'placement_ext_held_drawn', { resourcetype: 'PGPU' })).toBeUndefined();
  });
});

describe('holds in the audit (GET /diagnostics/audit)', () => {
  it('reports where allocations that will exist and the holds exceed capacity, naming the hold', async () => {
    const audit = async () =>
      ((await (await t.call('GET', '/diagnostics/audit')).json()) as { extensions: { holds: Record<string, unknown> } }).extensions.holds;
    const lasting = crypto.randomUUID();
    expect((await claimOn(t, OTHER, { PGPU: 10 }, '', lasting)).status).toBe(204);
    const fits = await hold(6, T0 + HOUR, T0 + 2 * HOUR);
    expect(await audit()).toEqual({ active: 0, upcoming: 1, violation_count: 0, violations: [] });
    // Admitted over the lasting claim (the operator says it will be gone): the rule is broken until it is.
    const res = await t.call('POST', '/ext/holds', {
      body: {
        project_id: HELD_FOR,
        start: at(T0 + HOUR),
        end: at(T0 + 2 * HOUR),
        ignore_allocations: true,
        allocations: { [gpu]: { resources: { PGPU: 4 } } },
      },
    });
    expect(res.status, await res.clone().text()).toBe(201);
    const ignoring = ((await res.json()) as { uuid: string }).uuid;
    const broken = await audit();
    expect(broken).toMatchObject({ upcoming: 2, violation_count: 1 });
    expect(broken.violations).toEqual([
      { resource_provider_uuid: gpu, resource_class: 'PGPU', at: at(T0 + HOUR), load: 20, capacity: 16, holds: [fits, ignoring].sort() },
    ]);
    expect((await t.call('DELETE', `/allocations/${lasting}`)).status).toBe(204);
    expect(await audit()).toMatchObject({ violation_count: 0, violations: [] });
  });
});
