// /ext/holds over HTTP (docs/holds.md): a hold's life (create, read, list,
// edit at its generation, delete), admission against allocations and other
// holds, bad input refused with a clear 4xx that writes nothing, and the
// availability calendar. The app's clock is virtual, set per test.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { errorOf, type TestApp } from '../helpers/test-app.js';
import { claim, gpuHostOnVirtualClock, PROJECT } from './helpers.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const HOUR = 3600_000;
const at = (ms: number) => new Date(ms).toISOString();

let t: TestApp;
let now = T0;
let gpu: string;

beforeEach(async () => {
  now = T0;
  ({ t, gpu } = await gpuHostOnVirtualClock(() => now, 8));
  // The project becomes known to placement through a consumer of it.
  const seed = await provider(t, { inventory: { VCPU: { total: 1 } } });
  expect((await claim(t, { [seed]: { resources: { VCPU: 1 } } })).status).toBe(204);
});
afterEach(() => t.close());

const holdBody = (amount: number, startMs: number, endMs: number, extra: Record<string, unknown> = {}) => ({
  project_id: PROJECT,
  start: at(startMs),
  end: at(endMs),
  allocations: { [gpu]: { resources: { PGPU: amount } } },
  ...extra,
});

async function postHold(body: unknown): Promise<Response> {
  return t.call('POST', '/ext/holds', { body });
}

