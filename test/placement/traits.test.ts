import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
const RP = '5b1e8f2a-3c4d-4e5f-8a9b-0c1d2e3f4a01';
beforeAll(async () => {
  t = await makeTestApp();
  await t.call('POST', '/resource_providers', { body: { name: 'cn1', uuid: RP } });
});
afterAll(() => t.close());

interface ErrorBody {
  errors: { status: number; code: string; detail: string }[];
}

async function traitNames(query: string): Promise<string[]> {
  const res = await t.call('GET', `/traits${query}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { traits: string[] }).traits;
}

async function providerTraits(): Promise<{ traits: string[]; resource_provider_generation: number }> {
  return (await t.call('GET', `/resource_providers/${RP}/traits`)).json() as Promise<{
    traits: string[];
    resource_provider_generation: number;
  }>;
}

describe('the trait catalogue', () => {
  it('does not exist below 1.6', async () => {
    expect((await t.call('GET', '/traits', { version: '1.5' })).status).toBe(404);
    expect((await t.call('PUT', '/traits/CUSTOM_OLD', { version: '1.5' })).status).toBe(404);
    expect((await t.call('GET', `/resource_providers/${RP}/traits`, { version: '1.5' })).status).toBe(404);
  });

  it('creates CUSTOM_ traits once (201, then 204) with an absolute Location', async () => {
    const created = await t.call('PUT', '/traits/CUSTOM_FAST_DISK');
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('http://localhost/traits/CUSTOM_FAST_DISK');
    expect((await t.call('PUT', '/traits/CUSTOM_FAST_DISK')).status).toBe(204);
    expect((await t.call('GET', '/traits/CUSTOM_FAST_DISK')).status).toBe(204);
    expect((await t.call('GET', '/traits/CUSTOM_MISSING')).status).toBe(404);
  });

  it('refuses names that are not valid custom traits, and writes nothing', async () => {
    for (const name of ['HW_CPU_X86_NEW', 'CUSTOM_lower', 'CUSTOM_', `CUSTOM_${'A'.repeat(250)}`, 'CUSTOM_%C3%A9']) {
      const res = await t.call('PUT', `/traits/${name}`);
      expect(res.status, name).toBe(400);
      expect(((await res.json()) as ErrorBody).errors[0]!.detail).toContain('The trait is invalid');
    }
    expect(await traitNames('?name=startswith:CUSTOM_')).toEqual(['CUSTOM_FAST_DISK']);
  });

  it('lists by name=in:, name=startswith: (a literal prefix) and associated', async () => {
    await t.call('PUT', '/traits/CUSTOM_X1');
    await t.call('PUT', '/traits/CUSTOM_XAB');
    expect(await traitNames('?name=in:CUSTOM_X1,HW_CPU_X86_AVX2,CUSTOM_NOPE')).toEqual(['CUSTOM_X1', 'HW_CPU_X86_AVX2']);
    // "_" must not act as a LIKE wildcard: CUSTOM_XAB does not start with "CUSTOM_X_".
    expect(await traitNames('?name=startswith:CUSTOM_X_')).toEqual([]);
    expect(await traitNames('?name=startswith:CUSTOM_X')).toEqual(['CUSTOM_X1', 'CUSTOM_XAB']);
    const all = await traitNames('');
    expect(all.length).toBeGreaterThan(300);
    expect(await traitNames('?associated=true')).toEqual([]);
    expect(await traitNames('?associated=True')).toEqual([]);
    expect((await traitNames('?associated=false')).length).toBe(all.length);
  });

  it('answers bad list queries with 400 in the error envelope', async () => {
    for (const query of ['?name=CUSTOM_X1', '?associated=yes', '?color=red']) {
      const res = await t.call('GET', `/traits${query}`);
      expect(res.status, query).toBe(400);
      expect(((await res.json()) as ErrorBody).errors[0]!.status).toBe(400);
    }
  });

  it('deletes custom traits but never standard or in-use ones', async () => {
    expect((await t.call('DELETE', '/traits/HW_CPU_X86_AVX2')).status).toBe(400);
    expect((await t.call('DELETE', '/traits/CUSTOM_NEVER_MADE')).status).toBe(404);
    expect((await t.call('DELETE', '/traits/CUSTOM_XAB')).status).toBe(204);
    expect((await t.call('GET', '/traits/CUSTOM_XAB')).status).toBe(404);
  });
});

describe("a provider's traits", () => {
  it('replaces the set with a generation compare-and-swap and bumps the generation', async () => {
    const res = await t.call('PUT', `/resource_providers/${RP}/traits`, {
      body: { traits: ['HW_CPU_X86_AVX2', 'CUSTOM_FAST_DISK', 'CUSTOM_FAST_DISK'], resource_provider_generation: 0 },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ traits: ['CUSTOM_FAST_DISK', 'HW_CPU_X86_AVX2'], resource_provider_generation: 1 });
    expect(await providerTraits()).toEqual({ traits: ['CUSTOM_FAST_DISK', 'HW_CPU_X86_AVX2'], resource_provider_generation: 1 });
    expect(await traitNames('?associated=true')).toEqual(['CUSTOM_FAST_DISK', 'HW_CPU_X86_AVX2']);
    // osc-placement's `trait list --associated` sends the Python spelling.
    expect(await traitNames('?associated=True')).toEqual(['CUSTOM_FAST_DISK', 'HW_CPU_X86_AVX2']);

    const stale = await t.call('PUT', `/resource_providers/${RP}/traits`, { body: { traits: [], resource_provider_generation: 0 } });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as ErrorBody).errors[0]!.code).toBe('placement.concurrent_update');

    const inUse = await t.call('DELETE', '/traits/CUSTOM_FAST_DISK');
    expect(inUse.status).toBe(409);
  });

  it('rejects unknown traits and bad bodies without touching the provider', async () => {
    const bodies: unknown[] = [
      { traits: ['CUSTOM_NEVER_MADE'], resource_provider_generation: 1 },
      { traits: ['lower_case'], resource_provider_generation: 1 },
      { traits: 'CUSTOM_FAST_DISK', resource_provider_generation: 1 },
      { traits: [] },
      { traits: [], resource_provider_generation: '1' },
      { traits: [], resource_provider_generation: 1, extra: true },
      '{"traits": [',
    ];
    for (const body of bodies) {
      const res = await t.call('PUT', `/resource_providers/${RP}/traits`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as ErrorBody).errors[0]!.status).toBe(400);
    }
    expect(await providerTraits()).toEqual({ traits: ['CUSTOM_FAST_DISK', 'HW_CPU_X86_AVX2'], resource_provider_generation: 1 });
  });

  it('404s for an unknown provider', async () => {
    const missing = '5b1e8f2a-3c4d-4e5f-8a9b-0c1d2e3f4aff';
    expect((await t.call('GET', `/resource_providers/${missing}/traits`)).status).toBe(404);
    expect((await t.call('DELETE', `/resource_providers/${missing}/traits`)).status).toBe(404);
  });

  it('DELETE clears the set, bumps the generation and frees the trait for deletion', async () => {
    expect((await t.call('DELETE', `/resource_providers/${RP}/traits`)).status).toBe(204);
    expect(await providerTraits()).toEqual({ traits: [], resource_provider_generation: 2 });
    expect((await t.call('DELETE', '/traits/CUSTOM_FAST_DISK')).status).toBe(204);
  });
});
