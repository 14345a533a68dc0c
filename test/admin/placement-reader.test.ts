// The import's reader (src/admin/placement-reader.ts) against this service as
// the source, through a fetch the test can make misbehave per path: what a
// snapshot holds, and each way a source can fail, with the one line the
// operator gets (the token refused, an HTTP error, not JSON, an unexpected
// answer, unreachable after one retry, too old a microversion, a provider that
// keeps changing, a consumer on a provider the source did not list).
import type { Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AdminError,
  getJson,
  mapLimit,
  negotiateVersion,
  type PlacementEndpoint,
  type ReadProgress,
  readPlacement,
  versionAtLeast,
} from '../../src/admin/placement-reader.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { serve } from './admin-command.js';
import { CLOUD, loadCloud } from './upstream-cloud.js';
import { z } from 'zod';

/** Answers the reader's GET of a path (query included) instead of the source; undefined: the source answers. */
type Override = (path: string, real: () => Promise<Response>) => Promise<Response | undefined> | Response | undefined;

describe('the import reader', () => {
  let source: TestApp;
  let server: Server;
  let base: string;
  const endpoint = (override?: Override, token = 'admin'): PlacementEndpoint => ({
    label: 'source',
    base,
    token,
    fetch: async (input, init) => {
      const path = String(input).slice(base.length);
      const real = () => fetch(input, init);
      return (await override?.(path, real)) ?? real();
    },
  });
  const json = (body: unknown, status = 200) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

  beforeAll(async () => {
    source = await makeTestApp();
    ({ url: base, server } = await serve(source.app));
    await loadCloud(base);
  }, 60_000);

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    source?.close();
  });

  it('reads the whole cloud at the highest microversion both know, reporting progress', async () => {
    const progress: ReadProgress[] = [];
    const snap = await readPlacement(endpoint(), {
      concurrency: 2,
      usages: true,
      extraProjects: ['p-extra'],
      onProgress: (p) => progress.push(p),
    });
    expect(snap.version).toBe('1.39');
    expect(snap.resourceClasses).toEqual(expect.arrayContaining(['VCPU', 'CUSTOM_FPGA_XILINX', 'CUSTOM_LICENSE']));
    expect(snap.traits).toEqual([...snap.traits].sort());
    expect(snap.providers.map((p) => p.uuid).sort()).toEqual(
      [CLOUD.cn1, CLOUD.numa0, CLOUD.numa1, CLOUD.fpga0, CLOUD.cn2, CLOUD.shared].sort(),
    );
    const fpga = snap.providers.find((p) => p.uuid === CLOUD.fpga0)!;
    expect(fpga).toMatchObject({ name: 'cn1-numa0-fpga0', parentUuid: CLOUD.numa0, rootUuid: CLOUD.cn1 });
    const cn1 = snap.providers.find((p) => p.uuid === CLOUD.cn1)!;
    expect(cn1.traits).toEqual(['COMPUTE_VOLUME_MULTI_ATTACH', 'CUSTOM_GOLD', 'HW_CPU_X86_AVX2']);
    expect(cn1.parentUuid).toBeNull();
    expect(cn1.inventories.MEMORY_MB).toEqual({
      total: 65536,
      reserved: 512,
      min_unit: 256,
      max_unit: 32768,
      step_size: 256,
      allocation_ratio: 1.5,
    });
    expect(cn1.allocations).toEqual({ [CLOUD.instance1]: { MEMORY_MB: 4096 } });
    expect(cn1.usages).toEqual({ MEMORY_MB: 4096 });
    const cn2 = snap.providers.find((p) => p.uuid === CLOUD.cn2)!;
    expect(cn2.aggregates).toEqual([CLOUD.agg1, CLOUD.agg2].sort());
    const generation = ((await (await source.call('GET', `/resource_providers/${CLOUD.shared}`)).json()) as { generation: number })
      .generation;
    expect(snap.providers.find((p) => p.uuid === CLOUD.shared)!.generation).toBe(generation);

    expect(snap.consumers.map((c) => c.uuid)).toEqual([CLOUD.instance1, CLOUD.instance2, CLOUD.migration, CLOUD.untyped]);
    expect(snap.consumers[0]).toEqual({
      uuid: CLOUD.instance1,
      projectId: CLOUD.project1,
      userId: CLOUD.user1,
      consumerType: 'INSTANCE',
      generation: 2,
      allocations: { [CLOUD.numa0]: { VCPU: 4 }, [CLOUD.cn1]: { MEMORY_MB: 4096 }, [CLOUD.shared]: { DISK_GB: 40 } },
    });
    expect(snap.consumers[3]!.consumerType).toBeNull(); // shown as "unknown"
    expect(Object.keys(snap.projectUsages!)).toEqual([CLOUD.project1, CLOUD.project2, 'p-extra'].sort());
    expect(snap.projectUsages!['p-extra']).toEqual({});

    const last = (phase: string) => progress.filter((p) => p.phase === phase).at(-1);
    expect(progress[0]).toEqual({ phase: 'providers', done: 0, total: 6 });
    expect(last('providers')).toEqual({ phase: 'providers', done: 6, total: 6 });
    expect(progress.find((p) => p.phase === 'consumers')).toEqual({ phase: 'consumers', done: 0, total: 4 });
    expect(last('consumers')).toEqual({ phase: 'consumers', done: 4, total: 4 });
    expect(progress.filter((p) => !['providers', 'consumers', 'usages'].includes(p.phase))).toEqual([]);
    expect(last('usages')).toEqual({ phase: 'usages', done: 3, total: 3 });
  });

  it("reads a project's usages per class (1.37), which Placement 8.0.0 on PostgreSQL answers (it fails them at 1.38+)", async () => {
    const asked: string[] = [];
    const postgres8: PlacementEndpoint = {
      ...endpoint(),
      fetch: async (input, init) => {
        const path = String(input).slice(base.length);
        const version = new Headers(init?.headers).get('openstack-api-version') ?? '';
        if (path.startsWith('/usages?')) {
          asked.push(version);
          if (versionAtLeast(version.replace('placement ', ''), '1.38')) {
            return json({ errors: [{ status: 500, title: 'Internal Server Error', detail: '(psycopg2.errors.GroupingError)' }] }, 500);
          }
        }
        return fetch(input, init);
      },
    };
    const snap = await readPlacement(postgres8, { usages: true });
    expect(snap.version).not.toBe('1.37');
    expect(new Set(asked)).toEqual(new Set(['placement 1.37']));
    expect(Object.values(snap.projectUsages!).some((u) => Object.keys(u as object).includes('VCPU'))).toBe(true);
  });

  it('reads no usages unless asked, and caps the microversion', async () => {
    const snap = await readPlacement(endpoint(), { maxVersion: '1.30' });
    expect(snap.version).toBe('1.30');
    expect(snap.projectUsages).toBeUndefined();
    expect(snap.providers.every((p) => p.usages === undefined)).toBe(true);
    // Before 1.38 there are no consumer types to read.
    expect(snap.consumers.every((c) => c.consumerType === null)).toBe(true);
  });

  it('reads the same snapshot from a source that lists traits, aggregates and allocations in another order', async () => {
    // --verify compares two Placements' snapshots: each may answer its lists in its own order.
    const reversed: Override = async (path, real) => {
      if (!/^\/(traits|resource_providers\/[^/?]+\/(traits|aggregates|allocations))$/.test(path)) return undefined;
      const body = (await (await real()).json()) as Record<string, unknown>;
      for (const [k, v] of Object.entries(body)) {
        if (Array.isArray(v)) body[k] = [...v].reverse();
        else if (k === 'allocations' && v && typeof v === 'object') body[k] = Object.fromEntries(Object.entries(v).reverse());
      }
      return json(body);
    };
    // With usages, and no progress asked for; the projects read are the consumers' own.
    const straight = await readPlacement(endpoint(), { usages: true });
    const other = await readPlacement(endpoint(reversed), { usages: true });
    expect(Object.keys(straight.projectUsages!).sort()).toEqual([...new Set(straight.consumers.map((c) => c.projectId))].sort());
    expect(straight.traits.length).toBeGreaterThan(1);
    // Lists of more than one on some provider, or the order could not differ.
    expect(straight.providers.some((p) => p.traits.length > 1)).toBe(true);
    expect(straight.providers.some((p) => p.aggregates.length > 1)).toBe(true);
    expect(straight.providers.some((p) => Object.keys(p.allocations).length > 1)).toBe(true);
    expect(other).toEqual(straight);
    expect(other.consumers.map((c) => c.uuid)).toEqual(straight.consumers.map((c) => c.uuid));
  });

  it('refuses a source older than 1.28', async () => {
    const old = endpoint((path) => (path === '/' ? json({ versions: [{ max_version: '1.27', min_version: '1.0' }] }) : undefined));
    await expect(negotiateVersion(old)).rejects.toThrow(
      new AdminError('the source speaks Placement up to 1.27; reading it needs at least 1.28'),
    );
    const exact = endpoint((path) => (path === '/' ? json({ versions: [{ max_version: '1.28', min_version: '1.0' }] }) : undefined));
    expect(await negotiateVersion(exact)).toBe('1.28');
    expect(await negotiateVersion(endpoint(), '1.29')).toBe('1.29');
    expect(versionAtLeast('1.10', '1.9')).toBe(true);
    expect(versionAtLeast('1.9', '1.10')).toBe(false);
    expect(versionAtLeast('2.0', '1.39')).toBe(true);
  });

  it('names each way an answer can fail, in one line', async () => {
    const Any = z.unknown();
    const fail = (override: Override) =>
      getJson(endpoint(override), '/traits', Any).then(
        () => 'no error',
        (e: Error) => e,
      );
    const refused = await getJson(endpoint(undefined, 'not-an-admin'), '/resource_providers', Any).catch((e: Error) => e);
    expect(refused).toBeInstanceOf(AdminError);
    expect(String(refused)).toMatch(/^Error: the source refused the token \(HTTP 403 on GET \/resource_providers\): \S/);
    expect(await fail(() => json({ errors: [{ detail: 'who\n  are you' }] }, 401))).toEqual(
      new AdminError('the source refused the token (HTTP 401 on GET /traits): who are you'),
    );
    expect(await fail(() => new Response('boom  \n later', { status: 500 }))).toEqual(
      new AdminError('the source answered HTTP 500 to GET /traits: boom later'),
    );
    expect(await fail(() => new Response('', { status: 502 }))).toEqual(new AdminError('the source answered HTTP 502 to GET /traits'));
    // One line, trimmed, and at most 120 characters of what the source said.
    expect(await fail(() => new Response('\n  spaced out \n', { status: 500 }))).toEqual(
      new AdminError('the source answered HTTP 500 to GET /traits: spaced out'),
    );
    expect(await fail(() => new Response('y'.repeat(300), { status: 500 }))).toEqual(
      new AdminError(`the source answered HTTP 500 to GET /traits: ${'y'.repeat(120)}`),
    );
    expect(await fail(() => new Response(`<p>${'x'.repeat(300)}`))).toEqual(
      new AdminError(`the source answered GET /traits with something that is not JSON: <p>${'x'.repeat(117)}`),
    );
    // An error envelope's first error speaks for it.
    expect(await fail(() => json({ errors: [{ detail: 'first' }, { detail: 'second' }] }, 409))).toEqual(
      new AdminError('the source answered HTTP 409 to GET /traits: first'),
    );
    await expect(negotiateVersion(endpoint((path) => (path === '/' ? json({ versions: [] }) : undefined)))).rejects.toThrow(
      /^the source answered GET \/ unexpectedly: versions: /,
    );
    expect(await fail(() => new Response('<html>\n<b>hi</b>'))).toEqual(
      new AdminError('the source answered GET /traits with something that is not JSON: <html> <b>hi</b>'),
    );
    const Traits = z.object({ traits: z.array(z.string()) });
    const wrong = await getJson(
      endpoint(() => json({ traits: [1] })),
      '/traits',
      Traits,
    ).catch((e: Error) => e);
    expect(wrong).toEqual(
      new AdminError('the source answered GET /traits unexpectedly: traits.0: Invalid input: expected string, received number'),
    );
    const none = await getJson(
      endpoint(() => json({})),
      '/traits',
      Traits,
    ).catch((e: Error) => e);
    expect(String(none)).toMatch(/^Error: the source answered GET \/traits unexpectedly: traits: /);
    // The version header is sent when asked, and the token always.
    const seen: Headers[] = [];
    const ep = endpoint();
    const watched: typeof fetch = (input, init) => {
      seen.push(new Headers(init?.headers));
      return ep.fetch(input, init);
    };
    await getJson({ ...ep, fetch: watched }, '/traits', Any, '1.33');
    expect(seen[0]!.get('openstack-api-version')).toBe('placement 1.33');
    expect(seen[0]!.get('x-auth-token')).toBe('admin');
    expect(seen[0]!.get('accept')).toBe('application/json');
  });

  it('sends a GET again once when the connection fails, and names the cause the second time', async () => {
    let attempts = 0;
    const flaky = endpoint((_, real) => (++attempts === 1 ? Promise.reject(new TypeError('fetch failed')) : real()));
    expect(await getJson(flaky, '/traits', z.object({ traits: z.array(z.string()) }), '1.39')).toMatchObject({ traits: expect.any(Array) });
    expect(attempts).toBe(2);
    attempts = 0;
    const down = endpoint(() => {
      attempts += 1;
      return Promise.reject(new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') }));
    });
    await expect(getJson(down, '/traits', z.unknown())).rejects.toThrow(
      new AdminError(`cannot reach the source at ${base}: fetch failed: connect ECONNREFUSED 127.0.0.1:1`),
    );
    expect(attempts).toBe(2);
    const causeless = endpoint(() => Promise.reject(new TypeError('fetch failed')));
    await expect(getJson(causeless, '/traits', z.unknown())).rejects.toThrow(
      new AdminError(`cannot reach the source at ${base}: fetch failed`),
    );
    const plain = endpoint(() => Promise.reject('socket hang up'));
    await expect(getJson(plain, '/traits', z.unknown())).rejects.toThrow(
      new AdminError(`cannot reach the source at ${base}: socket hang up`),
    );
  });

  it('reads a provider again while its answers disagree on its generation, and gives up after three reads', async () => {
    const path = `/resource_providers/${CLOUD.cn2}/traits`;
    let reads = 0;
    const changing =
      (times: number): Override =>
      async (p, real) => {
        if (p !== path) return undefined;
        reads += 1;
        if (reads > times) return undefined;
        const body = (await (await real()).json()) as { resource_provider_generation: number };
        return json({ ...body, resource_provider_generation: body.resource_provider_generation + 1 });
      };
    const snap = await readPlacement(endpoint(changing(2)));
    expect(reads).toBe(3);
    expect(snap.providers.find((p) => p.uuid === CLOUD.cn2)!.traits).toEqual([]);
    reads = 0;
    await expect(readPlacement(endpoint(changing(3)))).rejects.toThrow(
      new AdminError(`provider ${CLOUD.cn2} kept changing on the source while it was read; stop its writers and run again`),
    );
    expect(reads).toBe(3);
  });

  it('refuses a consumer on a provider the source did not list, or without its generation; skips one deleted meanwhile', async () => {
    const unlisted = endpoint(async (p, real) => {
      if (p !== `/allocations/${CLOUD.migration}`) return undefined;
      const body = (await (await real()).json()) as { allocations: Record<string, unknown> };
      return json({ ...body, allocations: { ...body.allocations, 'd0000000-0000-4000-8000-000000000000': { resources: { VCPU: 1 } } } });
    });
    await expect(readPlacement(unlisted)).rejects.toThrow(
      new AdminError(
        `consumer ${CLOUD.migration} holds allocations on provider d0000000-0000-4000-8000-000000000000, which the source did not list; stop its writers and run again`,
      ),
    );
    for (const missing of ['project_id', 'user_id', 'consumer_generation']) {
      const partial = endpoint(async (p, real) => {
        if (p !== `/allocations/${CLOUD.migration}`) return undefined;
        const body = (await (await real()).json()) as Record<string, unknown>;
        delete body[missing];
        return json(body);
      });
      await expect(readPlacement(partial), missing).rejects.toThrow(
        new AdminError(`the source answered GET /allocations/${CLOUD.migration} without project_id, user_id or consumer_generation`),
      );
    }
    const deleted = endpoint((p) => (p === `/allocations/${CLOUD.migration}` ? json({ allocations: {} }) : undefined));
    const snap = await readPlacement(deleted);
    expect(snap.consumers.map((c) => c.uuid)).toEqual([CLOUD.instance1, CLOUD.instance2, CLOUD.untyped]);
  });
});

describe('mapLimit', () => {
  it('runs at most `limit` at a time, keeps the order, and rejects with the first failure once the others finish', async () => {
    let running = 0;
    let most = 0;
    const results = await mapLimit([5, 1, 4, 2, 3], 2, async (n, i) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, n));
      running -= 1;
      return n * 10 + i;
    });
    expect(results).toEqual([50, 11, 42, 23, 34]);
    expect(most).toBe(2);
    expect(await mapLimit([], 4, async () => 1)).toEqual([]);
    expect(await mapLimit([1, 2], 0, async (n) => n)).toEqual([1, 2]);

    const started: number[] = [];
    const failed = await mapLimit([1, 2, 3, 4], 1, async (n) => {
      started.push(n);
      if (n >= 2) throw new Error(`item ${n}`);
      return n;
    }).catch((e: Error) => e.message);
    expect(failed).toBe('item 2');
    expect(started).toEqual([1, 2]); // nothing new starts after a failure
  });
});
