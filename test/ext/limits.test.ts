// Project limits enforced inside the claim (docs/limits.md), with static limits
// (PLACEMENT_LIMITS=static) on the embedded file: what every claim path
// refuses and grants, what counts, the relief of a lowered limit, the cost in
// round trips, the answers of /ext/limits and the metric. Keystone as the
// source, and racing instances on a libSQL server: limits-keystone.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { KeystoneLimitsReader } from '../../src/ext/limits/http/keystone-limits.js';
import { LimitsMisconfigured } from '../../src/ext/limits/keystone.js';
import { LIMITS as LIMITS_STATE, limitsConfigOf, limitsSourceOf, ProjectLimits } from '../../src/ext/limits/service.js';
import { countBatches } from '../write-model/count-batches.js';
import { errorOf, makeTestApp, type TestApp } from '../helpers/test-app.js';

const P = 'aaaaaaaa-0000-4000-8000-00000000000a';
const Q = 'bbbbbbbb-0000-4000-8000-00000000000b';
const USER = 'cccccccc-0000-4000-8000-00000000000c';
const LIMITS = JSON.stringify({ registered: { 'class:VCPU': 10, 'class:MEMORY_MB': 4096 }, projects: { [Q]: { 'class:VCPU': 3 } } });

let t: TestApp;
afterEach(() => t?.close());

async function limitedApp(json = LIMITS, env: Record<string, string> = {}): Promise<TestApp> {
  t = await makeTestApp({ PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: json, ...env });
  await t.deps.extensions.state(LIMITS_STATE)!.start();
  return t;
}

async function host(vcpu = 64, name = crypto.randomUUID()): Promise<string> {
  const uuid = crypto.randomUUID();
  expect((await t.call('POST', '/resource_providers', { body: { name, uuid } })).status).toBe(200);
  const inventories = { VCPU: { total: vcpu }, MEMORY_MB: { total: 65536 }, DISK_GB: { total: 1000 } };
  expect(
    (await t.call('PUT', `/resource_providers/${uuid}/inventories`, { body: { resource_provider_generation: 0, inventories } })).status,
  ).toBe(200);
  return uuid;
}

const claimBody = (
  rp: string,
  resources: Record<string, number>,
  opts: { project?: string; type?: string; generation?: number | null } = {},
) => ({
  allocations: { [rp]: { resources } },
  project_id: opts.project ?? P,
  user_id: USER,
  consumer_generation: opts.generation === undefined ? null : opts.generation,
  consumer_type: opts.type ?? 'INSTANCE',
});

const put = (consumer: string, body: unknown, version?: string) => t.call('PUT', `/allocations/${consumer}`, { body, version });

