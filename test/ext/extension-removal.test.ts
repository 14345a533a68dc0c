// An extension is one folder and one line in src/extensions.ts EXTENSIONS: an app
// built without it (and without the extensions that declare they require it)
// answers upstream's API as upstream does, refuses the extension's query
// parameters with upstream's 400 for an unknown key, and the extensions left
// keep working; an app that installs an extension without one it requires
// refuses to start. Here the apps share one database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { EXTENSIONS, makeDeps } from '../../src/compose.js';
import { openStore } from '../../src/entry/node-service.js';
import { ConfigSchema, loadConfig } from '../../src/config.js';
import { type Extension, withoutExtensions } from '../../src/extension.js';
import { sweepLeases } from '../../src/ext/allocation-ends.js';
import { counters } from '../../src/ext/counters/extension.js';
import { events } from '../../src/ext/events/extension.js';
import { HELD_CAPACITY } from '../../src/ext/holds/declaration.js';
import { holds } from '../../src/ext/holds/extension.js';
import { HOLDS } from '../../src/ext/holds/installed.js';
import { leases } from '../../src/ext/leases/extension.js';
import { limits } from '../../src/ext/limits/extension.js';
import { taints } from '../../src/ext/taints/extension.js';
import { runSweeps } from '../../src/jobs/sweeps.js';
import { seedProvider } from '../helpers/placement-seed.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { preemptionBody, preemptionHelpers } from './helpers.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

let full: TestApp;
let bare: ReturnType<typeof createApp>;
let withoutTaints: ReturnType<typeof createApp>;
let withoutLimitsAndCounters: ReturnType<typeof createApp>;
let host: string;

beforeAll(async () => {
  full = await makeTestApp();
  const built = async (extensions: typeof EXTENSIONS) =>
    createApp(makeDeps(await openStore(full.deps.config, { prepare: false }, silent), full.deps.config, silent, { extensions }));
  bare = await built([]);
  withoutTaints = await built(withoutExtensions(EXTENSIONS, [taints]));
  withoutLimitsAndCounters = await built(withoutExtensions(EXTENSIONS, [limits, counters]));
  host = (await seedProvider(full.deps, { VCPU: { total: 8, maxUnit: 8 } }, { name: 'host' })).uuid;
  await seedProvider(full.deps, { VCPU: { total: 4, maxUnit: 4 } }, { name: 'other' });
});
afterAll(() => full.close());

const get = (app: ReturnType<typeof createApp>, path: string, version = 'latest') =>
  app.request(path, { headers: { 'x-auth-token': 'admin', accept: 'application/json', 'openstack-api-version': `placement ${version}` } });

/**
 * One request per shipped extension that only it answers: its route, or its
 * candidate parameter where it has no route on (limits: PLACEMENT_LIMITS off
 * here; sites: not a site, its own 404). An app without the extension answers
 * as the app without any does.
 */
const PROBES: Record<string, () => string> = {
  headroom: () => '/ext/headroom?resources=VCPU:1',
  leases: () => '/ext/leases',
  taints: () => '/ext/taints',
  counters: () => `/ext/resource_providers/${host}/counters`,
  limits: () => '/allocation_candidates?resources=VCPU:1&ext_within_limits=true',
  gangs: () => '/ext/gang_candidates?resources=VCPU:1&count=1',
  'first-of': () => '/allocation_candidates?resources_A=VCPU:1&ext_first_of=_A',
  holds: () => '/ext/holds',
  preemption: () => '/ext/priorities',
  events: () => '/ext/events?wait=0',
  simulate: () => '/ext/defrag?resources=VCPU:1',
  sites: () => '/ext/sites/unknown-site',
};

/** What each probe answers in `app`, by extension name: the status, and an error's detail. */
const probeAll = async (app: ReturnType<typeof createApp>): Promise<Record<string, string>> =>
  Object.fromEntries(
    await Promise.all(
      Object.entries(PROBES).map(async ([name, path]) => {
        const res = await get(app, path());
        const detail = res.ok ? '' : ((await res.json()) as { errors?: { detail?: string }[] }).errors?.[0]?.detail;
        return [name, `${res.status} ${detail}`];
      }),
    ),
  );

