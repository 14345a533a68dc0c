// Holds in GET /allocation_candidates (docs/holds.md), on the real clock:
// held capacity is offered to a request that ends before the window
// (ext_until) and to no other; the difference in candidates is exactly the
// held amount; ext_hold offers only what the hold holds, inside its window;
// a stock request answers byte for byte as before once the holds are gone.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { at, claim, HOUR, PROJECT } from './helpers.js';

let t: TestApp;
let hosts: string[];

beforeEach(async () => {
  t = await makeTestApp();
  hosts = [];
  for (let i = 0; i < 16; i++) hosts.push(await provider(t, { inventory: { PGPU: { total: 1 }, VCPU: { total: 8 } } }));
  const seed = await provider(t, { inventory: { VCPU: { total: 1 } } });
  expect((await claim(t, { [seed]: { resources: { VCPU: 1 } } })).status).toBe(204);
});
afterEach(() => t.close());

async function candidatesText(query: string): Promise<string> {
  const res = await t.call('GET', `/allocation_candidates?${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return res.text();
}

async function count(query: string): Promise<number> {
  return (JSON.parse(await candidatesText(query)) as { allocation_requests: unknown[] }).allocation_requests.length;
}

async function holdOn(providers: string[], startMs: number, endMs: number): Promise<string> {
  const res = await t.call('POST', '/ext/holds', {
    body: {
      project_id: PROJECT,
      start: at(startMs),
      end: at(endMs),
      allocations: Object.fromEntries(providers.map((p) => [p, { resources: { PGPU: 1 } }])),
    },
  });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { uuid: string }).uuid;
}

describe('backfill in GET /allocation_candidates', () => {
  it('offers the held units only to a request that ends before the window: the difference is the held amount', async () => {
    const query = 'resources=PGPU:1&limit=100';
    const stockBefore = await candidatesText(query);
    expect(await count(query)).toBe(16);
    const start = Date.now() + 2 * HOUR;
    const id = await holdOn(hosts.slice(0, 5), start, start + 2 * HOUR);
    const held = 5;
    const without = await count(query);
    const before = await count(`${query}&ext_until=${encodeURIComponent(at(start - 60_000))}`);
    const atStart = await count(`${query}&ext_until=${encodeURIComponent(at(start))}`);
    const after = await count(`${query}&ext_until=${encodeURIComponent(at(start + HOUR))}`);
    expect(without).toBe(16 - held);
    expect(before - without).toBe(held);
    expect(atStart).toBe(without);
    expect(after).toBe(without);
    expect(await count(`${query}&ext_until=3600`)).toBe(16);
    // Drawing before the window: nothing to draw yet.
    expect(await count(`${query}&ext_hold=${id}`)).toBe(0);
    // The hold gone, a stock request answers exactly as before.
    expect((await t.call('DELETE', `/ext/holds/${id}`)).status).toBe(204);
    expect(await candidatesText(query)).toBe(stockBefore);
  });

  it('follows every change the rule reads: a claim on a held provider, an edit of the hold, its removal', async () => {
    const big = await provider(t, { inventory: { PGPU: { total: 16 } } });
    const query = `resources=PGPU:4&in_tree=${big}`;
    const start = Date.now() + HOUR;
    const res = await t.call('POST', '/ext/holds', {
      body: { project_id: PROJECT, start: at(start), end: at(start + HOUR), allocations: { [big]: { resources: { PGPU: 8 } } } },
    });
    const hold = (await res.json()) as { uuid: string };
    expect(await count(query)).toBe(1);
    expect((await claim(t, { [big]: { resources: { PGPU: 4 } } })).status).toBe(204);
    expect(await count(query)).toBe(1);
    expect((await claim(t, { [big]: { resources: { PGPU: 4 } } })).status).toBe(204);
    expect(await count(query)).toBe(0);
    expect(await count(`${query}&ext_until=600`)).toBe(1);
    const edited = await t.call('PATCH', `/ext/holds/${hold.uuid}`, {
      body: { generation: 1, allocations: { [big]: { resources: { PGPU: 4 } } } },
    });
    expect(edited.status).toBe(200);
    expect(await count(query)).toBe(1);
    expect((await t.call('DELETE', `/ext/holds/${hold.uuid}`)).status).toBe(204);
    expect(await count(`resources=PGPU:8&in_tree=${big}`)).toBe(1);
  });

  it("offers to ext_hold inside the window only the hold's providers, up to what is left of it", async () => {
    const query = 'resources=PGPU:1&limit=100';
    const id = await holdOn(hosts.slice(0, 3), Date.now() - 1000, Date.now() + HOUR);
    expect(await count(query)).toBe(13);
    const drawn = JSON.parse(await candidatesText(`${query}&ext_hold=${id}`)) as {
      allocation_requests: { allocations: Record<string, unknown> }[];
    };
    expect(drawn.allocation_requests.map((r) => Object.keys(r.allocations)[0]).sort()).toEqual(hosts.slice(0, 3).sort());
    // Asking for a class the hold does not hold: none.
    expect(await count(`resources=PGPU:1,VCPU:1&ext_hold=${id}`)).toBe(0);
    expect((await t.call('GET', '/allocation_candidates?resources=PGPU:1&ext_until=soon')).status).toBe(400);
  });
});