async function report(project: string) {
  const res = await t.call('GET', `/ext/limits?project_id=${project}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { limits: Record<string, { limit: number; usage: number; remaining: number }> };
}

/** Keystone's answer to the service user's system-scoped sign-in: `token`, expiring at `expiresMs`. */
const systemToken = (token: string, expiresMs: number): Response =>
  Response.json(
    {
      token: {
        expires_at: new Date(expiresMs).toISOString(),
        user: { id: 'placement-id', domain: { id: 'default' } },
        system: { all: true },
        roles: [{ name: 'reader' }],
      },
    },
    { status: 201, headers: { 'x-subject-token': token } },
  );

describe('PLACEMENT_LIMITS=static', () => {
  it('grants claims up to the registered limit and refuses the one that would cross it, in the error envelope', async () => {
    await limitedApp();
    const rp = await host();
    for (let i = 0; i < 5; i++) expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 2 }))).status).toBe(204);
    const refused = await put(crypto.randomUUID(), claimBody(rp, { VCPU: 1 }));
    expect(refused.status).toBe(409);
    const error = await errorOf(refused);
    expect(error.code).toBe('placement.ext.limit_exceeded');
    expect(error.detail).toContain(`project '${P}'`);
    expect(error.detail).toContain("'VCPU'");
    expect(error.detail).toContain('(limit 10, usage 10, requested 1)');
    expect((await report(P)).limits.VCPU).toEqual({ limit: 10, usage: 10, remaining: 0 });
    // Another class of the same project, and another project, are unaffected.
    expect((await put(crypto.randomUUID(), claimBody(rp, { DISK_GB: 50 }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 3 }, { project: Q }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 1 }, { project: Q }))).status).toBe(409);
    expect((await report(Q)).limits.VCPU).toEqual({ limit: 3, usage: 3, remaining: 0 });
    // The refusals are counted by class.
    const metrics = await (await t.call('GET', '/metrics')).text();
    expect(metrics).toMatch(/placement_limit_refusals_total\{resource_class="VCPU"\} [2-9]/);
  });

  it('counts INSTANCE and untyped consumers, not MIGRATION ones (a resize counts once)', async () => {
    await limitedApp();
    const rp = await host();
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 6 }))).status).toBe(204);
    // The old flavor held by the migration consumer does not count.
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 6 }, { type: 'MIGRATION' }))).status).toBe(204);
    // Untyped (before 1.38): counted.
    const untyped = { allocations: { [rp]: { resources: { VCPU: 4 } } }, project_id: P, user_id: USER, consumer_generation: null };
    expect((await put(crypto.randomUUID(), untyped, '1.37')).status).toBe(204);
    expect((await put(crypto.randomUUID(), untyped, '1.37')).status).toBe(409);
    expect((await report(P)).limits.VCPU!.usage).toBe(10);
  });

  it('counts what the settings say: PLACEMENT_LIMITS_CONSUMER_TYPES and PLACEMENT_LIMITS_COUNT_UNTYPED', async () => {
    await limitedApp(LIMITS, { PLACEMENT_LIMITS_CONSUMER_TYPES: 'INSTANCE,MIGRATION', PLACEMENT_LIMITS_COUNT_UNTYPED: 'false' });
    const rp = await host();
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 6 }, { type: 'MIGRATION' }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 5 }))).status).toBe(409);
    const untyped = { allocations: { [rp]: { resources: { VCPU: 20 } } }, project_id: P, user_id: USER, consumer_generation: null };
    expect((await put(crypto.randomUUID(), untyped, '1.37')).status).toBe(204);
  });

  it('a limit lowered below usage: what is held stays, shrinking and moving pass, growth is refused', async () => {
    await limitedApp(JSON.stringify({ registered: { 'class:VCPU': 10 } }));
    const [a, b] = [await host(), await host()];
    const vm = crypto.randomUUID();
    expect((await put(vm, claimBody(a, { VCPU: 8 }))).status).toBe(204);
    // The operator lowers the limit to 4 (a new configuration, read at the next start).
    const lowered = await buildNodeDeps(
      loadConfig({
        PLACEMENT_DB_URL: t.dbUrl,
        PLACEMENT_LIMITS: 'static',
        PLACEMENT_LIMITS_JSON: JSON.stringify({ registered: { 'class:VCPU': 4 } }),
      }),
      { debug() {}, info() {}, warn() {}, error() {} },
    );
    await lowered.extensions.state(LIMITS_STATE)!.refresh();
    lowered.store.close();
    expect((await report(P)).limits.VCPU).toEqual({ limit: 4, usage: 8, remaining: -4 });
    // A migration consumer claimed over the limit: not counted, so granted, in one write batch.
    const counts = countBatches(t.deps.store);
    expect((await put(crypto.randomUUID(), claimBody(b, { VCPU: 1 }, { type: 'MIGRATION' }))).status).toBe(204);
    expect(counts).toEqual({ reads: 0, writes: 1 });
    // Moving to another host, same size: accepted.
    expect((await put(vm, claimBody(b, { VCPU: 8 }, { generation: 1 }))).status).toBe(204);
    // Shrinking, still over: accepted.
    expect((await put(vm, claimBody(b, { VCPU: 6 }, { generation: 2 }))).status).toBe(204);
    // Growing: refused, whatever the host.
    const grow = await put(vm, claimBody(a, { VCPU: 7 }, { generation: 3 }));
    expect(grow.status).toBe(409);
    expect((await errorOf(grow)).detail).toContain('(limit 4, usage 6, requested 1)');
    // A new claim of the class: refused; of another class: granted.
    expect((await put(crypto.randomUUID(), claimBody(a, { VCPU: 1 }))).status).toBe(409);
    expect((await put(crypto.randomUUID(), claimBody(a, { MEMORY_MB: 1024 }))).status).toBe(204);
    const listed = (await (await t.call('GET', '/ext/limits')).json()) as { projects: { project_id: string; limits: object }[] };
    expect(listed.projects).toEqual([{ project_id: P, limits: { VCPU: { limit: 4, usage: 6, remaining: -2 } } }]);
  });

  it('POST /allocations and the reshaper are checked alike', async () => {
    await limitedApp();
    const rp = await host();
    const [c1, c2] = [crypto.randomUUID(), crypto.randomUUID()];
    const both = (vcpu: number) => ({
      [c1]: {
        allocations: { [rp]: { resources: { VCPU: vcpu } } },
        project_id: P,
        user_id: USER,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
      [c2]: {
        allocations: { [rp]: { resources: { VCPU: vcpu } } },
        project_id: P,
        user_id: USER,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    const over = await t.call('POST', '/allocations', { body: both(6) });
    expect(over.status).toBe(409);
    expect((await errorOf(over)).code).toBe('placement.ext.limit_exceeded');
    expect((await t.call('POST', '/allocations', { body: both(5) })).status).toBe(204);
    // The reshaper: moving c1's 5 VCPU to a child provider is not growth; adding 1 more is.
    const generation = ((await (await t.call('GET', `/resource_providers/${rp}`)).json()) as { generation: number }).generation;
    const reshape = (vcpu: number) =>
      t.call('POST', '/reshaper', {
        body: {
          inventories: {
            [rp]: {
              resource_provider_generation: generation,
              inventories: { VCPU: { total: 64 }, MEMORY_MB: { total: 65536 }, DISK_GB: { total: 1000 } },
            },
          },
          allocations: {
            [c1]: {
              allocations: { [rp]: { resources: { VCPU: vcpu } } },
              project_id: P,
              user_id: USER,
              consumer_generation: 1,
              consumer_type: 'INSTANCE',
            },
          },
        },
      });
    const grown = await reshape(6);
    expect(grown.status).toBe(409);
    expect((await errorOf(grown)).code).toBe('placement.ext.limit_exceeded');
    expect((await reshape(4)).status).toBe(204);
  });

  it('an existing consumer resized to exactly its project limit is granted, one more is refused (the ordinary path)', async () => {
    await limitedApp();
    const [a, b] = [await host(), await host()];
    const [vm, other] = [crypto.randomUUID(), crypto.randomUUID()];
    expect((await put(vm, claimBody(a, { VCPU: 4 }))).status).toBe(204);
    expect((await put(other, claimBody(a, { VCPU: 2 }))).status).toBe(204);
    // A resize is a claim of a consumer that holds allocations: decided after a read, never the one-batch claim.
    const counts = countBatches(t.deps.store);
    expect((await put(vm, claimBody(b, { VCPU: 8 }, { generation: 1 }))).status).toBe(204);
    expect(counts.reads).toBeGreaterThan(0);
    expect((await report(P)).limits.VCPU).toEqual({ limit: 10, usage: 10, remaining: 0 });
    const past = await put(vm, claimBody(b, { VCPU: 9 }, { generation: 2 }));
    expect(past.status).toBe(409);
    expect((await errorOf(past)).detail).toContain('(limit 10, usage 10, requested 1)');
    // Both consumers replaced at once (POST /allocations): to exactly the limit, then one past it.
    const replace = (vmVcpu: number, otherVcpu: number, generations: [number, number]) =>
      t.call('POST', '/allocations', {
        body: {
          [vm]: claimBody(a, { VCPU: vmVcpu }, { generation: generations[0] }),
          [other]: claimBody(b, { VCPU: otherVcpu }, { generation: generations[1] }),
        },
      });
    expect((await replace(3, 7, [2, 1])).status).toBe(204);
    expect((await report(P)).limits.VCPU).toEqual({ limit: 10, usage: 10, remaining: 0 });
    const swapPast = await replace(4, 7, [3, 2]);
    expect(swapPast.status).toBe(409);
    expect((await errorOf(swapPast)).detail).toContain('(limit 10, usage 10, requested 1)');
    // The project limit of Q (3), overriding the registered 10: exactly 3 by a resize, then 4 refused.
    const q = crypto.randomUUID();
    expect((await put(q, claimBody(a, { VCPU: 1 }, { project: Q }))).status).toBe(204);
    expect((await put(q, claimBody(a, { VCPU: 3 }, { project: Q, generation: 1 }))).status).toBe(204);
    expect((await put(q, claimBody(a, { VCPU: 4 }, { project: Q, generation: 2 }))).status).toBe(409);
  });

  it('a claim of an unlimited class beside a limited one at its limit is refused, new consumer or resize', async () => {
    // VCPU limited, DISK_GB not: the check goes on past a class without a limit.
    await limitedApp(JSON.stringify({ registered: { 'class:VCPU': 4 } }));
    const rp = await host();
    const vm = crypto.randomUUID();
    expect((await put(vm, claimBody(rp, { DISK_GB: 10, VCPU: 4 }))).status).toBe(204);
    const fresh = await put(crypto.randomUUID(), claimBody(rp, { DISK_GB: 10, VCPU: 1 }));
    expect(fresh.status).toBe(409);
    expect((await errorOf(fresh)).detail).toContain("'VCPU'");
    const resized = await put(vm, claimBody(rp, { DISK_GB: 20, VCPU: 5 }, { generation: 1 }));
    expect(resized.status).toBe(409);
    expect((await errorOf(resized)).detail).toContain('(limit 4, usage 4, requested 1)');
    // The unlimited class alone still grows.
    expect((await put(vm, claimBody(rp, { DISK_GB: 500, VCPU: 4 }, { generation: 1 }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { DISK_GB: 400 }))).status).toBe(204);
    expect((await report(P)).limits).toEqual({ VCPU: { limit: 4, usage: 4, remaining: 0 } });
  });

  it("GET /ext/limits lists the projects at or over a limit (a limit of 0 without usage too), in project order; one project's classes in name order", async () => {
    const zero = '00000000-0000-4000-8000-000000000000';
    await limitedApp(
      JSON.stringify({
        registered: { 'class:VCPU': 4, 'class:MEMORY_MB': 1024 },
        projects: { [Q]: { 'class:VCPU': 2 }, [zero]: { 'class:DISK_GB': 0 }, [USER]: { 'class:VCPU': 10 } },
      }),
    );
    const rp = await host();
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 2 }, { project: Q }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 4, MEMORY_MB: 1024 }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 3 }, { project: USER }))).status).toBe(204);
    const listed = (await (await t.call('GET', '/ext/limits')).json()) as { projects: { project_id: string; limits: object }[] };
    expect(listed.projects).toEqual([
      { project_id: zero, limits: { DISK_GB: { limit: 0, usage: 0, remaining: 0 } } },
      { project_id: P, limits: { MEMORY_MB: { limit: 1024, usage: 1024, remaining: 0 }, VCPU: { limit: 4, usage: 4, remaining: 0 } } },
      { project_id: Q, limits: { VCPU: { limit: 2, usage: 2, remaining: 0 } } },
    ]);
    expect(listed.projects.map((p) => p.project_id)).toEqual([zero, P, Q]);
    expect(Object.keys((await report(P)).limits)).toEqual(['MEMORY_MB', 'VCPU']);
  });

  it('a MIGRATION consumer resized while its project is at the limit is granted: it does not count', async () => {
    await limitedApp(JSON.stringify({ registered: { 'class:VCPU': 4 } }));
    const rp = await host();
    const migration = crypto.randomUUID();
    expect((await put(migration, claimBody(rp, { VCPU: 2 }, { type: 'MIGRATION' }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 4 }))).status).toBe(204);
    expect((await put(migration, claimBody(rp, { VCPU: 6 }, { type: 'MIGRATION', generation: 1 }))).status).toBe(204);
    expect((await report(P)).limits.VCPU).toEqual({ limit: 4, usage: 4, remaining: 0 });
  });

  it('a granted claim of a new consumer is still one write batch; a refused one is answered after one read', async () => {
    await limitedApp();
    const rp = await host();
    let counts = countBatches(t.deps.store);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 10 }))).status).toBe(204);
    expect(counts).toEqual({ reads: 0, writes: 1 });
    counts = countBatches(t.deps.store);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 1 }))).status).toBe(409);
    expect(counts).toEqual({ reads: 1, writes: 1 });
  });

  it('GET /ext/limits?project_id answers every limited class with its limit, usage and what remains', async () => {
    await limitedApp();
    const rp = await host();
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 3, MEMORY_MB: 1024 }, { project: Q }))).status).toBe(204);
    expect(await report(Q)).toEqual({
      project_id: Q,
      limits: { MEMORY_MB: { limit: 4096, usage: 1024, remaining: 3072 }, VCPU: { limit: 3, usage: 3, remaining: 0 } },
    });
    const refreshed = await t.call('POST', '/ext/limits/refresh');
    expect(refreshed.status).toBe(200);
    expect(await refreshed.json()).toMatchObject({
      source: 'PLACEMENT_LIMITS_JSON',
      registered: { VCPU: 10, MEMORY_MB: 4096 },
      projects: 1,
    });
    const bad = await t.call('GET', '/ext/limits?project=x');
    expect(bad.status).toBe(400);
  });
});

describe('where the limits come from', () => {
  const KEYSTONE = 'http://keystone.invalid:5000/v3';
  /** A Keystone serving a registered class:VCPU limit of `vcpu` to the service user, or down (every call fails as fetch does). */
  function keystoneLimits(state: { up: boolean; vcpu: number }): typeof fetch {
    return async (input) => {
      if (!state.up) throw new TypeError('fetch failed');
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.pathname === '/v3/auth/tokens') {
        return systemToken('system-token', Date.now() + 3_600_000);
      }
      if (url.pathname === '/v3/services') return Response.json({ services: [{ id: 'nova-id', name: 'nova', type: 'compute' }] });
      if (url.pathname === '/v3/registered_limits') {
        return Response.json({ registered_limits: [{ resource_name: 'class:VCPU', default_limit: state.vcpu, region_id: null }] });
      }
      if (url.pathname === '/v3/limits') return Response.json({ limits: [] });
      return new Response(null, { status: 404 });
    };
  }

  const keystoneConfig = (dbUrl: string) =>
    loadConfig({
      PLACEMENT_DB_URL: dbUrl,
      PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
      PLACEMENT_LIMITS: 'keystone',
      PLACEMENT_KEYSTONE_AUTH_URL: KEYSTONE,
      PLACEMENT_KEYSTONE_USERNAME: 'placement',
      PLACEMENT_KEYSTONE_PASSWORD: 'pw',
    });

  const admin = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest' };

  it('a switch from static to an unreachable Keystone is refused at start; nothing names Keystone as the source of the static limits', async () => {
    await limitedApp(JSON.stringify({ registered: { 'class:VCPU': 2 } }));
    const rp = await host();
    const keystone = { up: false, vcpu: 5 };
    const deps = makeDeps(
      t.deps.store,
      keystoneConfig(t.dbUrl),
      { debug() {}, info() {}, warn() {}, error() {} },
      {
        keystoneFetch: keystoneLimits(keystone),
      },
    );
    const switched = createApp(deps);

    await expect(deps.extensions.state(LIMITS_STATE)!.start()).rejects.toThrow(
      /^PLACEMENT_KEYSTONE_AUTH_URL: PLACEMENT_LIMITS=keystone and the limits in this database were read from PLACEMENT_LIMITS_JSON, not from it: Keystone at http:\/\/keystone.invalid:5000\/v3, service nova did not answer/,
    );
    // Every probe of the switched instance says whose limits are in force, and is not ready.
    for (let probe = 0; probe < 2; probe++) {
      const ready = await switched.request('/readyz');
      expect(ready.status).toBe(503);
      const reason = ((await ready.json()) as { reason: string }).reason;
      expect(reason).toContain('the project limits in force were read from PLACEMENT_LIMITS_JSON, not from Keystone at');
    }
    const listed = (await (await switched.request('/ext/limits', { headers: admin })).json()) as { source: string; read_at: string };
    expect(listed.source).toBe('PLACEMENT_LIMITS_JSON');
    // What a Worker isolate asks before it starts: no limits read from its own source.
    expect(await deps.extensions.state(LIMITS_STATE)!.readAt()).toBeNull();
    expect((await switched.request('/ext/limits/refresh', { method: 'POST', headers: admin })).status).toBe(503);

    // Keystone answers: the start goes through, its limits are in force and named as Keystone's.
    keystone.up = true;
    await deps.extensions.state(LIMITS_STATE)!.start();
    expect(await deps.extensions.state(LIMITS_STATE)!.readAt()).not.toBeNull();
    // Keystone gone again: a start on limits Keystone gave goes through, and they stay in force.
    keystone.up = false;
    await deps.extensions.state(LIMITS_STATE)!.start();
    keystone.up = true;
    expect((await switched.request('/readyz')).status).toBe(200);
    const now = (await (await switched.request('/ext/limits', { headers: admin })).json()) as { source: string };
    expect(now.source).toBe('Keystone at http://keystone.invalid:5000/v3, service nova');
    for (let i = 0; i < 5; i++) expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 1 }))).status).toBe(204);
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 1 }))).status).toBe(409);

    // The static instance reads its own limits again: they replace Keystone's, though they did not change since it last wrote them.
    await t.deps.extensions.state(LIMITS_STATE)!.refresh();
    expect(((await (await t.call('GET', '/ext/limits')).json()) as { source: string }).source).toBe('PLACEMENT_LIMITS_JSON');
    expect((await report(P)).limits.VCPU).toEqual({ limit: 2, usage: 5, remaining: -3 });
    const ready = await switched.request('/readyz');
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reason: string }).reason).toContain('read from PLACEMENT_LIMITS_JSON, not from Keystone at');
    // ... and Keystone's, unchanged since, replace them again at its next read.
    await deps.extensions.state(LIMITS_STATE)!.refresh();
    expect((await report(P)).limits.VCPU).toEqual({ limit: 5, usage: 5, remaining: 0 });
    expect((await switched.request('/readyz')).status).toBe(200);
  });

  it("the system token is held as the service's other Keystone tokens are: used for half a short life, renewed once after a refusal", async () => {
    const clock = { now: Date.now() };
    const signIns: string[] = [];
    const refuse = new Set<string>();
    const keystone: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.pathname === '/v3/auth/tokens') {
        const scope = (JSON.parse(String(init?.body)) as { auth: { scope: object } }).auth.scope;
        expect(scope).toEqual({ system: { all: true } });
        const token = `system-${signIns.length + 1}`;
        signIns.push(token);
        return systemToken(token, clock.now + 30_000);
      }
      const token = new Headers(init?.headers).get('x-auth-token') ?? '';
      if (refuse.delete(token)) return new Response(null, { status: 401 });
      if (url.pathname === '/v3/services') return Response.json({ services: [{ id: 'nova-id', name: 'nova', type: 'compute' }] });
      if (url.pathname === '/v3/registered_limits') return Response.json({ registered_limits: [] });
      if (url.pathname === '/v3/limits') return Response.json({ limits: [] });
      return new Response(null, { status: 404 });
    };
    const reader = new KeystoneLimitsReader({
      authUrl: KEYSTONE,
      username: 'placement',
      password: 'pw',
      userDomainName: 'Default',
      service: 'nova',
      timeoutMs: 1000,
      fetcher: keystone,
      now: () => clock.now,
    });
    await reader.read();
    clock.now += 14_000; // 16 s of 30 left: still used
    await reader.read();
    expect(signIns).toHaveLength(1);
    clock.now += 2_000; // 14 s left, under half its life: renewed before it expires
    await reader.read();
    expect(signIns).toHaveLength(2);
    // Keystone refuses the held token (revoked): one new sign-in, and the read goes through.
    refuse.add('system-2');
    await reader.read();
    expect(signIns).toHaveLength(3);
  });

  /** A Keystone serving `services` and the limits given, recording each query; `answers` overrides a path's status. */
  function limitsKeystone(options: {
    services?: { id: string; name: string; type: string }[];
    registered?: { resource_name: string; default_limit: number; region_id?: string | null }[];
    limits?: { resource_name: string; resource_limit: number; project_id?: string | null }[];
    signIn?: number;
    answers?: Record<string, number[]>;
  }) {
    const asked: string[] = [];
    const fetcher: typeof fetch = async (input) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      asked.push(`${url.pathname}${url.search}`);
      if (url.pathname === '/v3/auth/tokens') {
        if (options.signIn) return new Response(null, { status: options.signIn });
        const expires_at = new Date(Date.now() + 3_600_000).toISOString();
        return Response.json(
          { token: { expires_at, user: { id: 'placement-id', domain: { id: 'default' } }, system: { all: true }, roles: [] } },
          { status: 201, headers: { 'x-subject-token': `system-${asked.length}` } },
        );
      }
      const status = options.answers?.[url.pathname]?.shift();
      if (status) return new Response(null, { status });
      if (url.pathname === '/v3/services')
        return Response.json({ services: options.services ?? [{ id: 'nova-id', name: 'nova', type: 'compute' }] });
      if (url.pathname === '/v3/registered_limits') return Response.json({ registered_limits: options.registered ?? [] });
      if (url.pathname === '/v3/limits') return Response.json({ limits: options.limits ?? [] });
      return new Response(null, { status: 404 });
    };
    return { asked, fetcher };
  }

  const reader = (fetcher: typeof fetch, service = 'nova', region?: string) =>
    new KeystoneLimitsReader({
      authUrl: `${KEYSTONE}/`,
      username: 'placement',
      password: 'pw',
      userDomainName: 'Default',
      service,
      region,
      timeoutMs: 1000,
      fetcher,
    });

  const plain = (limits: { registered: ReadonlyMap<string, number>; projects: ReadonlyMap<string, ReadonlyMap<string, number>> }) => ({
    registered: Object.fromEntries(limits.registered),
    projects: Object.fromEntries([...limits.projects].map(([p, classes]) => [p, Object.fromEntries(classes)])),
  });

  it("reads the service's limits (by name, type or id; in the region named), project limits beside registered ones, only class: names of projects", async () => {
    const keystone = limitsKeystone({
      services: [
        { id: 'glance-id', name: 'glance', type: 'image' },
        { id: 'nova-id', name: 'nova', type: 'compute' },
      ],
      registered: [
        { resource_name: 'class:VCPU', default_limit: 10 },
        { resource_name: 'servers', default_limit: 5 },
        { resource_name: 'class:not_a_class', default_limit: 1 },
      ],
      limits: [
        { resource_name: 'class:VCPU', resource_limit: 4, project_id: P },
        { resource_name: 'class:MEMORY_MB', resource_limit: 512, project_id: P },
        { resource_name: 'class:VCPU', resource_limit: 3, project_id: Q },
        { resource_name: 'class:VCPU', resource_limit: 1, project_id: null },
        { resource_name: 'servers', resource_limit: 2, project_id: P },
      ],
    });
    const expected = { registered: { VCPU: 10 }, projects: { [P]: { VCPU: 4, MEMORY_MB: 512 }, [Q]: { VCPU: 3 } } };
    const byName = reader(keystone.fetcher, 'nova', 'RegionOne');
    expect(plain(await byName.read())).toEqual(expected);
    expect(plain(await byName.read())).toEqual(expected);
    // The service is resolved once; the region, when named, narrows both lists.
    expect(keystone.asked.filter((a) => a.startsWith('/v3/services'))).toHaveLength(1);
    expect(keystone.asked).toContain('/v3/registered_limits?service_id=nova-id&region_id=RegionOne');
    expect(keystone.asked).toContain('/v3/limits?service_id=nova-id&region_id=RegionOne');
    for (const service of ['compute', 'nova-id']) {
      const other = limitsKeystone({
        services: [
          { id: 'nova-id', name: 'nova', type: 'compute' },
          { id: 'x', name: 'x', type: 'x' },
        ],
      });
      await reader(other.fetcher, service).read();
      expect(other.asked).toContain('/v3/registered_limits?service_id=nova-id');
    }
    // A service whose id is another's name: the id wins.
    const ids = limitsKeystone({
      services: [
        { id: 'a', name: 'nova', type: 'compute' },
        { id: 'nova', name: 'other', type: 'other' },
      ],
    });
    await reader(ids.fetcher).read();
    expect(ids.asked).toContain('/v3/registered_limits?service_id=nova');
  });

  it('refuses limits that cannot be read as configured, naming the setting: no such service, two of that name, a limit repeated across regions', async () => {
    const refusal = async (keystone: ReturnType<typeof limitsKeystone>, service = 'nova') => {
      const err = await reader(keystone.fetcher, service)
        .read()
        .then(
          () => undefined,
          (e: unknown) => e as LimitsMisconfigured,
        );
      expect(err).toBeInstanceOf(LimitsMisconfigured);
      return `${err!.setting}: ${err!.message}`;
    };
    expect(await refusal(limitsKeystone({}), 'cinder')).toBe(
      'PLACEMENT_LIMITS_SERVICE: Keystone at http://keystone.invalid:5000/v3 has no services named "cinder" (by id, name or type): nova (compute)',
    );
    const two = limitsKeystone({
      services: [
        { id: 'a', name: 'nova', type: 'compute' },
        { id: 'b', name: 'nova', type: 'compute2' },
      ],
    });
    expect(await refusal(two)).toBe(
      'PLACEMENT_LIMITS_SERVICE: Keystone at http://keystone.invalid:5000/v3 has 2 services named "nova" (by id, name or type): nova (compute), nova (compute2)',
    );
    expect(await refusal(limitsKeystone({ services: [] }))).toMatch(/has no services named "nova" \(by id, name or type\): none$/);
    const registeredTwice = limitsKeystone({
      registered: [
        { resource_name: 'class:VCPU', default_limit: 10, region_id: 'RegionOne' },
        { resource_name: 'class:VCPU', default_limit: 20, region_id: 'RegionTwo' },
      ],
    });
    expect(await refusal(registeredTwice)).toBe(
      'PLACEMENT_LIMITS_REGION: Keystone at http://keystone.invalid:5000/v3, service nova has more than one registered limit for class:VCPU (one per region): name the region whose limits apply',
    );
    const projectTwice = limitsKeystone({
      limits: [
        { resource_name: 'class:VCPU', resource_limit: 1, project_id: P },
        { resource_name: 'class:VCPU', resource_limit: 2, project_id: P },
      ],
    });
    expect(await refusal(projectTwice)).toContain(`has more than one limit of project ${P} for class:VCPU (one per region)`);
    // At start: the setting named, as every setting that cannot work.
    t = await makeTestApp();
    const deps = makeDeps(
      t.deps.store,
      keystoneConfig(t.dbUrl),
      { debug() {}, info() {}, warn() {}, error() {} },
      {
        keystoneFetch: registeredTwice.fetcher,
      },
    );
    await expect(deps.extensions.state(LIMITS_STATE)!.start()).rejects.toThrow(
      /^PLACEMENT_LIMITS_REGION: .*\. Fix: correct PLACEMENT_LIMITS_REGION$/,
    );
  });

  it('a service user Keystone refuses, or lets read nothing: the start and POST /ext/limits/refresh name the role', async () => {
    t = await makeTestApp();
    const role =
      'give the user the reader role on the system: openstack role add --user placement --user-domain Default --system all reader';
    const startWith = async (keystone: ReturnType<typeof limitsKeystone>) => {
      const deps = makeDeps(
        t.deps.store,
        keystoneConfig(t.dbUrl),
        { debug() {}, info() {}, warn() {}, error() {} },
        {
          keystoneFetch: keystone.fetcher,
        },
      );
      return {
        deps,
        error: await deps.extensions
          .state(LIMITS_STATE)!
          .start()
          .then(
            () => '',
            (e: unknown) => (e as Error).message,
          ),
      };
    };
    expect((await startWith(limitsKeystone({ signIn: 401 }))).error).toBe(
      `PLACEMENT_KEYSTONE_USERNAME: PLACEMENT_LIMITS=keystone cannot read the limits: Keystone at http://keystone.invalid:5000/v3, service nova refused user placement (domain Default) a system-scoped token: HTTP 401: check PLACEMENT_KEYSTONE_PASSWORD, and ${role}. Fix: give the service user the reader role on the system, or set PLACEMENT_LIMITS=off`,
    );
    expect((await startWith(limitsKeystone({ answers: { '/v3/services': [403] } }))).error).toContain(
      `Keystone at http://keystone.invalid:5000/v3, service nova does not let user placement read GET /v3/services (HTTP 403): ${role}`,
    );
    // Refused twice (a new sign-in did not help): the role again.
    expect((await startWith(limitsKeystone({ answers: { '/v3/registered_limits': [401, 401] } }))).error).toContain(
      `does not let user placement read GET /v3/registered_limits (HTTP 401): ${role}`,
    );
    // Refused once: a new sign-in, and the start goes through.
    const once = limitsKeystone({ answers: { '/v3/limits': [401] } });
    expect((await startWith(once)).error).toBe('');
    expect(once.asked.filter((a) => a.startsWith('/v3/auth/tokens'))).toHaveLength(2);
    // Read once; then Keystone fails: refresh answers 503 with Keystone's words, the limits read stay.
    const failing = limitsKeystone({ answers: { '/v3/registered_limits': [500, 403] } });
    const { deps } = await startWith(limitsKeystone({}));
    const app = createApp(
      makeDeps(
        t.deps.store,
        keystoneConfig(t.dbUrl),
        { debug() {}, info() {}, warn() {}, error() {} },
        {
          keystoneFetch: failing.fetcher,
        },
      ),
    );
    expect(deps.extensions.state(LIMITS_STATE)).toBeDefined();
    for (const words of ['answered GET /v3/registered_limits with HTTP 500', `read GET /v3/registered_limits (HTTP 403): ${role}`]) {
      const refresh = await app.request('/ext/limits/refresh', { method: 'POST', headers: admin });
      expect(refresh.status).toBe(503);
      const detail = ((await refresh.json()) as { errors: { detail: string }[] }).errors[0]!.detail;
      expect(detail).toContain('The project limits were not read again; the last ones read stay in force: Keystone at');
      expect(detail).toContain(words);
    }
  });

  it('readiness: limits older than two refresh intervals are named with their age, source and the last error; the periodic refresh reads them when due', async () => {
    t = await makeTestApp();
    const clock = { now: Date.now() };
    const state = { up: true, vcpu: 5 };
    const warnings: string[] = [];
    const log = { debug() {}, info() {}, warn: (msg: string) => void warnings.push(msg), error() {} };
    const settings = {
      PLACEMENT_LIMITS_REFRESH_SECONDS: 10,
      PLACEMENT_LIMITS_CONSUMER_TYPES: ['INSTANCE'],
      PLACEMENT_LIMITS_COUNT_UNTYPED: true,
    };
    const limits = new ProjectLimits(t.deps.store, reader(keystoneLimits(state)), settings, log, () => clock.now);
    const ready = async () => {
      const [check] = limits.readiness();
      const [result] = await t.deps.store.readBatch([check!.statement]);
      return check!.judge(result!);
    };
    await limits.start();
    expect(await ready()).toEqual({ ready: true });
    expect(await limits.refreshIfDue()).toBe(0);
    clock.now += 10_000;
    state.up = false;
    expect(await limits.refreshIfDue()).toBe(0);
    expect(warnings).toEqual(['project limits not refreshed; the last limits read stay in force']);
    expect(await limits.refreshIfDue()).toBe(0);
    expect(warnings).toHaveLength(1);
    clock.now += 10_000;
    expect(await ready()).toEqual({ ready: true });
    clock.now += 1;
    expect(await ready()).toEqual({
      ready: false,
      reason:
        'the project limits in force were read 20 s ago from Keystone at http://keystone.invalid:5000/v3, service nova, more than twice PLACEMENT_LIMITS_REFRESH_SECONDS (Keystone at http://keystone.invalid:5000/v3, service nova did not answer: fetch failed); they stay enforced',
    });
    state.up = true;
    expect(await limits.refreshIfDue()).toBe(1);
    expect(await ready()).toEqual({ ready: true });
    expect(await limits.readAt()).toBe(new Date(clock.now).toISOString());
    // Another instance on the same database, which has not tried Keystone itself: the age alone.
    const later = { now: clock.now + 20_001 };
    const other = new ProjectLimits(t.deps.store, reader(keystoneLimits(state)), settings, log, () => later.now);
    const [check] = other.readiness();
    expect(check!.judge((await t.deps.store.readBatch([check!.statement]))[0]!)).toEqual({
      ready: false,
      reason:
        'the project limits in force were read 20 s ago from Keystone at http://keystone.invalid:5000/v3, service nova, more than twice PLACEMENT_LIMITS_REFRESH_SECONDS; they stay enforced',
    });
  });

  it('static limits never go stale: ready however long ago they were read', async () => {
    await limitedApp();
    const clock = { now: Date.now() + 3_600_000 };
    const settings = {
      PLACEMENT_LIMITS_REFRESH_SECONDS: 1,
      PLACEMENT_LIMITS_CONSUMER_TYPES: ['INSTANCE'],
      PLACEMENT_LIMITS_COUNT_UNTYPED: true,
    };
    const source = limitsSourceOf(limitsConfigOf(t.deps.config))!;
    const limits = new ProjectLimits(t.deps.store, source, settings, { debug() {}, info() {}, warn() {}, error() {} }, () => clock.now);
    const [check] = limits.readiness();
    expect(check!.judge((await t.deps.store.readBatch([check!.statement]))[0]!)).toEqual({ ready: true });
  });

  it('a database never given limits: a Keystone start that cannot read them is refused', async () => {
    t = await makeTestApp();
    const deps = makeDeps(
      t.deps.store,
      keystoneConfig(t.dbUrl),
      { debug() {}, info() {}, warn() {}, error() {} },
      {
        keystoneFetch: keystoneLimits({ up: false, vcpu: 1 }),
      },
    );
    await expect(deps.extensions.state(LIMITS_STATE)!.start()).rejects.toThrow(
      /PLACEMENT_LIMITS=keystone and no limits were ever read: Keystone at .* did not answer: fetch failed\. Fix: start it when Keystone answers, or set PLACEMENT_LIMITS=off$/,
    );
    expect(await deps.extensions.state(LIMITS_STATE)!.readAt()).toBeNull();
    const ready = await createApp(deps).request('/readyz');
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reason: string }).reason).toMatch(
      /^no project limits were ever read from Keystone at .* did not answer/,
    );
  });
});

