// Shared counters against a brute-force oracle (docs/extensions-gpu.md): random counter
// layouts, random claims and releases from racing clients (two apps, each
// with its own connection to one database file, several requests in flight
// on each), and a watcher reading snapshots throughout: no snapshot ever shows
// a counter or an inventory exceeded. Then, quiet, every claim's outcome and
// every candidates answer must be exactly what the oracle computes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { provider } from '../helpers/providers.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { ensureClasses } from './mig-h100.js';
import { random as seeded, type Random } from '../helpers/random.js';

const SEEDS = Number(process.env.COUNTER_PROPERTY_SEEDS ?? 6);
const silent = { debug() {}, info() {}, warn() {}, error() {} };

interface Layout {
  /** provider uuid -> class -> total */
  inventory: Map<string, Map<string, number>>;
  /** provider uuid -> counter -> total */
  counters: Map<string, Map<string, number>>;
  /** provider uuid -> class -> counter -> per unit */
  consumption: Map<string, Map<string, Map<string, number>>>;
}

type Usage = Map<string, Map<string, number>>;

/** The oracle: whether `usage` respects every inventory and counter of the layout. */
function holds(layout: Layout, usage: Usage): boolean {
  for (const [rp, classes] of layout.inventory) {
    const used = usage.get(rp) ?? new Map<string, number>();
    for (const [rc, total] of classes) if ((used.get(rc) ?? 0) > total) return false;
    for (const [counter, total] of layout.counters.get(rp) ?? []) {
      let load = 0;
      for (const [rc, per] of layout.consumption.get(rp) ?? []) load += (used.get(rc) ?? 0) * (per.get(counter) ?? 0);
      if (load > total) return false;
    }
  }
  return true;
}

function plus(usage: Usage, rp: string, resources: Record<string, number>, sign = 1): Usage {
  const next: Usage = new Map([...usage].map(([k, v]) => [k, new Map(v)]));
  const mine = next.get(rp) ?? new Map<string, number>();
  for (const [rc, n] of Object.entries(resources)) mine.set(rc, (mine.get(rc) ?? 0) + sign * n);
  next.set(rp, mine);
  return next;
}

async function usageOf(app: TestApp): Promise<Usage> {
  const [rows] = await app.deps.store.readBatch([
    {
      sql: `SELECT p.uuid, rc.name, SUM(a.used) AS used FROM allocations a JOIN resource_providers p ON p.id = a.resource_provider_id
        JOIN resource_classes rc ON rc.id = a.resource_class_id GROUP BY p.uuid, rc.name`,
      args: [],
    },
  ]);
  const usage: Usage = new Map();
  for (const r of rows!.rows) {
    const perClass = usage.get(String(r.uuid)) ?? new Map<string, number>();
    perClass.set(String(r.name), Number(r.used));
    usage.set(String(r.uuid), perClass);
  }
  return usage;
}

const CLASSES = ['CUSTOM_PART_A', 'CUSTOM_PART_B', 'CUSTOM_PART_C'];
const COUNTERS = ['slices', 'memory', 'engines'];
const owner = { project_id: crypto.randomUUID(), user_id: crypto.randomUUID(), consumer_type: 'INSTANCE' };

async function buildLayout(app: TestApp, r: Random): Promise<Layout> {
  const layout: Layout = { inventory: new Map(), counters: new Map(), consumption: new Map() };
  const providers = r.int(1, 3);
  for (let p = 0; p < providers; p += 1) {
    const classes = CLASSES.filter(() => r.chance(0.8));
    if (!classes.length) classes.push(CLASSES[0]!);
    const inventory = new Map(classes.map((rc) => [rc, r.int(1, 6)]));
    const uuid = await provider(app, {
      inventory: Object.fromEntries([...inventory].map(([rc, total]) => [rc, { total, max_unit: total }])),
    });
    layout.inventory.set(uuid, inventory);
    const counters = new Map(COUNTERS.filter(() => r.chance(0.7)).map((name) => [name, r.below(9)]));
    const consumption = new Map(
      classes.map((rc) => [rc, new Map([...counters.keys()].filter(() => r.chance(0.8)).map((name) => [name, r.below(4)]))]),
    );
    layout.counters.set(uuid, counters);
    layout.consumption.set(uuid, consumption);
    const generation = ((await (await app.call('GET', `/resource_providers/${uuid}`)).json()) as { generation: number }).generation;
    const res = await app.call('PUT', `/ext/resource_providers/${uuid}/counters`, {
      body: {
        resource_provider_generation: generation,
        counters: Object.fromEntries(counters),
        consumption: Object.fromEntries([...consumption].map(([rc, per]) => [rc, Object.fromEntries(per)])),
      },
    });
    expect(res.status).toBe(200);
  }
  return layout;
}

function randomClaim(layout: Layout, r: Random): { rp: string; resources: Record<string, number> } {
  const rps = [...layout.inventory.keys()];
  const rp = r.pick(rps);
  const classes = [...layout.inventory.get(rp)!.keys()];
  const resources: Record<string, number> = {};
  for (const rc of classes) if (r.chance(0.6)) resources[rc] = r.int(1, 2);
  if (!Object.keys(resources).length) resources[classes[0]!] = 1;
  return { rp, resources };
}