/** An error body without its request id (each request has its own). */
const errorBody = async (res: Response) => {
  const body = (await res.json()) as { errors: Record<string, unknown>[] };
  return body.errors.map(({ request_id: _, ...rest }) => rest);
};

describe('an app built without an extension', () => {
  it("answers upstream's queries byte for byte as the app with every extension does", async () => {
    for (const [path, version] of [
      ['/allocation_candidates?resources=VCPU:1', 'latest'],
      ['/allocation_candidates?resources=VCPU:4&limit=1', '1.16'],
      ['/allocation_candidates?resources1=VCPU:2&resources2=VCPU:2&group_policy=none', '1.25'],
      ['/resource_providers', 'latest'],
    ] as const) {
      const [a, b] = await Promise.all([get(full.app, path, version), get(bare, path, version)]);
      expect(b.status, path).toBe(a.status);
      expect(await b.text(), path).toBe(await a.text());
    }
  });

  it("without any one of the shipped extensions and those that require it, each app answers upstream's queries byte for byte as the full app does, and the extensions left answer as in the full app", async () => {
    const queries = [
      ['/allocation_candidates?resources=VCPU:1', 'latest'],
      ['/allocation_candidates?resources1=VCPU:2&resources2=VCPU:2&group_policy=none', '1.25'],
      ['/resource_providers', 'latest'],
      [`/resource_providers/${host}/usages`, 'latest'],
    ] as const;
    const expected = await Promise.all(queries.map(async ([path, version]) => (await get(full.app, path, version)).text()));
    expect(Object.keys(PROBES).sort()).toEqual(EXTENSIONS.map((e) => e.name).sort());
    const [inFull, inBare] = await Promise.all([probeAll(full.app), probeAll(bare)]);
    for (const name of Object.keys(PROBES))
      expect(inFull[name], `${name}: the full app answers what the bare one does not`).not.toBe(inBare[name]);
    const removedWith = new Map<string, string[]>();
    for (const left of EXTENSIONS) {
      const store = await openStore(full.deps.config, { prepare: false }, silent);
      try {
        const kept = withoutExtensions(EXTENSIONS, [left]);
        const gone = EXTENSIONS.filter((e) => !kept.includes(e)).map((e) => e.name);
        removedWith.set(left.name, gone);
        const app = createApp(makeDeps(store, full.deps.config, silent, { extensions: kept }));
        for (const [i, [path, version]] of queries.entries()) {
          const res = await get(app, path, version);
          expect(res.status, `${left.name}: ${path}`).toBe(200);
          expect(await res.text(), `${left.name}: ${path}`).toBe(expected[i]);
        }
        const probed = await probeAll(app);
        for (const e of EXTENSIONS) {
          const where = `without ${left.name}, ${e.name}`;
          expect(probed[e.name], where).toBe(kept.includes(e) ? inFull[e.name] : inBare[e.name]);
        }
      } finally {
        store.close();
      }
    }
    // What goes with each: itself and those that declare they need it, directly or through another.
    expect(Object.fromEntries(removedWith)).toEqual({
      headroom: ['headroom', 'simulate'],
      leases: ['leases'],
      taints: ['taints', 'simulate'],
      counters: ['counters'],
      limits: ['limits', 'sites'],
      gangs: ['headroom', 'gangs', 'holds', 'preemption', 'simulate', 'sites'],
      'first-of': ['first-of'],
      holds: ['holds', 'preemption', 'simulate', 'sites'],
      preemption: ['preemption'],
      events: ['events'],
      simulate: ['simulate'],
      sites: ['sites'],
    });
  });

  it('without events: a preemption commits as with them and reports nothing (the event log is a part of the contract, not a requirement)', async () => {
    const store = await openStore(full.deps.config, { prepare: false }, silent);
    try {
      const withoutEvents = createApp(makeDeps(store, full.deps.config, silent, { extensions: withoutExtensions(EXTENSIONS, [events]) }));
      expect(withoutExtensions(EXTENSIONS, [events]).map((e) => e.name)).toContain('preemption');
      const { victimOn } = preemptionHelpers(() => full);
      const reported = async () => {
        const [r] = await full.deps.store.readBatch([
          { sql: "SELECT COUNT(*) AS n FROM ext_events WHERE kind = 'preemption.created'", args: [] },
        ]);
        return Number(r!.rows[0]!.n);
      };
      const preempt = (app: ReturnType<typeof createApp>, host: string, victim: string) =>
        app.request('/ext/preemptions', {
          method: 'POST',
          headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement latest' },
          body: JSON.stringify(preemptionBody(host, [victim], 4)),
        });
      const before = await reported();
      const [one, two] = [
        await provider(full, { inventory: { VCPU: { total: 4 } } }),
        await provider(full, { inventory: { VCPU: { total: 4 } } }),
      ];
      expect((await preempt(withoutEvents, one, await victimOn(one, 4, 1))).status).toBe(201);
      expect(await reported()).toBe(before);
      expect((await preempt(full.app, two, await victimOn(two, 4, 1))).status).toBe(201);
      expect(await reported()).toBe(before + 1);
    } finally {
      store.close();
    }
  });

  it('refuses to start an app that installs an extension without one it requires, naming both', async () => {
    const store = await openStore(full.deps.config, { prepare: false }, silent);
    try {
      const build = (extensions: readonly Extension[]) => makeDeps(store, full.deps.config, silent, { extensions });
      expect(() => build(EXTENSIONS.filter((e) => e !== holds))).toThrow(
        'extension preemption requires holds, which this app does not install: install it or remove preemption too',
      );
      expect(() => build(EXTENSIONS.filter((e) => e.name !== 'gangs'))).toThrow(
        'extension headroom requires gangs, which this app does not install',
      );
      expect(() => build(EXTENSIONS.filter((e) => e.name !== 'leases'))).not.toThrow();
      expect(() => build(withoutExtensions(EXTENSIONS, [holds]))).not.toThrow();
      // One that reads what holds set up (as sites do in site mode), listed before holds: the start says so,
      // rather than that holds are not installed; listed after, it reads them.
      let read: unknown;
      const reader: Extension = {
        name: 'reader',
        requires: ['holds'],
        setUp: ({ state }) => {
          read = state(HOLDS);
          return null;
        },
      };
      expect(() => build([reader, ...EXTENSIONS])).toThrow('extension reader reads what holds sets up: list holds before reader');
      build([...EXTENSIONS, reader]);
      expect(read).toMatchObject({ declaration: HELD_CAPACITY });
    } finally {
      store.close();
    }
  });

  it("refuses each extension's parameter with upstream's 400 for an unknown key", async () => {
    for (const [param, value] of [
      ['ext_tolerate', 'maintenance'],
      ['ext_within_limits', 'true'],
      ['ext_first_of', '_A'],
    ]) {
      const path = `/allocation_candidates?resources_A=VCPU:1&${param}=${value}`;
      const taken = await get(full.app, path);
      expect(taken.status, param).toBe(200);
      const refused = await get(bare, path);
      expect(refused.status, param).toBe(400);
      // Upstream's answer to any key it does not know, here one the full app does not know either.
      const unknown = await get(full.app, `/allocation_candidates?resources_A=VCPU:1&${param}x=${value}`);
      expect(unknown.status).toBe(400);
      expect(JSON.stringify(await errorBody(refused))).toBe(JSON.stringify(await errorBody(unknown)).replaceAll(`${param}x`, param));
    }
  });

  it("refuses every shipped extension's candidate parameter, as its list declares them, with upstream's 400 for an unknown key", async () => {
    const names = EXTENSIONS.flatMap((e) => e.params ?? []).map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['ext_tolerate', 'ext_within_limits', 'ext_first_of', 'ext_until', 'ext_hold']));
    for (const name of names) {
      const refused = await get(bare, `/allocation_candidates?resources_A=VCPU:1&${name}=1`);
      expect(refused.status, name).toBe(400);
      const unknown = await get(full.app, `/allocation_candidates?resources_A=VCPU:1&${name}x=1`);
      expect(JSON.stringify(await errorBody(refused)), name).toBe(JSON.stringify(await errorBody(unknown)).replaceAll(`${name}x`, name));
    }
  });

  it("leaves an extension's question out of why no host: count=N (a gang) is an unknown key there, as upstream's parser words it", async () => {
    const why = '/diagnostics/allocation_candidates?resources=VCPU:1&count=2';
    expect((await get(full.app, why)).status).toBe(200);
    const refused = await get(bare, why);
    expect(refused.status).toBe(400);
    const unknown = await get(full.app, `${why.replace('count=', 'countx=')}`);
    expect(JSON.stringify(await errorBody(refused))).toBe(JSON.stringify(await errorBody(unknown)).replaceAll('countx', 'count'));
  });

  it("refuses a claim's extension parameter with a 400 and writes nothing, where the app with the extension claims and leases", async () => {
    const put = (app: ReturnType<typeof createApp>, consumer: string) =>
      app.request(`/allocations/${consumer}?ext_until=3600`, {
        method: 'PUT',
        headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': 'placement 1.38' },
        body: JSON.stringify({
          allocations: { [host]: { resources: { VCPU: 1 } } },
          project_id: crypto.randomUUID(),
          user_id: crypto.randomUUID(),
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        }),
      });
    const [plain, leased] = [crypto.randomUUID(), crypto.randomUUID()];
    const refused = await put(bare, plain);
    expect(refused.status).toBe(400);
    expect((await errorBody(refused))[0]).toMatchObject({ code: 'placement.undefined_code', title: 'Bad Request' });
    expect(await (await get(full.app, `/allocations/${plain}`)).json()).toEqual({ allocations: {} });
    expect((await put(full.app, leased)).status).toBe(204);
    expect((await get(full.app, `/ext/leases/${leased}`)).status).toBe(200);
    expect((await full.call('DELETE', `/allocations/${leased}`)).status).toBe(204);
  });

  it("without leases: /ext/leases is gone, and the ends gangs and holds' ext_until write are still kept and swept, the sweep run once", async () => {
    const store = await openStore(full.deps.config, { prepare: false }, silent);
    try {
      const kept = withoutExtensions(EXTENSIONS, [leases]);
      expect(kept.map((e) => e.name)).toEqual(EXTENSIONS.filter((e) => e !== leases).map((e) => e.name));
      const deps = makeDeps(store, full.deps.config, silent, { extensions: kept });
      const app = createApp(deps);
      expect((await get(app, '/ext/leases')).status).toBe(404);
      expect((await get(full.app, '/ext/leases')).status).toBe(200);
      // Gangs, holds and preemption each install the sweep of what they end; it runs once, as in the full app.
      expect(deps.jobHandlers.sweeps.filter((s) => s === sweepLeases)).toHaveLength(1);
      expect(full.deps.jobHandlers.sweeps.filter((s) => s === sweepLeases)).toHaveLength(1);

      const box = await provider(full, { inventory: { VCPU: { total: 8 } } });
      const claimOf = () => ({
        allocations: { [box]: { resources: { VCPU: 1 } } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      });
      const send = (method: string, path: string, body: unknown, version = 'latest') =>
        app.request(path, {
          method,
          headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': `placement ${version}` },
          body: JSON.stringify(body),
        });
      const [until, ...members] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
      expect((await send('PUT', `/allocations/${until}?ext_until=60`, claimOf(), '1.38')).status).toBe(204);
      const gang = await send('POST', '/ext/gangs', {
        members: Object.fromEntries(members.map((m) => [m, claimOf()])),
        lease_seconds: 120,
      });
      expect(gang.status, await gang.clone().text()).toBe(200);
      const ended = [until!, ...members].sort();
      const leased = async () => {
        const [r] = await store.readBatch([
          {
            sql: 'SELECT consumer_uuid FROM ext_leases WHERE consumer_uuid IN (SELECT value FROM json_each(?))',
            args: [JSON.stringify(ended)],
          },
        ]);
        return r!.rows.map((row) => String(row.consumer_uuid)).sort();
      };
      const used = async () =>
        ((await (await get(app, `/resource_providers/${box}/usages`)).json()) as { usages: { VCPU?: number } }).usages.VCPU ?? 0;
      expect(await leased()).toEqual(ended);
      expect(await used()).toBe(3);
      // The app's own sweeps, past both ends: every allocation that was to end is gone.
      const now = deps.clock().getTime();
      deps.clock = () => new Date(now + 121_000);
      await runSweeps(deps);
      expect(await leased()).toEqual([]);
      expect(await used()).toBe(0);
    } finally {
      store.close();
    }
  });

  it('without taints: a tainted provider stays a candidate, ext_tolerate is refused, /ext/taints is gone; the other extensions stay', async () => {
    const { generation } = (await (await full.call('GET', `/resource_providers/${host}`)).json()) as { generation: number };
    const put = await full.call('PUT', `/ext/resource_providers/${host}/taints`, {
      body: { resource_provider_generation: generation, taints: [{ key: 'maintenance', effect: 'NoSchedule' }] },
    });
    expect(put.status).toBe(200);
    const providers = async (app: ReturnType<typeof createApp>) =>
      Object.keys(
        ((await (await get(app, '/allocation_candidates?resources=VCPU:1')).json()) as { provider_summaries: object }).provider_summaries,
      );
    expect(await providers(full.app)).not.toContain(host);
    expect(await providers(withoutTaints)).toContain(host);
    expect((await get(withoutTaints, '/allocation_candidates?resources=VCPU:1&ext_tolerate=maintenance')).status).toBe(400);
    expect((await get(withoutTaints, '/ext/taints')).status).toBe(404);
    expect((await get(full.app, '/ext/taints')).status).toBe(200);
    expect((await get(withoutTaints, '/ext/leases')).status).toBe(200);
    expect((await get(withoutTaints, '/allocation_candidates?resources_A=VCPU:1&ext_first_of=_A')).status).toBe(200);
  });

  it('without limits and counters: their routes are gone and ext_within_limits is refused; the other extensions stay', async () => {
    // (GET /ext/limits answers 404 in an app whose PLACEMENT_LIMITS is off, as here: the parameter is what shows limits are in.)
    const counted = `/ext/resource_providers/${host}/counters`;
    expect((await get(full.app, counted)).status).toBe(200);
    expect((await get(withoutLimitsAndCounters, counted)).status).toBe(404);
    expect((await get(full.app, '/allocation_candidates?resources=VCPU:1&ext_within_limits=true')).status).toBe(200);
    expect((await get(withoutLimitsAndCounters, '/allocation_candidates?resources=VCPU:1&ext_within_limits=true')).status).toBe(400);
    expect((await get(withoutLimitsAndCounters, '/ext/taints')).status).toBe(200);
    const [a, b] = await Promise.all([
      get(full.app, '/allocation_candidates?resources=VCPU:1'),
      get(withoutLimitsAndCounters, '/allocation_candidates?resources=VCPU:1'),
    ]);
    expect(await b.text()).toBe(await a.text());
  });
});

describe("an extension's settings are part of its object", () => {
  it("the configuration takes each shipped extension's settings from it, and its check of them", () => {
    const names = Object.keys(limits.settings!.shape);
    expect(names).toContain('PLACEMENT_LIMITS');
    for (const name of names) expect(Object.keys(ConfigSchema.shape), name).toContain(name);
    expect(loadConfig({ PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: '{"registered": {"class:VCPU": 2}}' }).PLACEMENT_LIMITS).toBe(
      'static',
    );
    expect(() => loadConfig({ PLACEMENT_LIMITS: 'static' })).toThrow(
      /PLACEMENT_LIMITS_JSON: PLACEMENT_LIMITS=static but no limits are set/,
    );
  });
});