describe('ext_within_limits=true on GET /allocation_candidates', () => {
  it("answers none when the request alone would cross the caller's project limit, and why-no-host says so", async () => {
    await limitedApp();
    const rp = await host();
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 8 }))).status).toBe(204);
    const ask = async (query: string, path = '/allocation_candidates') =>
      (await t.call('GET', `${path}?${query}`, { headers: { 'x-project-id': P } })).json() as Promise<Record<string, unknown>>;
    const count = async (query: string) => ((await ask(query)).allocation_requests as unknown[]).length;
    // Stock requests are as upstream: the limit is the claim's business.
    expect(await count('resources=VCPU:3')).toBe(1);
    expect(await count('resources=VCPU:3&ext_within_limits=false')).toBe(1);
    expect(await count('resources=VCPU:2&ext_within_limits=true')).toBe(1);
    expect(await count('resources=VCPU:3&ext_within_limits=true')).toBe(0);
    // Every group counts: 2 + 1 crosses 10 with 8 in use.
    expect(await count('resources1=VCPU:2&resources2=VCPU:1&group_policy=none&ext_within_limits=true')).toBe(0);
    const diagnosis = await ask('resources=VCPU:3&ext_within_limits=true', '/diagnostics/allocation_candidates');
    expect(diagnosis.allocation_requests).toBe(0);
    expect(diagnosis.project_limit).toBe(`the request alone would cross project '${P}''s limit of VCPU (limit 10, usage 8, requested 3)`);
    expect((await t.call('GET', '/allocation_candidates?resources=VCPU:1&ext_within_limits=yes')).status).toBe(400);
  });
});

