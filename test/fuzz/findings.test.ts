// What the hostile-input fuzz (hostile-fuzz.test.ts) found, each pinned down
// by a focused test that failed before its fix.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AllocationRequest, RequestPicker } from '../../src/placement/candidates/search.js';
import { dumpPlacement } from '../helpers/placement-seed.js';
import { provider } from '../helpers/providers.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

let t: TestApp;
beforeAll(async () => {
  t = await makeTestApp();
});
afterAll(() => t.close());

describe('an allocation ratio as large (or as negative) as placement accepts', () => {
  it('leaves every read that reports or compares capacity answering', async () => {
    const huge = await provider(t, { inventory: { VCPU: { total: 2147483647, allocation_ratio: 3.4e38 } } });
    // Two of each: the dashboard sums capacities per class.
    await provider(t, { inventory: { VCPU: { total: 2147483647, allocation_ratio: 3.4e38 } } });
    const negative = await provider(t, { inventory: { MEMORY_MB: { total: 2147483647, allocation_ratio: -3.4e38 } } });
    await provider(t, { inventory: { MEMORY_MB: { total: 2147483647, allocation_ratio: -3.4e38 } } });
    const consumer = crypto.randomUUID();
    const claim = await t.call('PUT', `/allocations/${consumer}`, {
      body: {
        allocations: { [huge]: { resources: { VCPU: 2147483647 } } },
        project_id: 'p',
        user_id: 'u',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    expect(claim.status).toBe(204);
    const reads = [
      '/allocation_candidates?resources=VCPU:1',
      '/allocation_candidates?resources=MEMORY_MB:1',
      '/resource_providers?resources=VCPU:1',
      `/resource_providers/${huge}/usages`,
      `/resource_providers/${negative}/inventories`,
      '/diagnostics/audit',
      '/diagnostics/allocation_candidates?resources=VCPU:1',
      `/diagnostics/allocation_candidates?resources=MEMORY_MB:1&host=${negative}`,
      '/dashboard/api/summary',
      '/dashboard/api/summary?over=50',
    ];
    for (const path of reads) {
      const res = await t.call('GET', path);
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
    }
    const candidates = (await (await t.call('GET', '/allocation_candidates?resources=VCPU:1')).json()) as {
      provider_summaries: Record<string, { resources: Record<string, { capacity: number; used: number }> }>;
    };
    expect(candidates.provider_summaries[huge]!.resources.VCPU).toEqual({ capacity: Number.MAX_SAFE_INTEGER, used: 2147483647 });
    const summary = (await (await t.call('GET', '/dashboard/api/summary')).json()) as {
      resource_classes: Record<string, { capacity: number }>;
    };
    expect(summary.resource_classes.VCPU!.capacity).toBe(Number.MAX_SAFE_INTEGER);
    expect(summary.resource_classes.MEMORY_MB!.capacity).toBe(-Number.MAX_SAFE_INTEGER);
  });
});

const acc = (method: string, path: string, body: string | Uint8Array) =>
  t.app.request(`/accelerator/v2${path}`, {
    method,
    headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'accelerator latest' },
    body,
  });
const faultOf = async (res: Response) =>
  (JSON.parse(((await res.json()) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
const namesOf = async () =>
  ((await (await t.call('GET', '/resource_providers')).json()) as { resource_providers: { name: string }[] }).resource_providers.map(
    (p) => p.name,
  );

describe('text that would be stored changed', () => {
  it('refuses a body that is not UTF-8 (it would be stored with U+FFFD in place of the bytes)', async () => {
    const before = await namesOf();
    const bytes = (text: string, bad: number[]) => {
      const [head, tail] = text.split('|') as [string, string];
      return new Uint8Array([...Buffer.from(head), ...bad, ...Buffer.from(tail)]);
    };
    for (const bad of [[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const res = await t.app.request('/resource_providers', {
        method: 'POST',
        headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement latest' },
        body: bytes('{"name": "utf8|x"}', bad),
      });
      expect(res.status, String(bad)).toBe(400);
      expect((await errorOf(res)).detail).toContain('Malformed JSON: the body is not valid UTF-8');
      const cyborg = await acc(
        'POST',
        '/device_profiles',
        bytes('[{"name": "dp", "description": "|", "groups": [{"resources:FPGA": "1"}]}]', bad),
      );
      expect(cyborg.status).toBe(400);
      expect(await faultOf(cyborg)).toBe('Malformed JSON in request body.');
    }
    expect(await namesOf()).toEqual(before);
  });

  it('refuses unpaired surrogates in strings and keys (valid pairs are stored as sent)', async () => {
    const before = await namesOf();
    for (const body of ['{"name": "a\\ud800b"}', '{"name": "\\udfff"}', '{"name": "x\\ud83d"}', '{"name": "ok", "\\udc00": 1}']) {
      const res = await t.call('POST', '/resource_providers', { body });
      expect(res.status, body).toBe(400);
      expect((await errorOf(res)).detail).toMatch(/contains the unpaired surrogate U\+D[89A-F][0-9A-F]{2}; text must be valid Unicode/);
    }
    const named = await t.call('POST', '/resource_providers', { body: '{"name": "a\\ud800b"}' });
    expect((await errorOf(named)).detail).toContain("'a\\ud800b' contains");
    expect(await namesOf()).toEqual(before);

    const cyborg = await acc('POST', '/device_profiles', '[{"name": "dp", "description": "\\udc00", "groups": [{"resources:FPGA": "1"}]}]');
    expect(cyborg.status).toBe(400);
    expect(await faultOf(cyborg)).toBe(
      'Invalid input: 0.description: unpaired surrogate U+DC00 is not allowed; text must be valid Unicode.',
    );

    const paired = await t.call('POST', '/resource_providers', { body: '{"name": "pair \\ud83d\\ude00"}' });
    expect(paired.status).toBe(200);
    expect(await namesOf()).toContain('pair 😀');
  });
});

describe('a body within the size limit that names tens of thousands of items', () => {
  it('is refused with 413 in the envelope, changes nothing, and the service goes on', async () => {
    const rp = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const dump = () => dumpPlacement(t.deps);
    const generation = async () => ((await (await t.call('GET', `/resource_providers/${rp}`)).json()) as { generation: number }).generation;
    const consumer = (allocations: unknown) => ({
      allocations,
      project_id: 'p',
      user_id: 'u',
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    });
    const manyProviders: Record<string, unknown> = {};
    for (let i = 0; i < 14_000; i++) manyProviders[crypto.randomUUID()] = { resources: { VCPU: 1 } };
    const manyClasses: Record<string, number> = {};
    for (let i = 0; i < 33_000; i++) manyClasses[`CUSTOM_${i.toString(36).toUpperCase()}`] = 1;
    const cases: [string, string, () => Promise<unknown>][] = [
      [
        'PUT',
        `/resource_providers/${rp}/aggregates`,
        async () => ({
          resource_provider_generation: await generation(),
          aggregates: Array.from({ length: 26_000 }, () => crypto.randomUUID()),
        }),
      ],
      [
        'PUT',
        `/resource_providers/${rp}/traits`,
        async () => ({
          resource_provider_generation: await generation(),
          traits: Array.from({ length: 70_000 }, (_, i) => `CUSTOM_${i.toString(36).toUpperCase()}`),
        }),
      ],
      ['PUT', `/allocations/${crypto.randomUUID()}`, async () => consumer(manyProviders)],
      ['PUT', `/allocations/${crypto.randomUUID()}`, async () => consumer({ [rp]: { resources: manyClasses } })],
    ];
    for (const [method, path, body] of cases) {
      const sent = JSON.stringify(await body());
      expect(sent.length).toBeLessThan(1024 * 1024);
      const before = await dump();
      const res = await t.call(method, path, { body: sent });
      expect(res.status, path).toBe(413);
      expect((await errorOf(res)).detail).toContain('The request names more items than can be applied at once');
      expect(await dump()).toEqual(before);
      expect((await t.call('GET', `/resource_providers/${rp}/aggregates`)).status).toBe(200);
    }
  });
});

describe('a consumer named in another uuid form', () => {
  it('reads back and deletes through the same path it was written to', async () => {
    const rp = await provider(t, { inventory: { VCPU: { total: 8 } } });
    const consumer = crypto.randomUUID();
    for (const path of [consumer.toUpperCase(), consumer.replaceAll('-', ''), `{${consumer}}`]) {
      const put = await t.call('PUT', `/allocations/${path}`, {
        body: {
          allocations: { [rp]: { resources: { VCPU: 1 } } },
          project_id: 'p',
          user_id: 'u',
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        },
      });
      expect(put.status, path).toBe(204);
      const read = (await (await t.call('GET', `/allocations/${path}`)).json()) as {
        allocations: Record<string, unknown>;
        project_id: string;
      };
      expect(Object.keys(read.allocations), path).toEqual([rp]);
      expect(read.project_id).toBe('p');
      expect((await t.call('DELETE', `/allocations/${path}`)).status, path).toBe(204);
      expect((await (await t.call('GET', `/allocations/${consumer}`)).json()) as unknown).toEqual({ allocations: {} });
    }
  });
});

describe('a host report for a hostname no compute node can have', () => {
  it('is refused with 400 in the accelerator envelope', async () => {
    const report = JSON.stringify({ devices: [{ key: 'k', type: 'GPU', vendor: 'v', model: 'm' }] });
    const res = await acc('PUT', `/hosts/${'h'.repeat(256)}/devices`, report);
    expect(res.status).toBe(400);
    expect(await faultOf(res)).toBe('Invalid input: hostname must be at most 255 characters.');
    const { rows } = await t.deps.store.client.execute('SELECT count(*) AS n FROM devices');
    expect(Number(rows[0]!.n)).toBe(0);
    expect((await acc('PUT', `/hosts/${'h'.repeat(255)}/devices`, report)).status).toBe(200);
  });
});

describe('a body whose stream fails part way (the client went away)', () => {
  it('is a 400 in each envelope, not an internal error', async () => {
    const broken = () =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{"name": "half'));
          controller.error(new Error('aborted'));
        },
      });
    const logged: unknown[] = [];
    const log = t.deps.log;
    t.deps.log = { ...log, error: (...args: unknown[]) => void logged.push(args) };
    try {
      const send = (path: string, version: string) =>
        t.app.request(path, {
          method: 'POST',
          headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': version },
          body: broken(),
          duplex: 'half',
        } as RequestInit);
      const placement = await send('/resource_providers', 'placement latest');
      expect(placement.status).toBe(400);
      expect((await errorOf(placement)).detail).toContain('The request body was not received completely.');
      const cyborg = await send('/accelerator/v2/device_profiles', 'accelerator latest');
      expect(cyborg.status).toBe(400);
      expect(await faultOf(cyborg)).toBe('The request body was not received completely.');
      expect(logged).toEqual([]);
    } finally {
      t.deps.log = log;
    }
  });
});

describe('an allocation candidate search whose combinations are all refused late', () => {
  it('stops at the time budget (PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS) and keeps what it found', async () => {
    // A search that never ends: one candidate, then only the search's ticks.
    function* endless(): Generator<AllocationRequest | null> {
      yield { pieces: [], mappings: new Map() };
      for (;;) yield null;
    }
    // Started before the picker takes its deadline, so the elapsed time is never
    // read short by a clock tick between the two lines.
    const started = Date.now();
    const picker = new RequestPicker(null, false, 0, 100);
    await picker.offer(endless());
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(picker.done).toBe(true);
    expect(picker.result()).toHaveLength(1);
  });

  it('gives the event loop back while it searches, so a long search does not stall other requests', async () => {
    function* endless(): Generator<AllocationRequest | null> {
      for (;;) yield null;
    }
    let otherWorkRan = false;
    setTimeout(() => {
      otherWorkRan = true;
    }, 0);
    const picker = new RequestPicker(null, false, 0, 300);
    await picker.offer(endless());
    // A search that never gave the loop back would end before the timer above could run.
    expect(otherWorkRan).toBe(true);
    expect(picker.done).toBe(true);
  });

  it('before 1.29, eight groups on twenty sibling children answer in full, well within the budget', async () => {
    // Before 1.29 a candidate may use one provider per tree: all eight groups
    // on one child. Judged only once all eight were chosen, this walked 20^8
    // combinations (the budget cut it after the first child's); judged as each
    // group is chosen, it is quick.
    await expectAllOnOneRoomyChild(`${EIGHT_GROUPS}&group_policy=none`, '1.28');
  });

  it('same_subtree over eight groups on twenty sibling children answers in full, well within the budget', async () => {
    // Eight groups that must share a subtree: all on one child. Checked only
    // once all eight were chosen, this walked 20^8 combinations (the budget
    // cut it after the first child's); cut as soon as two groups part, it is quick.
    const sameSubtree = Array.from({ length: 8 }, (_, i) => i + 1).join(',');
    await expectAllOnOneRoomyChild(`${EIGHT_GROUPS}&group_policy=none&same_subtree=${sameSubtree}`, '1.36');
  });
});

const EIGHT_GROUPS = Array.from({ length: 8 }, (_, i) => `resources${i + 1}=VCPU:1`).join('&');

/**
 * On a root with twenty children, the even ones with room for 8 VCPU and the
 * odd ones for 4, `query` (eight groups of VCPU:1 that must end up on one
 * child) answers with every roomy child, in order, within a 2 s budget.
 */
async function expectAllOnOneRoomyChild(query: string, version: string): Promise<void> {
  const app = await makeTestApp({ PLACEMENT_ALLOCATION_CANDIDATES_TIME_BUDGET_MS: '2000' });
  try {
    const root = await provider(app, {});
    const children: string[] = [];
    for (let i = 0; i < 20; i++) children.push(await provider(app, { parent: root, inventory: { VCPU: { total: i % 2 === 0 ? 8 : 4 } } }));
    const res = await app.call('GET', `/allocation_candidates?${query}`, { version });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { allocation_requests: { allocations: Record<string, { resources: { VCPU: number } }> }[] };
    expect(body.allocation_requests.map((r) => Object.entries(r.allocations).map(([uuid, a]) => [uuid, a.resources.VCPU]))).toEqual(
      children.filter((_, i) => i % 2 === 0).map((uuid) => [[uuid, 8]]),
    );
  } finally {
    app.close();
  }
}

describe('ids given as strings of digits', () => {
  it('are refused beyond JavaScript exact integers instead of reaching SQLite as Infinity', async () => {
    const message = 'must be at most 9007199254740991';
    for (const digits of ['9'.repeat(17), '9'.repeat(400)]) {
      const list = await t.app.request(`/accelerator/v2/attributes?deployable_id=${digits}`, { headers: { 'x-auth-token': 'admin' } });
      expect(list.status).toBe(400);
      expect(await faultOf(list)).toBe(`Invalid input: deployable_id: ${message}`);
      const create = await acc('POST', '/attributes', JSON.stringify({ deployable_id: digits, key: 'k', value: 'v' }));
      expect(create.status).toBe(400);
      expect(await faultOf(create)).toBe(`Invalid input: deployable_id: ${message}`);
      const arq = await acc(
        'POST',
        '/accelerator_requests',
        JSON.stringify({ device_profile_name: 'any', device_profile_group_id: digits }),
      );
      expect(arq.status).toBe(400);
      expect(await faultOf(arq)).toBe(`Invalid input: device_profile_group_id: ${message}`);
    }
  });
});
