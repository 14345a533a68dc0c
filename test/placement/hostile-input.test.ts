// Inputs an attacker would send, in token mode as the probe did: each gets a
// clean answer in the API's own envelope (never a 500), and data either
// round-trips exactly or is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

const TOKENS = JSON.stringify({ admin: { roles: ['admin'], project_id: 'ops', user_id: 'root' } });
const tokenMode = (env: Record<string, string> = {}) =>
  makeTestApp({ PLACEMENT_AUTH_STRATEGY: 'token', PLACEMENT_AUTH_TOKENS: TOKENS, ...env });

/** Cyborg's faultstring, or fails when the body is not Cyborg's envelope. */
const faultOf = async (res: Response) =>
  (JSON.parse(((await res.json()) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
const acc = (t: TestApp, method: string, path: string, body?: string | ReadableStream, headers: Record<string, string> = {}) =>
  t.app.request(`/accelerator/v2${path}`, {
    method,
    body,
    headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'accelerator 2.3', ...headers },
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  } as RequestInit);

const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

let t: TestApp;
let rp: string;
beforeAll(async () => {
  t = await tokenMode();
  rp = await provider(t, { inventory: { VCPU: { total: 8 } } });
});
afterAll(() => t.close());

describe('deeply nested JSON', () => {
  it('answers 400 in the envelope for a 100,000-deep array in any body', async () => {
    const deep = deepArray(100_000);
    const placementWrites: [string, string][] = [
      ['POST', '/resource_providers'],
      ['PUT', `/resource_providers/${rp}/inventories`],
      ['POST', '/allocations'],
      ['PUT', `/allocations/${crypto.randomUUID()}`],
      ['POST', '/reshaper'],
      ['PUT', `/resource_providers/${rp}/traits`],
    ];
    for (const [method, path] of placementWrites) {
      const res = await t.call(method, path, { body: deep });
      expect(res.status, path).toBe(400);
      expect((await errorOf(res)).detail).toContain('nested deeper than 32 levels');
    }
    for (const [method, path] of [
      ['POST', '/device_profiles'],
      ['PATCH', '/accelerator_requests'],
      ['POST', '/attributes'],
    ] as const) {
      const res = await acc(t, method, path, deep);
      expect(res.status, path).toBe(400);
      expect(await faultOf(res)).toContain('nested deeper than 32 levels');
    }
  });

  it('still reads ordinary nesting and names what is wrong in it, cut short', async () => {
    const res = await t.call('PUT', `/allocations/${crypto.randomUUID()}`, {
      body: {
        allocations: { [rp]: { resources: { VCPU: [[[[[['deep']]]]]] } } },
        project_id: 'p',
        user_id: 'u',
        consumer_generation: null,
      },
    });
    expect(res.status).toBe(400);
    expect((await errorOf(res)).detail).toContain("[[[[[...]]]]] is not of type 'integer'");
  });
});

describe('limit', () => {
  it('treats a limit of 2^63 or more as one larger than the candidate count', async () => {
    for (const limit of ['9223372036854775807', '9223372036854775808', '99999999999999999999999999']) {
      const res = await t.call('GET', `/allocation_candidates?resources=VCPU:1&limit=${limit}`);
      expect(res.status, limit).toBe(200);
      const body = (await res.json()) as { allocation_requests: unknown[]; provider_summaries: Record<string, unknown> };
      expect(body.allocation_requests).toHaveLength(1);
      expect(Object.keys(body.provider_summaries)).toEqual([rp]);
    }
  });
});

describe('control characters', () => {
  it('refuses them in names, ids and keys of placement bodies, with the character escaped in the message', async () => {
    const cases: [string, string, unknown][] = [
      ['POST', '/resource_providers', { name: 'a\u0000b' }],
      ['POST', '/resource_providers', { name: 'tab\there' }],
      ['PUT', `/resource_providers/${rp}`, { name: 'x\u007f' }],
      [
        'PUT',
        `/allocations/${crypto.randomUUID()}`,
        {
          allocations: { [rp]: { resources: { VCPU: 1 } } },
          project_id: 'p\u0000q',
          user_id: 'u',
          consumer_generation: null,
        },
      ],
      ['PUT', `/resource_providers/${rp}/inventories`, { resource_provider_generation: 1, inventories: { 'VCPU\u0000': { total: 1 } } }],
    ];
    for (const [method, path, body] of cases) {
      const res = await t.call(method, path, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await errorOf(res)).detail).toMatch(/contains the control character U\+00(00|09|7F); control characters are not allowed/);
    }
    const nul = await t.call('POST', '/resource_providers', { body: { name: 'a\u0000b' } });
    expect((await errorOf(nul)).detail).toContain("'a\\x00b' contains");
    const listed = (await (await t.call('GET', '/resource_providers')).json()) as { resource_providers: { name: string }[] };
    expect(listed.resource_providers.map((p) => p.name)).toEqual([`rp-${rp}`]);
  });

  it('refuses them percent-encoded in query strings and paths of both APIs', async () => {
    for (const path of ['/resource_providers?name=a%00b', '/usages?project_id=p%00', '/resource_providers/%01']) {
      const res = await t.call('GET', path);
      expect(res.status, path).toBe(400);
      expect((await errorOf(res)).detail).toContain('control characters are not allowed');
    }
    const res = await acc(t, 'GET', '/device_profiles?name=a%1fb');
    expect(res.status).toBe(400);
    expect(await faultOf(res)).toContain('control character U+001F');
  });

  it('refuses them in accelerator bodies too', async () => {
    const res = await acc(
      t,
      'POST',
      '/device_profiles',
      JSON.stringify([{ name: 'dp1', description: 'line\nbreak', groups: [{ 'resources:FPGA': '1' }] }]),
    );
    expect(res.status).toBe(400);
    expect(await faultOf(res)).toBe('Invalid input: 0.description: control character U+000A is not allowed.');
  });

  it('stores and returns other characters exactly', async () => {
    const name = 'ünï cødé ✓ 😀 \u00a0\u2028';
    const created = await t.call('POST', '/resource_providers', { body: { name } });
    expect(created.status).toBe(200);
    const { uuid } = (await created.json()) as { uuid: string };
    expect(((await (await t.call('GET', `/resource_providers/${uuid}`)).json()) as { name: string }).name).toBe(name);
    expect((await t.call('DELETE', `/resource_providers/${uuid}`)).status).toBe(204);
  });
});

describe('body size', () => {
  it('answers 413 in the envelope for a body over 1 MiB, before parsing it', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    const res = await t.call('POST', '/resource_providers', { body: big });
    expect(res.status).toBe(413);
    expect(await errorOf(res)).toMatchObject({
      status: 413,
      title: 'Request Entity Too Large',
      detail: expect.stringContaining('larger than the limit of 1048576 bytes'),
    });
    // Not even JSON: the size alone decides.
    expect((await t.call('POST', '/resource_providers', { body: `{${' '.repeat(1024 * 1024)}` })).status).toBe(413);
    const cyborg = await acc(t, 'POST', '/device_profiles', big);
    expect(cyborg.status).toBe(413);
    expect(await faultOf(cyborg)).toContain('larger than the limit of 1048576 bytes');
  });

  it('counts bytes of a body sent without content-length (chunked)', async () => {
    const chunk = new TextEncoder().encode(' '.repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 40) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await acc(t, 'POST', '/device_profiles', stream);
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(40);
  });

  it('counts the bytes received when a content-length understates them', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
    const res = await acc(t, 'POST', '/device_profiles', big, { 'content-length': '20' });
    expect(res.status).toBe(413);
    expect(await faultOf(res)).toContain('larger than the limit of 1048576 bytes');
  });

  it('takes its limit from PLACEMENT_MAX_BODY_BYTES', async () => {
    const small = await tokenMode({ PLACEMENT_MAX_BODY_BYTES: '100' });
    try {
      expect((await small.call('POST', '/resource_providers', { body: { name: 'x'.repeat(60) } })).status).toBe(200);
      expect((await small.call('POST', '/resource_providers', { body: { name: 'x'.repeat(100) } })).status).toBe(413);
    } finally {
      small.close();
    }
  });

  it('never echoes a 10 MB value back in a 400', async () => {
    const roomy = await tokenMode({ PLACEMENT_MAX_BODY_BYTES: String(32 * 1024 * 1024) });
    try {
      const huge = 'x'.repeat(10 * 1024 * 1024);
      for (const body of [{ name: huge }, { name: 'ok', uuid: huge }, { name: 'ok', parent_provider_uuid: [huge, huge] }]) {
        const res = await roomy.call('POST', '/resource_providers', { body });
        expect(res.status).toBe(400);
        const text = await res.text();
        expect(text.length).toBeLessThan(10_000);
        expect(text).toContain('(10485760 characters)');
      }
      const res = await roomy.call('PUT', `/resource_providers/${crypto.randomUUID()}/inventories`, {
        body: { resource_provider_generation: 0, inventories: { [`CUSTOM_${'X'.repeat(5 * 1024 * 1024)}`]: { total: 1 } } },
      });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect((await res.text()).length).toBeLessThan(10_000);
    } finally {
      roomy.close();
    }
  });
});