describe('the usage ledger', () => {
  /** The ledger, and the same counted from the allocations: equal after any write. */
  async function ledgerAndCount() {
    const { client } = t.deps.store;
    const rows = async (sql: string) =>
      (await client.execute(sql)).rows.map((r) => `${r.project_id}/${r.resource_class_id}=${r.used}`).sort();
    return {
      ledger: await rows('SELECT project_id, resource_class_id, used FROM ext_limit_usage WHERE used != 0'),
      counted: await rows(`SELECT c.project_id, a.resource_class_id, sum(a.used) AS used FROM consumers c
        JOIN allocations a ON a.consumer_id = c.uuid LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
        WHERE ct.name IS NULL OR ct.name = 'INSTANCE' GROUP BY c.project_id, a.resource_class_id`),
    };
  }

  it('equals the allocations of the consumers that count after every kind of write, and is counted again when installed', async () => {
    await limitedApp(JSON.stringify({ registered: { 'class:VCPU': 1000 } }));
    const [a, b] = [await host(), await host()];
    const [vm, migration, old] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    const check = async (what: string) => {
      const { ledger, counted } = await ledgerAndCount();
      expect(ledger, what).toEqual(counted);
    };
    expect((await put(vm, claimBody(a, { VCPU: 4, MEMORY_MB: 512 }))).status).toBe(204);
    expect((await put(migration, claimBody(b, { VCPU: 2 }, { type: 'MIGRATION' }))).status).toBe(204);
    const untyped = { allocations: { [a]: { resources: { VCPU: 1 } } }, project_id: P, user_id: USER };
    expect((await put(old, untyped, '1.27')).status).toBe(204);
    await check('claims');
    // Moved, resized, to another project, to another type.
    expect((await put(vm, claimBody(b, { VCPU: 6, DISK_GB: 10 }, { generation: 1, project: Q }))).status).toBe(204);
    await check('moved to another project');
    expect((await put(vm, claimBody(b, { VCPU: 6 }, { generation: 2, project: Q, type: 'MIGRATION' }))).status).toBe(204);
    await check('typed MIGRATION');
    expect((await put(migration, claimBody(a, { VCPU: 3 }, { generation: 1 }))).status).toBe(204);
    await check('typed INSTANCE');
    // POST /allocations: one consumer emptied, one moved.
    const both = {
      [old]: { allocations: {}, project_id: P, user_id: USER, consumer_generation: 1, consumer_type: 'INSTANCE' },
      [migration]: {
        allocations: { [b]: { resources: { VCPU: 3 } } },
        project_id: P,
        user_id: USER,
        consumer_generation: 2,
        consumer_type: 'INSTANCE',
      },
    };
    expect((await t.call('POST', '/allocations', { body: both })).status).toBe(204);
    await check('POST /allocations');
    expect((await t.call('DELETE', `/allocations/${migration}`)).status).toBe(204);
    await check('DELETE /allocations');
    // Put in force again (another counting rule, then this one): counted again from the allocations.
    await t.deps.store.client.execute('DELETE FROM ext_limit_usage');
    await t.deps.store.client.execute("DELETE FROM ext_limit_counting WHERE consumer_type = 'INSTANCE'");
    await t.deps.extensions.state(LIMITS_STATE)!.prepare();
    await check('installed again');
  });
});

