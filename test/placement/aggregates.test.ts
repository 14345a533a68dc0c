import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
const RP1 = '9d0c6a1e-1111-4a2b-9c3d-000000000001';
const RP2 = '9d0c6a1e-1111-4a2b-9c3d-000000000002';
const RP3 = '9d0c6a1e-1111-4a2b-9c3d-000000000003';
const AGG_A = 'aaaaaaaa-0000-4000-8000-000000000001';
const AGG_B = 'bbbbbbbb-0000-4000-8000-000000000002';

beforeAll(async () => {
  t = await makeTestApp();
  for (const [name, uuid] of [
    ['rp1', RP1],
    ['rp2', RP2],
    ['rp3', RP3],
  ] as const) {
    await t.call('POST', '/resource_providers', { body: { name, uuid } });
  }
});
afterAll(() => t.close());

interface ErrorBody {
  errors: { status: number; code: string; detail: string }[];
}

async function aggregates(uuid: string, version?: string): Promise<Record<string, unknown>> {
  const res = await t.call('GET', `/resource_providers/${uuid}/aggregates`, version ? { version } : {});
  expect(res.status).toBe(200);
  return res.json() as Promise<Record<string, unknown>>;
}

async function listUuids(query: string, version?: string): Promise<string[]> {
  const res = await t.call('GET', `/resource_providers${query}`, version ? { version } : {});
  expect(res.status, query).toBe(200);
  const body = (await res.json()) as { resource_providers: { uuid: string }[] };
  return body.resource_providers.map((p) => p.uuid);
}

async function generationOf(uuid: string): Promise<number> {
  const res = await t.call('GET', `/resource_providers/${uuid}`);
  return ((await res.json()) as { generation: number }).generation;
}

describe('provider aggregates', () => {
  it('does not exist at 1.0', async () => {
    expect((await t.call('GET', `/resource_providers/${RP1}/aggregates`, { version: '1.0' })).status).toBe(404);
  });

  it('1.1: a bare list both ways, generation neither shown nor bumped', async () => {
    const res = await t.call('PUT', `/resource_providers/${RP1}/aggregates`, { body: [AGG_A], version: '1.1' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ aggregates: [AGG_A] });
    expect(await aggregates(RP1, '1.1')).toEqual({ aggregates: [AGG_A] });
    expect(await generationOf(RP1)).toBe(0);
  });

  it('1.19: carries the generation, compare-and-swaps and bumps it', async () => {
    expect(await aggregates(RP1)).toEqual({ aggregates: [AGG_A], resource_provider_generation: 0 });
    const ok = await t.call('PUT', `/resource_providers/${RP1}/aggregates`, {
      body: { aggregates: [AGG_A, AGG_B], resource_provider_generation: 0 },
    });
    expect(await ok.json()).toEqual({ aggregates: [AGG_A, AGG_B], resource_provider_generation: 1 });
    const stale = await t.call('PUT', `/resource_providers/${RP1}/aggregates`, {
      body: { aggregates: [], resource_provider_generation: 0 },
    });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as ErrorBody).errors[0]!.code).toBe('placement.concurrent_update');
    expect(await aggregates(RP1)).toEqual({ aggregates: [AGG_A, AGG_B], resource_provider_generation: 1 });
  });

  it('rejects bad bodies with 400 and leaves membership alone', async () => {
    const bodies: [unknown, string][] = [
      [{ aggregates: ['not-a-uuid'], resource_provider_generation: 1 }, "is not a 'uuid'"],
      [{ aggregates: [AGG_A, AGG_A], resource_provider_generation: 1 }, 'has non-unique elements'],
      [{ aggregates: [AGG_A] }, "'resource_provider_generation' is a required property"],
      [{ aggregates: [AGG_A], resource_provider_generation: 1, more: 1 }, 'Additional properties are not allowed'],
      [[AGG_A], 'is not of type'],
      ['{"aggregates": ', 'Malformed JSON'],
    ];
    for (const [body, wording] of bodies) {
      const res = await t.call('PUT', `/resource_providers/${RP1}/aggregates`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as ErrorBody).errors[0]!.detail).toContain(wording);
    }
    expect(await aggregates(RP1)).toEqual({ aggregates: [AGG_A, AGG_B], resource_provider_generation: 1 });
  });

  it('404s for an unknown provider', async () => {
    const missing = '9d0c6a1e-1111-4a2b-9c3d-0000000000ff';
    expect((await t.call('GET', `/resource_providers/${missing}/aggregates`)).status).toBe(404);
    const put = await t.call('PUT', `/resource_providers/${missing}/aggregates`, {
      body: { aggregates: [], resource_provider_generation: 0 },
    });
    expect(put.status).toBe(404);
  });
});

describe('member_of filtering of the provider list', () => {
  beforeAll(async () => {
    await t.call('PUT', `/resource_providers/${RP2}/aggregates`, { body: { aggregates: [AGG_B], resource_provider_generation: 0 } });
  });

  it('filters by one aggregate and by in: (any of, 1.3)', async () => {
    expect(await listUuids(`?member_of=${AGG_A}`)).toEqual([RP1]);
    expect(await listUuids(`?member_of=in:${AGG_A},${AGG_B}`)).toEqual([RP1, RP2]);
    expect((await t.call('GET', `/resource_providers?member_of=${AGG_A}`, { version: '1.2' })).status).toBe(400);
  });

  it('ANDs repeated member_of from 1.24 and refuses them before', async () => {
    expect(await listUuids(`?member_of=${AGG_A}&member_of=${AGG_B}`)).toEqual([RP1]);
    const early = await t.call('GET', `/resource_providers?member_of=${AGG_A}&member_of=${AGG_B}`, { version: '1.23' });
    expect(early.status).toBe(400);
    expect(((await early.json()) as ErrorBody).errors[0]!.detail).toContain('Multiple member_of parameters are not supported');
  });

  it('negates with ! and !in: from 1.32', async () => {
    expect(await listUuids(`?member_of=!${AGG_A}`)).toEqual([RP2, RP3]);
    expect(await listUuids(`?member_of=!in:${AGG_A},${AGG_B}`)).toEqual([RP3]);
    expect((await t.call('GET', `/resource_providers?member_of=!${AGG_A}`, { version: '1.31' })).status).toBe(400);
  });

  it('answers a malformed aggregate uuid with 400', async () => {
    const res = await t.call('GET', '/resource_providers?member_of=in:nope');
    expect(res.status).toBe(400);
    expect(((await res.json()) as ErrorBody).errors[0]!.detail).toContain('Invalid query string parameters');
  });
});