describe('long URLs', () => {
  it('accepts a member_of=in: list longer than 16 KB', async () => {
    const aggregates = Array.from({ length: 600 }, () => crypto.randomUUID());
    const path = `/allocation_candidates?resources=VCPU:1&member_of=in:${aggregates.join(',')}`;
    expect(path.length).toBeGreaterThan(16 * 1024);
    const res = await t.call('GET', path);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { allocation_requests: unknown[] }).allocation_requests).toEqual([]);
  });

  it('answers 414 in the envelope beyond 64 KiB', async () => {
    const long = 'a'.repeat(70 * 1024);
    const res = await t.call('GET', `/resource_providers?name=${long}`);
    expect(res.status).toBe(414);
    expect(await errorOf(res)).toMatchObject({ status: 414, detail: expect.stringContaining('longer than 65536 characters') });
    const cyborg = await acc(t, 'GET', `/device_profiles?name=${long}`);
    expect(cyborg.status).toBe(414);
    expect(await faultOf(cyborg)).toContain('longer than 65536 characters');
  });
});

describe('internal errors', () => {
  it('answers a 500 with a generic message and the request id, and logs the details under that id', async () => {
    const logged: Record<string, unknown>[] = [];
    t.deps.log = {
      ...t.deps.log,
      error: (msg, extra) => {
        logged.push({ msg, ...extra });
      },
    };
    await t.deps.store.client.execute(`CREATE TRIGGER h10_fail_profile BEFORE INSERT ON device_profiles
      BEGIN SELECT RAISE(ABORT, 'injected failure'); END`);
    try {
      const res = await acc(t, 'POST', '/device_profiles', JSON.stringify([{ name: 'boom', groups: [{ 'resources:FPGA': '1' }] }]));
      expect(res.status).toBe(500);
      const requestId = res.headers.get('x-openstack-request-id')!;
      const message = await faultOf(res);
      expect(message).toBe(`An unexpected error occurred; it is logged with request id ${requestId}.`);
      expect(logged).toEqual([expect.objectContaining({ requestId, err: expect.stringMatching(/injected failure/) })]);
    } finally {
      await t.deps.store.client.execute('DROP TRIGGER h10_fail_profile');
    }
  });
});