describe('PLACEMENT_LIMITS=off (the default)', () => {
  it('installs no guard and answers /ext/limits 404: claims are as upstream', async () => {
    t = await makeTestApp();
    expect(t.deps.extensions.state(LIMITS_STATE)).toBeUndefined();
    expect(t.deps.writeHooks.claimGuards.map((g) => g.name)).not.toContain('project limits');
    const rp = await host();
    expect((await put(crypto.randomUUID(), claimBody(rp, { VCPU: 64 }))).status).toBe(204);
    const off = await t.call('GET', '/ext/limits');
    expect(off.status).toBe(404);
    expect((await errorOf(off)).detail).toContain('PLACEMENT_LIMITS=off');
  });

  it('refuses a start whose limits settings cannot work, naming the setting', () => {
    expect(() => loadConfig({ PLACEMENT_LIMITS: 'static' })).toThrow(
      /PLACEMENT_LIMITS_JSON: PLACEMENT_LIMITS=static but no limits are set/,
    );
    expect(() => loadConfig({ PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: '{"registered": {"VCPU": 1}}' })).toThrow(
      /PLACEMENT_LIMITS_JSON: at registered.VCPU: .*class:<RESOURCE_CLASS>/,
    );
    expect(() => loadConfig({ PLACEMENT_LIMITS: 'keystone' })).toThrow(
      /PLACEMENT_KEYSTONE_AUTH_URL: PLACEMENT_LIMITS=keystone reads the limits/,
    );
    expect(() => loadConfig({ PLACEMENT_LIMITS: 'quota' })).toThrow(/PLACEMENT_LIMITS/);
    expect(() => loadConfig({ PLACEMENT_LIMITS_CONSUMER_TYPES: 'instance' })).toThrow(/PLACEMENT_LIMITS_CONSUMER_TYPES/);
  });
});