describe('shared counters: racing clients never exceed a counter; quiet answers match a brute-force oracle', () => {
  let app: TestApp;
  let second: TestApp['app'];
  let closeSecond: () => void;

  beforeAll(async () => {
    app = await makeTestApp();
    await ensureClasses(app, CLASSES);
    const deps = await buildNodeDeps(loadConfig({ PLACEMENT_DB_URL: app.dbUrl, PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false' }), silent);
    second = createApp(deps);
    closeSecond = () => deps.store.close();
  });
  afterAll(() => {
    closeSecond();
    app.close();
  });

  const send = (target: TestApp['app'], method: string, path: string, body?: unknown) =>
    Promise.resolve(
      target.request(path, {
        method,
        headers: {
          'x-auth-token': 'admin',
          accept: 'application/json',
          'content-type': 'application/json',
          'openstack-api-version': 'placement latest',
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    );

  for (let seed = 1; seed <= SEEDS; seed += 1) {
    it(`seed ${seed}`, async () => {
      const r = seeded(seed * 7919);
      const layout = await buildLayout(app, r);
      const held = new Map<string, { rp: string; generation: number }>();
      let stop = false;
      const violations: string[] = [];
      // The watcher: every snapshot it reads must hold.
      const watcher = (async () => {
        while (!stop) {
          const usage = await usageOf(app);
          if (!holds(layout, usage)) violations.push(JSON.stringify([...usage].map(([k, v]) => [k, [...v]])));
          await new Promise((r) => setTimeout(r, 1));
        }
      })();
      // Racing clients: each op a claim (new consumer: the one-batch path; an existing one at its generation: the
      // ordinary path; POST /allocations: the ordinary path) or a release, on either app.
      const client = async (target: TestApp['app'], ops: number) => {
        for (let i = 0; i < ops; i += 1) {
          const roll = r.next();
          const mine = [...held.keys()];
          if (roll < 0.25 && mine.length) {
            const consumer = r.pick(mine);
            held.delete(consumer);
            await send(target, 'DELETE', `/allocations/${consumer}`);
            continue;
          }
          const { rp, resources } = randomClaim(layout, r);
          if (roll < 0.45 && mine.length) {
            const consumer = r.pick(mine);
            const current = held.get(consumer);
            if (!current) continue;
            const res = await send(target, 'PUT', `/allocations/${consumer}`, {
              allocations: { [rp]: { resources } },
              consumer_generation: current.generation,
              ...owner,
            });
            if (res.status === 204) held.set(consumer, { rp, generation: current.generation + 1 });
            else expect([409]).toContain(res.status);
            continue;
          }
          const consumer = crypto.randomUUID();
          const res =
            roll < 0.6
              ? await send(target, 'POST', '/allocations', {
                  [consumer]: { allocations: { [rp]: { resources } }, consumer_generation: null, ...owner },
                })
              : await send(target, 'PUT', `/allocations/${consumer}`, {
                  allocations: { [rp]: { resources } },
                  consumer_generation: null,
                  ...owner,
                });
          if (res.status === 204) held.set(consumer, { rp, generation: 1 });
          else expect(res.status, await res.text()).toBe(409);
        }
      };
      await Promise.all([client(app.app, 12), client(app.app, 12), client(second, 12), client(second, 12)]);
      stop = true;
      await watcher;
      expect(violations).toEqual([]);
      expect(holds(layout, await usageOf(app))).toBe(true);

      // Quiet: each claim is granted exactly when the oracle says it fits; candidates list exactly the providers that fit.
      let usage = await usageOf(app);
      for (let i = 0; i < 25; i += 1) {
        const { rp, resources } = randomClaim(layout, r);
        const after = plus(usage, rp, resources);
        const consumer = crypto.randomUUID();
        const res = await send(r.chance(0.5) ? app.app : second, 'PUT', `/allocations/${consumer}`, {
          allocations: { [rp]: { resources } },
          consumer_generation: null,
          ...owner,
        });
        expect(res.status, `claim ${JSON.stringify(resources)} on a provider of ${JSON.stringify([...layout.counters.get(rp)!])}`).toBe(
          holds(layout, after) ? 204 : 409,
        );
        if (res.status === 204) usage = after;
        if (r.chance(0.3)) {
          const query = Object.entries(randomClaim(layout, r).resources)
            .map(([rc, n]) => `${rc}:${n}`)
            .join(',');
          const asked = Object.fromEntries(query.split(',').map((p) => [p.split(':')[0]!, Number(p.split(':')[1])]));
          const found = await send(app.app, 'GET', `/allocation_candidates?resources=${query}`);
          const body = (await found.json()) as { allocation_requests: { allocations: Record<string, unknown> }[] };
          const providers = body.allocation_requests
            .map((r) => Object.keys(r.allocations))
            .filter((l) => l.length === 1)
            .flat()
            // Earlier seeds' providers share the classes: only this layout's are judged.
            .filter((uuid) => layout.inventory.has(uuid))
            .sort();
          const expected = [...layout.inventory.keys()]
            .filter(
              (uuid) => Object.keys(asked).every((rc) => layout.inventory.get(uuid)!.has(rc)) && holds(layout, plus(usage, uuid, asked)),
            )
            .sort();
          expect(providers).toEqual(expected);
        }
      }
    }, 60_000);
  }
});
