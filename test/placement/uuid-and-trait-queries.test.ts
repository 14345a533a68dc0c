// One reading of uuid-like values for every endpoint (oslo's uuidutils.is_uuid_like:
// braces, "urn:uuid:", dashes anywhere, either case) and one trait-query parser whose
// refusals keep each endpoint's own words (upstream's gabbi tests pin both).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

let app: TestApp;
const agg = crypto.randomUUID();
let inAgg: string;

beforeAll(async () => {
  app = await makeTestApp();
  inAgg = await provider(app, { inventory: { VCPU: { total: 4 } }, aggregates: [agg] });
  await provider(app, { inventory: { VCPU: { total: 4 } } });
});
afterAll(() => app.close());

const candidateRoots = async (query: string) => {
  const res = await app.call('GET', `/allocation_candidates?${query}`);
  expect(res.status).toBe(200);
  const body = (await res.json()) as { allocation_requests: { allocations: Record<string, unknown> }[] };
  return body.allocation_requests.flatMap((r) => Object.keys(r.allocations));
};

describe('uuid-like query values', () => {
  const forms = () => [`{${agg}}`, `urn:uuid:${agg}`, agg.replaceAll('-', '').toUpperCase()];

  it('member_of takes every uuid-like form and matches the canonical aggregate', async () => {
    for (const form of forms()) {
      expect(await candidateRoots(`resources=VCPU:1&member_of=${encodeURIComponent(form)}`)).toEqual([inAgg]);
      const list = await app.call('GET', `/resource_providers?member_of=in:${encodeURIComponent(form)}`);
      expect(((await list.json()) as { resource_providers: { uuid: string }[] }).resource_providers.map((p) => p.uuid)).toEqual([inAgg]);
    }
  });

  it('still refuses what is not uuid-like, in upstream words', async () => {
    for (const bad of [`${agg}0`, `{${agg}`.slice(0, -1), 'not-a-uuid']) {
      const res = await app.call('GET', `/allocation_candidates?resources=VCPU:1&member_of=${encodeURIComponent(bad)}`);
      expect(res.status).toBe(400);
      expect((await errorOf(res)).detail).toContain("Expected 'member_of' parameter to contain valid UUID(s)");
    }
  });

  it('the accelerator API looks a uuid-like device profile key up as a uuid, at 2.0 too', async () => {
    const braced = `{${crypto.randomUUID()}}`;
    const res = await app.app.request(`/accelerator/v2/device_profiles/${encodeURIComponent(braced)}`, {
      headers: { 'x-auth-token': 'admin' },
    });
    expect(res.status).toBe(404);
    expect(await res.text()).toContain(`Device Profile not found with uuid=${braced}`);
  });
});

describe('trait queries keep each endpoint words', () => {
  const detail = async (path: string, version: string) => {
    const res = await app.call('GET', path, { version });
    expect(res.status).toBe(400);
    return (await errorOf(res)).detail;
  };
  const PROVIDERS = '/resource_providers?required=';
  const CANDIDATES = '/allocation_candidates?resources=VCPU:1&required=';

  it('in: before 1.39', async () => {
    expect(await detail(`${PROVIDERS}in:A,B`, '1.38')).toMatch(
      / The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1\.39\. {2}$/,
    );
    expect(await detail(`${CANDIDATES}in:A,B`, '1.38')).toContain(
      "Invalid query string parameters: The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. Got: in:A,B",
    );
  });

  it('a malformed in: list', async () => {
    expect(await detail(`${PROVIDERS}in:A,!B`, '1.39')).toContain(
      "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got: in:A,!B",
    );
    expect(await detail(`${CANDIDATES}in:A,!B`, '1.39')).toContain(
      "Expected 'required' parameter value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: in:A,!B",
    );
  });

  it('a lone "!"', async () => {
    expect(await detail(`${PROVIDERS}!`, '1.22')).toContain(
      "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got: !",
    );
    expect(await detail(`${CANDIDATES}!`, '1.22')).toMatch(/No such trait\(s\): {3}$/);
  });

  it('forbidden traits before 1.22 and empty names, alike', async () => {
    for (const base of [PROVIDERS, CANDIDATES]) {
      expect(await detail(`${base}!A`, '1.21')).toContain('of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !A');
      expect(await detail(`${base}A,,B`, '1.39')).toContain('of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got: A,,B');
    }
  });
});