async function holdsListed(query = ''): Promise<{ uuid: string }[]> {
  const res = await t.call('GET', `/ext/holds${query}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { holds: { uuid: string }[] }).holds;
}

describe('a hold over HTTP', () => {
  it('is created, read, listed by project and by instant, edited at its generation, and deleted', async () => {
    const made = await postHold(holdBody(8, T0 + HOUR, T0 + 3 * HOUR));
    expect(made.status, await made.clone().text()).toBe(201);
    const hold = (await made.json()) as { uuid: string; generation: number; start: string; end_action: string; allocations: unknown };
    expect(hold).toMatchObject({
      generation: 1,
      start: at(T0 + HOUR),
      end_action: 'release',
      allocations: { [gpu]: { resources: { PGPU: 8 } } },
    });
    expect((await t.call('GET', `/ext/holds/${hold.uuid}`)).status).toBe(200);
    expect((await holdsListed(`?project_id=${PROJECT}`)).map((h) => h.uuid)).toEqual([hold.uuid]);
    expect(await holdsListed('?project_id=someone-else')).toEqual([]);
    expect((await holdsListed(`?active_at=${at(T0 + 2 * HOUR)}`)).length).toBe(1);
    expect((await holdsListed(`?active_at=${at(T0 + 3 * HOUR)}`)).length).toBe(0);

    const edited = await t.call('PATCH', `/ext/holds/${hold.uuid}`, { body: { generation: 1, end: at(T0 + 4 * HOUR) } });
    expect(edited.status, await edited.clone().text()).toBe(200);
    expect(await edited.json()).toMatchObject({ generation: 2, end: at(T0 + 4 * HOUR) });
    const stale = await t.call('PATCH', `/ext/holds/${hold.uuid}`, { body: { generation: 1, end: at(T0 + 5 * HOUR) } });
    expect(stale.status).toBe(409);
    expect((await errorOf(stale)).code).toBe('placement.concurrent_update');

    expect((await t.call('DELETE', `/ext/holds/${hold.uuid}`)).status).toBe(204);
    expect((await t.call('GET', `/ext/holds/${hold.uuid}`)).status).toBe(404);
    expect((await t.call('DELETE', `/ext/holds/${hold.uuid}`)).status).toBe(404);
  });

  it('is refused (409 hold_unsatisfiable) where other holds over the window leave too little, and admitted beside them where they do not overlap', async () => {
    expect((await postHold(holdBody(10, T0 + HOUR, T0 + 3 * HOUR))).status).toBe(201);
    const over = await postHold(holdBody(7, T0 + 2 * HOUR, T0 + 4 * HOUR));
    expect(over.status).toBe(409);
    const error = await errorOf(over);
    expect(error.code).toBe('placement.ext.hold_unsatisfiable');
    expect(error.detail).toContain(`at ${at(T0 + 2 * HOUR)} (17 held and allocated of 16)`);
    expect((await postHold(holdBody(6, T0 + 2 * HOUR, T0 + 4 * HOUR))).status).toBe(201);
    expect((await postHold(holdBody(16, T0 + 3 * HOUR + 1, T0 + 5 * HOUR))).status).toBe(409);
    expect((await postHold(holdBody(16, T0 + 4 * HOUR, T0 + 5 * HOUR))).status).toBe(201);
  });

  it('counts allocations without an end as lasting, a leased one until its expiry, and ignore_allocations leaves the lasting ones out', async () => {
    const lasting = crypto.randomUUID();
    expect((await claim(t, { [gpu]: { resources: { PGPU: 4 } } }, lasting)).status).toBe(204);
    const leased = crypto.randomUUID();
    expect((await claim(t, { [gpu]: { resources: { PGPU: 4 } } }, leased)).status).toBe(204);
    expect((await t.call('PUT', `/ext/leases/${leased}`, { body: { seconds: 1800 } })).status).toBe(200);
    // 4 lasting + 4 leased (until T0 + 30 min) + 12 over [T0 + 20 min, ...) > 16 at T0 + 20 min.
    expect((await postHold(holdBody(12, T0 + HOUR / 3, T0 + HOUR))).status).toBe(409);
    // The leased claim still counts at its expiry (the sweep removes it then, at the earliest).
    expect((await postHold(holdBody(12, T0 + HOUR / 2, T0 + HOUR))).status).toBe(409);
    // After T0 + 30 min it has ended: 4 + 12 fit.
    const after = T0 + HOUR / 2 + 1000;
    expect((await postHold(holdBody(12, after, T0 + HOUR))).status).toBe(201);
    expect((await postHold(holdBody(4, after, T0 + HOUR))).status).toBe(409);
    expect((await postHold(holdBody(4, after, T0 + HOUR, { ignore_allocations: true }))).status).toBe(201);
  });

  it.each([
    ['end before start', () => holdBody(1, T0 + 2 * HOUR, T0 + HOUR), 400, 'must come after its start'],
    ['a window already over', () => holdBody(1, T0 - 2 * HOUR, T0 - HOUR), 400, 'in the past'],
    [
      'an unknown provider',
      () => ({ ...holdBody(1, T0 + HOUR, T0 + 2 * HOUR), allocations: { [crypto.randomUUID()]: { resources: { PGPU: 1 } } } }),
      400,
      'No such resource provider',
    ],
    [
      'an unknown class',
      () => ({ ...holdBody(1, T0 + HOUR, T0 + 2 * HOUR), allocations: { [gpu]: { resources: { CUSTOM_NOPE: 1 } } } }),
      400,
      'No such resource class',
    ],
    [
      'a class the provider has no inventory of',
      () => ({ ...holdBody(1, T0 + HOUR, T0 + 2 * HOUR), allocations: { [gpu]: { resources: { DISK_GB: 1 } } } }),
      400,
      'no inventory',
    ],
    ['an unknown project', () => ({ ...holdBody(1, T0 + HOUR, T0 + 2 * HOUR), project_id: 'never-seen' }), 400, 'Unknown project'],
    ['more than the provider has', () => holdBody(17, T0 + HOUR, T0 + 2 * HOUR), 400, 'bigger than its capacity (16)'],
    ['not RFC 3339', () => ({ ...holdBody(1, T0 + HOUR, T0 + 2 * HOUR), start: 'tomorrow' }), 400, 'JSON does not validate'],
    ['an unknown field', () => ({ ...holdBody(1, T0 + HOUR, T0 + 2 * HOUR), colour: 'red' }), 400, 'JSON does not validate'],
  ])('refuses %s with a clear 4xx in the error envelope and writes nothing', async (_what, body, status, words) => {
    const res = await postHold(body());
    expect(res.status).toBe(status);
    expect((await errorOf(res)).detail).toContain(words);
    expect(await holdsListed()).toEqual([]);
  });

  it('refuses edits that overlap (two at one generation: one wins), a stale one and a bad window, leaving the hold as the winner wrote it', async () => {
    const made = (await (await postHold(holdBody(4, T0 + HOUR, T0 + 2 * HOUR))).json()) as { uuid: string };
    const edit = (body: Record<string, unknown>) => t.call('PATCH', `/ext/holds/${made.uuid}`, { body: { generation: 1, ...body } });
    const racing = await Promise.all([edit({ end: at(T0 + 3 * HOUR) }), edit({ allocations: { [gpu]: { resources: { PGPU: 6 } } } })]);
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409]);
    const lost = racing.find((r) => r.status === 409)!;
    expect((await errorOf(lost)).code).toBe('placement.concurrent_update');
    const won = (await racing.find((r) => r.status === 200)!.json()) as Record<string, unknown>;
    const stored = async () => (await t.call('GET', `/ext/holds/${made.uuid}`)).json();
    expect(won).toMatchObject({ generation: 2 });
    expect(await stored()).toEqual(won);
    // Stale, an end before the start, a window moved into the past: refused, nothing changed.
    for (const [body, status, words] of [
      [{ end: at(T0 + 4 * HOUR) }, 409, 'is at generation 2, not 1'],
      [{ generation: 2, end: at(T0 + HOUR / 2) }, 400, 'must come after its start'],
      [{ generation: 2, start: at(T0 - 3 * HOUR), end: at(T0 - 2 * HOUR) }, 400, 'in the past'],
      [{ generation: 2, allocations: { [gpu]: { resources: { PGPU: 17 } } } }, 400, 'bigger than its capacity (16)'],
      [{ generation: 2, allocations: { [crypto.randomUUID()]: { resources: { PGPU: 1 } } } }, 400, 'No such resource provider'],
    ] as const) {
      const res = await edit(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect((await errorOf(res)).detail).toContain(words);
      expect(await stored()).toEqual(won);
    }
  });

  it('refuses a hold of a query bigger than the cloud (409 hold_unsatisfiable) and writes nothing', async () => {
    const res = await postHold({ ...holdBody(1, T0 + HOUR, T0 + 2 * HOUR), allocations: undefined, query: 'resources=PGPU:17&count=1' });
    expect(res.status).toBe(409);
    expect((await errorOf(res)).code).toBe('placement.ext.hold_unsatisfiable');
    expect(await holdsListed()).toEqual([]);
  });

  it('refuses an edit that would not fit, and leaves the hold as it was', async () => {
    const a = (await (await postHold(holdBody(8, T0 + HOUR, T0 + 2 * HOUR))).json()) as { uuid: string };
    expect((await postHold(holdBody(8, T0 + HOUR, T0 + 2 * HOUR))).status).toBe(201);
    const grown = await t.call('PATCH', `/ext/holds/${a.uuid}`, {
      body: { generation: 1, allocations: { [gpu]: { resources: { PGPU: 9 } } } },
    });
    expect(grown.status).toBe(409);
    expect((await errorOf(grown)).code).toBe('placement.ext.hold_unsatisfiable');
    expect(await (await t.call('GET', `/ext/holds/${a.uuid}`)).json()).toMatchObject({
      generation: 1,
      allocations: { [gpu]: { resources: { PGPU: 8 } } },
    });
  });
});

describe('GET /ext/holds/availability', () => {
  it('answers the earliest start at which the resources fit for the duration, beside holds and leased claims', async () => {
    const ask = async (query: string) => {
      const res = await t.call('GET', `/ext/holds/availability?${query}`);
      expect(res.status, await res.clone().text()).toBe(200);
      return (await res.json()) as { start: string | null; resource_provider_uuid: string | null };
    };
    expect(await ask('resources=PGPU:16&duration=3600')).toMatchObject({ start: at(T0), resource_provider_uuid: gpu });
    expect((await postHold(holdBody(16, T0 + HOUR / 2, T0 + 2 * HOUR))).status).toBe(201);
    // An hour from now no longer fits before the hold: after it.
    expect((await ask('resources=PGPU:1&duration=3600')).start).toBe(at(T0 + 2 * HOUR));
    // Half an hour does.
    expect((await ask('resources=PGPU:1&duration=1800')).start).toBe(at(T0));
    expect((await ask(`resources=PGPU:1&duration=60&after=${at(T0 + HOUR)}`)).start).toBe(at(T0 + 2 * HOUR));
    expect((await ask('resources=PGPU:17&duration=60')).start).toBeNull();
    const bad = await t.call('GET', '/ext/holds/availability?resources=PGPU:1');
    expect(bad.status).toBe(400);
  });
});
