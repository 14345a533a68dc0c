// Differential test of the write model: random write sequences (claims,
// moves, deletes, inventory changes, reshapes; fresh, stale and missing
// generations; over capacity, unknown providers and classes; providers
// created, renamed, re-parented and deleted; resource classes and traits
// created, renamed and deleted) run against the
// frozen pre-issue-13 write path (test/write-model/old/) and the live one, on
// two databases. Every response (status, body without request ids) and the
// final database state (by natural keys, timestamps aside) must be identical.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Hono } from 'hono';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { createOldWritePathApp } from './old/app.js';
import { mulberry32, random, type Random } from '../helpers/random.js';

const SEQUENCES = Number(process.env.DIFF_SEQUENCES ?? 40);
const STEPS = Number(process.env.DIFF_STEPS ?? 40);
const SEQUENCES_PER_TEST = 10;
const FIRST_SEED = Number(process.env.DIFF_SEED ?? 1000);

const uuidOf = (kind: number, i: number) => `${String(kind).repeat(8)}-0000-4000-8000-${String(i).padStart(12, '0')}`;
const PROVIDERS = [0, 1, 2, 3].map((i) => uuidOf(1, i));
const CHILD = PROVIDERS[3]!; // a child of PROVIDERS[0]
const MISSING_PROVIDER = uuidOf(9, 9);
const CONSUMERS = [0, 1, 2, 3, 4].map((i) => uuidOf(2, i));
const CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'CUSTOM_DIFF'];
// Custom classes the sequences create, rename and delete (no digits: the status keys end in [A-Z_]).
const CUSTOM_CLASSES = ['CUSTOM_DIFF', 'CUSTOM_DIFFB', 'CUSTOM_DIFFC'];
const CUSTOM_TRAITS = ['CUSTOM_TONE', 'CUSTOM_TTWO'];
const UNKNOWN_CLASS = 'CUSTOM_NOPE';
const VERSIONS = ['1.0', '1.8', '1.12', '1.20', '1.28', '1.33', '1.38', 'latest'];
const PROJECTS = ['p-one', 'p-two'];
const USERS = ['u-one', 'u-two'];
const TYPES = ['INSTANCE', 'MIGRATION'];
const AGGREGATES = [0, 1, 2, 3].map((i) => uuidOf(3, i));
const TRAITS = ['HW_CPU_X86_AVX2', 'HW_CPU_X86_SSE2', 'COMPUTE_VOLUME_MULTI_ATTACH', 'STORAGE_DISK_SSD', 'CUSTOM_TONE'];

interface Request {
  method: string;
  path: string;
  body?: unknown;
  version: string;
}

class Pair {
  constructor(
    readonly live: TestApp,
    readonly old: TestApp,
    readonly oldApp: { request: Hono['request'] },
  ) {}

  private send(app: TestApp, target: { request: Hono['request'] } | null, req: Request): Promise<Response> {
    const headers: Record<string, string> = {
      'x-auth-token': 'admin',
      accept: 'application/json',
      'openstack-api-version': `placement ${req.version}`,
    };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    const init = { method: req.method, headers, body: req.body === undefined ? undefined : JSON.stringify(req.body) };
    return Promise.resolve((target ?? app.app).request(req.path, init));
  }

  /** Sends `req` to both, returns the live answer after checking the old one says the same. */
  async both(req: Request, where: string): Promise<{ status: number; body: unknown }> {
    const [a, b] = [await this.send(this.live, null, req), await this.send(this.old, this.oldApp, req)];
    const [ta, tb] = [normalise(await a.text()), normalise(await b.text())];
    expect({ status: a.status, body: ta }, `${where}: ${req.method} ${req.path} @${req.version} ${JSON.stringify(req.body)}`).toEqual({
      status: b.status,
      body: tb,
    });
    return { status: a.status, body: ta ? (JSON.parse(ta) as unknown) : null };
  }
}

function normalise(text: string): string {
  return text.replace(/"request_id":"[^"]*"/g, '"request_id":"-"');
}

async function dump(app: TestApp): Promise<Record<string, unknown[]>> {
  const q = async (sql: string) => (await app.deps.store.client.execute(sql)).rows.map((r) => ({ ...r }));
  return {
    providers: await q(`SELECT p.uuid, p.name, p.generation, root.uuid AS root, parent.uuid AS parent
      FROM resource_providers p LEFT JOIN resource_providers root ON root.id = p.root_provider_id
      LEFT JOIN resource_providers parent ON parent.id = p.parent_provider_id ORDER BY p.uuid`),
    inventories: await q(`SELECT p.uuid, rc.name, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size, i.allocation_ratio
      FROM inventories i JOIN resource_providers p ON p.id = i.resource_provider_id
      JOIN resource_classes rc ON rc.id = i.resource_class_id ORDER BY p.uuid, rc.name`),
    allocations: await q(`SELECT p.uuid, a.consumer_id, rc.name, a.used FROM allocations a
      JOIN resource_providers p ON p.id = a.resource_provider_id
      JOIN resource_classes rc ON rc.id = a.resource_class_id ORDER BY a.consumer_id, p.uuid, rc.name`),
    traits: await q(`SELECT p.uuid, t.name FROM resource_provider_traits rpt
      JOIN resource_providers p ON p.id = rpt.resource_provider_id JOIN traits t ON t.id = rpt.trait_id ORDER BY p.uuid, t.name`),
    aggregates: await q(`SELECT p.uuid, a.uuid AS aggregate FROM resource_provider_aggregates rpa
      JOIN resource_providers p ON p.id = rpa.resource_provider_id JOIN placement_aggregates a ON a.id = rpa.aggregate_id
      ORDER BY p.uuid, a.uuid`),
    // Rows the joins above would hide: links to a provider, class or trait that is gone.
    orphans: await q(`SELECT
      (SELECT count(*) FROM inventories WHERE resource_provider_id NOT IN (SELECT id FROM resource_providers)
        OR resource_class_id NOT IN (SELECT id FROM resource_classes)) AS inventories,
      (SELECT count(*) FROM allocations WHERE resource_provider_id NOT IN (SELECT id FROM resource_providers)) AS allocations,
      (SELECT count(*) FROM resource_provider_traits WHERE resource_provider_id NOT IN (SELECT id FROM resource_providers)
        OR trait_id NOT IN (SELECT id FROM traits)) AS traits,
      (SELECT count(*) FROM resource_provider_aggregates WHERE resource_provider_id NOT IN (SELECT id FROM resource_providers)) AS aggregates`),
    customClasses: await q('SELECT id, name FROM resource_classes WHERE id >= 10000 ORDER BY id'),
    customTraits: await q("SELECT name FROM traits WHERE name LIKE 'CUSTOM%' ORDER BY name"),
    consumers: await q(`SELECT c.uuid, c.generation, pr.external_id AS project, u.external_id AS user, ct.name AS type
      FROM consumers c JOIN projects pr ON pr.id = c.project_id JOIN users u ON u.id = c.user_id
      LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id ORDER BY c.uuid`),
  };
}

/** Random write requests, with generations read from the live app (fresh, stale or wrong). */
class Generator {
  constructor(
    private readonly r: Random,
    private readonly pair: Pair,
  ) {}

  private some<T>(list: readonly T[], max: number): T[] {
    const n = 1 + this.r.below(max);
    return [...new Set(Array.from({ length: n }, () => this.r.pick(list)))];
  }

  private provider(): string {
    return this.r.chance(0.04) ? MISSING_PROVIDER : this.r.pick(PROVIDERS);
  }
  private resourceClass(): string {
    return this.r.chance(0.04) ? UNKNOWN_CLASS : this.r.pick(CLASSES);
  }

  private amount(): number {
    const r = this.r.next();
    if (r < 0.6) return 1 + this.r.below(4);
    if (r < 0.9) return 1 + this.r.below(16);
    return 1 + this.r.below(200); // over capacity or max_unit
  }

  private resources(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const rc of this.some(CLASSES, 2)) out[this.r.chance(0.05) ? UNKNOWN_CLASS : rc] = this.amount();
    return out;
  }

  private allocationsDict(allowEmpty: boolean): Record<string, { resources: Record<string, number> }> {
    if (allowEmpty && this.r.chance(0.12)) return {};
    const out: Record<string, { resources: Record<string, number> }> = {};
    for (let i = 0, n = 1 + this.r.below(2); i < n; i += 1) out[this.provider()] = { resources: this.resources() };
    return out;
  }

  private async consumerGeneration(uuid: string): Promise<number | null> {
    const res = await this.pair.both({ method: 'GET', path: `/allocations/${uuid}`, version: 'latest' }, 'read consumer');
    const current = (res.body as { consumer_generation?: number | null }).consumer_generation ?? null;
    const r = this.r.next();
    if (r < 0.75) return current;
    if (r < 0.85) return null;
    if (r < 0.95) return current === null ? 0 : current - 1;
    return (current ?? 0) + 1;
  }

  private async providerGeneration(uuid: string): Promise<number> {
    const res = await this.pair.both({ method: 'GET', path: `/resource_providers/${uuid}`, version: 'latest' }, 'read provider');
    const current = res.status === 200 ? (res.body as { generation: number }).generation : 0;
    return this.r.chance(0.85) ? current : current + this.r.pick([-1, 1, 2]);
  }

  private async consumerPart(uuid: string, version: string, allowEmpty: boolean): Promise<Record<string, unknown>> {
    const part: Record<string, unknown> = {
      allocations: this.allocationsDict(allowEmpty),
      project_id: this.r.pick(PROJECTS),
      user_id: this.r.pick(USERS),
    };
    if (version === '1.28' || version === '1.33' || version === '1.38' || version === 'latest') {
      part.consumer_generation = await this.consumerGeneration(uuid);
    }
    if (version === '1.38' || version === 'latest') part.consumer_type = this.r.pick(TYPES);
    return part;
  }

  private inventoryRecords(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const rc of this.some(CLASSES, 3)) {
      const total = this.r.pick([1, 4, 8, 16, 64]);
      const rec: Record<string, number> = { total };
      if (this.r.chance(0.3)) rec.reserved = this.r.below(total + 1);
      if (this.r.chance(0.3)) rec.allocation_ratio = this.r.pick([0.5, 1, 1.5, 4]);
      if (this.r.chance(0.15)) rec.max_unit = this.r.pick([2, 8, 64]);
      if (this.r.chance(0.1)) rec.step_size = this.r.pick([1, 2]);
      out[this.r.chance(0.03) ? UNKNOWN_CLASS : rc] = rec;
    }
    return out;
  }

  /** Providers, resource classes and traits themselves: create, update, delete. */
  private async catalogueChange(): Promise<Request> {
    const r = this.r.next();
    if (r < 0.3) {
      const rp = this.provider();
      const version = this.r.pick(['1.0', '1.14', '1.36', '1.37', 'latest']);
      const name = this.r.pick([`diff-${rp}`, `diff-${rp}`, `diff-${this.r.pick(PROVIDERS)}`, `renamed-${this.r.below(3)}`]);
      const body: Record<string, unknown> = { name };
      if (version !== '1.0' || this.r.chance(0.1)) {
        const parent = this.r.next();
        if (parent < 0.2) body.parent_provider_uuid = null;
        else if (parent < 0.85) body.parent_provider_uuid = this.provider();
      }
      return { method: 'PUT', path: `/resource_providers/${rp}`, body, version };
    }
    if (r < 0.42) return { method: 'DELETE', path: `/resource_providers/${this.provider()}`, version: this.r.pick(['1.0', 'latest']) };
    if (r < 0.55) {
      // Brings deleted providers back, sometimes as children.
      const rp = this.r.pick(PROVIDERS);
      const body: Record<string, unknown> = { name: `diff-${rp}`, uuid: rp };
      if (this.r.chance(0.4)) body.parent_provider_uuid = this.provider();
      return { method: 'POST', path: '/resource_providers', body, version: 'latest' };
    }
    if (r < 0.65) return { method: 'POST', path: '/resource_classes', body: { name: this.r.pick(CUSTOM_CLASSES) }, version: 'latest' };
    if (r < 0.75) {
      const name = this.r.pick(CUSTOM_CLASSES);
      if (this.r.chance(0.5)) return { method: 'PUT', path: `/resource_classes/${name}`, version: this.r.pick(['1.7', 'latest']) };
      const from = this.r.chance(0.1) ? this.r.pick(['VCPU', UNKNOWN_CLASS]) : name;
      return { method: 'PUT', path: `/resource_classes/${from}`, body: { name: this.r.pick(CUSTOM_CLASSES) }, version: '1.6' };
    }
    if (r < 0.85) {
      const name = this.r.chance(0.15) ? this.r.pick(['VCPU', UNKNOWN_CLASS]) : this.r.pick(CUSTOM_CLASSES);
      return { method: 'DELETE', path: `/resource_classes/${name}`, version: 'latest' };
    }
    if (r < 0.92) return { method: 'PUT', path: `/traits/${this.r.pick(CUSTOM_TRAITS)}`, version: 'latest' };
    if (this.r.chance(0.5)) {
      // Puts the custom trait in use first (compared too), so deleting it is refused.
      await this.pair.both({ method: 'PUT', path: '/traits/CUSTOM_TONE', version: 'latest' }, 'trait in use');
      const rp = this.r.pick(PROVIDERS);
      const body = { resource_provider_generation: await this.providerGeneration(rp), traits: ['CUSTOM_TONE'] };
      await this.pair.both({ method: 'PUT', path: `/resource_providers/${rp}/traits`, body, version: 'latest' }, 'trait in use');
    }
    // Mostly CUSTOM_TONE, the custom trait providers get (in use or not); a standard one; an unknown one.
    const trait = this.r.pick(['CUSTOM_TONE', 'CUSTOM_TONE', 'CUSTOM_TTWO', 'STORAGE_DISK_SSD', 'CUSTOM_NOTRAIT']);
    return { method: 'DELETE', path: `/traits/${trait}`, version: 'latest' };
  }

  async next(): Promise<Request> {
    if (this.r.chance(0.2)) return await this.catalogueChange();
    const r = this.r.next();
    if (r < 0.34) {
      const version = this.r.pick(VERSIONS);
      const uuid = this.r.pick(CONSUMERS);
      if (version === '1.0' || version === '1.8') {
        const allocations = Object.entries(this.allocationsDict(false)).map(([rp, { resources }]) => ({
          resource_provider: { uuid: rp },
          resources,
        }));
        const body: Record<string, unknown> = { allocations };
        if (version === '1.8') Object.assign(body, { project_id: this.r.pick(PROJECTS), user_id: this.r.pick(USERS) });
        return { method: 'PUT', path: `/allocations/${uuid}`, body, version };
      }
      const body = await this.consumerPart(uuid, version, true);
      if (this.r.chance(0.25)) {
        // Rewrite what the consumer holds, maybe shrunk: over-capacity relief lets that through.
        const held = await this.pair.both({ method: 'GET', path: `/allocations/${uuid}`, version: 'latest' }, 'read consumer');
        const current = (held.body as { allocations: Record<string, { resources: Record<string, number> }> }).allocations;
        if (Object.keys(current).length > 0) {
          const shrink = this.r.chance(0.3);
          body.allocations = Object.fromEntries(
            Object.entries(current).map(([rp, { resources }]) => [
              rp,
              {
                resources: Object.fromEntries(Object.entries(resources).map(([rc, n]) => [rc, shrink ? Math.max(1, n - 1) : n])),
              },
            ]),
          );
        }
      }
      return { method: 'PUT', path: `/allocations/${uuid}`, body, version };
    }
    if (r < 0.52) {
      const version = this.r.pick(['1.13', '1.28', '1.38', 'latest']);
      const body: Record<string, unknown> = {};
      for (const uuid of this.some(CONSUMERS, 3)) body[uuid] = await this.consumerPart(uuid, version, true);
      return { method: 'POST', path: '/allocations', body, version };
    }
    if (r < 0.62) return { method: 'DELETE', path: `/allocations/${this.r.pick(CONSUMERS)}`, version: 'latest' };
    if (r < 0.72) {
      const rp = this.r.pick(PROVIDERS);
      return {
        method: 'PUT',
        path: `/resource_providers/${rp}/inventories`,
        version: this.r.pick(['1.0', '1.26', 'latest']),
        body: { resource_provider_generation: await this.providerGeneration(rp), inventories: this.inventoryRecords() },
      };
    }
    if (r < 0.77) {
      const rp = this.r.pick(r < 0.755 ? PROVIDERS : [MISSING_PROVIDER]);
      const path = `/resource_providers/${rp}/aggregates`;
      const aggregates = this.some(AGGREGATES, 3);
      if (this.r.chance(0.3)) return { method: 'PUT', path, version: '1.1', body: aggregates };
      return {
        method: 'PUT',
        path,
        version: 'latest',
        body: { resource_provider_generation: await this.providerGeneration(rp), aggregates },
      };
    }
    if (r < 0.8) {
      const rp = this.r.pick(PROVIDERS);
      const path = `/resource_providers/${rp}/traits`;
      if (this.r.chance(0.2)) return { method: 'DELETE', path, version: 'latest' };
      const traits = this.some(TRAITS, 3).map((name) => (this.r.chance(0.05) ? 'CUSTOM_NO_SUCH_TRAIT' : name));
      return { method: 'PUT', path, version: 'latest', body: { resource_provider_generation: await this.providerGeneration(rp), traits } };
    }
    if (r < 0.86) {
      const rp = this.r.pick(PROVIDERS);
      const rc = this.resourceClass();
      const verb = this.r.pick(['PUT', 'POST', 'DELETE'] as const);
      const generation = await this.providerGeneration(rp);
      if (verb === 'DELETE') return { method: 'DELETE', path: `/resource_providers/${rp}/inventories/${rc}`, version: 'latest' };
      const record = { ...(this.inventoryRecords()[CLASSES[0]!] ?? { total: 8 }), resource_provider_generation: generation };
      if (verb === 'POST')
        return {
          method: 'POST',
          path: `/resource_providers/${rp}/inventories`,
          version: 'latest',
          body: { ...record, resource_class: rc },
        };
      return { method: 'PUT', path: `/resource_providers/${rp}/inventories/${rc}`, version: 'latest', body: record };
    }
    const version = this.r.pick(['1.30', '1.38', 'latest']);
    const inventories: Record<string, unknown> = {};
    for (const rp of this.some(PROVIDERS, 2)) {
      inventories[this.r.chance(0.03) ? MISSING_PROVIDER : rp] = {
        resource_provider_generation: await this.providerGeneration(rp),
        inventories: this.inventoryRecords(),
      };
    }
    const allocations: Record<string, unknown> = {};
    if (this.r.chance(0.85)) {
      for (const uuid of this.some(CONSUMERS, 2)) allocations[uuid] = await this.consumerPart(uuid, version, true);
    }
    return { method: 'POST', path: '/reshaper', version, body: { inventories, allocations } };
  }
}

describe('the write path answers and stores exactly as the frozen pre-issue-13 one', () => {
  let pair: Pair;
  beforeAll(async () => {
    const live = await makeTestApp();
    const old = await makeTestApp();
    pair = new Pair(live, old, createOldWritePathApp(old.deps));
  });
  afterAll(() => {
    pair.live.close();
    pair.old.close();
  });

  async function seed(rnd: () => number): Promise<void> {
    await pair.both({ method: 'PUT', path: '/resource_classes/CUSTOM_DIFF', version: 'latest' }, 'seed');
    await pair.both({ method: 'PUT', path: '/traits/CUSTOM_TONE', version: 'latest' }, 'seed');
    for (const rp of PROVIDERS) {
      const body: Record<string, unknown> = { name: `diff-${rp}`, uuid: rp };
      if (rp === CHILD) body.parent_provider_uuid = PROVIDERS[0];
      expect((await pair.both({ method: 'POST', path: '/resource_providers', body, version: 'latest' }, 'seed')).status).toBe(200);
      const inventories: Record<string, { total: number }> = {};
      for (const rc of CLASSES) if (rnd() < 0.8) inventories[rc] = { total: [4, 8, 16][Math.floor(rnd() * 3)]! };
      await pair.both(
        {
          method: 'PUT',
          path: `/resource_providers/${rp}/inventories`,
          version: 'latest',
          body: { resource_provider_generation: 0, inventories },
        },
        'seed',
      );
    }
  }

  async function reset(): Promise<void> {
    for (const app of [pair.live, pair.old]) {
      await app.deps.store.client.batch(
        [
          'DELETE FROM allocations',
          'DELETE FROM consumers',
          'DELETE FROM inventories',
          'DELETE FROM resource_provider_traits',
          'DELETE FROM resource_provider_aggregates',
          'DELETE FROM resource_providers',
          'DELETE FROM resource_classes WHERE id >= 10000',
          "DELETE FROM traits WHERE name LIKE 'CUSTOM%'",
        ],
        'write',
      );
    }
  }

  const statuses = new Map<string, number>();
  for (let first = 0; first < SEQUENCES; first += SEQUENCES_PER_TEST) {
    const last = Math.min(SEQUENCES, first + SEQUENCES_PER_TEST);
    it(`random sequences ${first}-${last - 1} of ${STEPS} writes`, async () => {
      for (let s = first; s < last; s += 1) {
        const seedValue = FIRST_SEED + s;
        const rnd = mulberry32(seedValue);
        await reset();
        await seed(rnd);
        const gen = new Generator(random(rnd), pair);
        for (let step = 0; step < STEPS; step += 1) {
          const req = await gen.next();
          const res = await pair.both(req, `seed ${seedValue} step ${step}`);
          const key = `${req.method} ${req.path.replace(/[0-9a-f-]{36}/g, '{u}').replace(/[A-Z_]+$/, '{rc}')} ${res.status}`;
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
        }
        expect(await dump(pair.live), `state after seed ${seedValue}`).toEqual(await dump(pair.old));
      }
    }, 120_000);
  }

  // Capacity's edges, which whole ratios never reach: (total - reserved) * allocation_ratio with a
  // fraction, floored (never rounded), against units of step_size between min_unit and max_unit.
  // Each case fills one inventory claim by claim to one past its capacity, tries amounts the units
  // refuse, then shrinks the ratio to half a unit below and above what is used. (total - reserved) is a
  // power of two, so every capacity here is exact in binary.
  const EDGES = [
    { total: 3, reserved: 0, allocation_ratio: 1.5, step_size: 1, min_unit: 1, max_unit: 3 }, // 4.5
    { total: 5, reserved: 1, allocation_ratio: 2.625, step_size: 3, min_unit: 3, max_unit: 9 }, // 10.5
    { total: 11, reserved: 3, allocation_ratio: 0.6875, step_size: 2, min_unit: 2, max_unit: 4 }, // 5.5
    { total: 1, reserved: 0, allocation_ratio: 0.5, step_size: 1, min_unit: 1, max_unit: 1 }, // 0.5
    { total: 20, reserved: 4, allocation_ratio: 0.40625, step_size: 1, min_unit: 2, max_unit: 5 }, // 6.5
    { total: 6, reserved: 2, allocation_ratio: 1.875, step_size: 7, min_unit: 7, max_unit: 7 }, // 7.5
  ];
  it('inventories with fractional allocation ratios, reserved and step sizes: claims up to capacity and past it, units, shrinking', async () => {
    const rp = PROVIDERS[0]!;
    const consumer = (i: number) => uuidOf(4, i);
    const claim = (i: number, amount: number) => ({
      method: 'PUT',
      path: `/allocations/${consumer(i)}`,
      version: 'latest',
      body: {
        allocations: { [rp]: { resources: { VCPU: amount } } },
        project_id: 'p-one',
        user_id: 'u-one',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    const inventory = async (record: Record<string, number>) => {
      const generation = (
        (await pair.both({ method: 'GET', path: `/resource_providers/${rp}`, version: 'latest' }, 'edge')).body as {
          generation: number;
        }
      ).generation;
      const body = { resource_provider_generation: generation, inventories: { VCPU: record } };
      return pair.both(
        { method: 'PUT', path: `/resource_providers/${rp}/inventories`, version: 'latest', body },
        `edge ${JSON.stringify(record)}`,
      );
    };
    for (const edge of EDGES) {
      const where = `edge ${JSON.stringify(edge)}`;
      await reset();
      await pair.both({ method: 'POST', path: '/resource_providers', body: { name: 'edge', uuid: rp }, version: 'latest' }, where);
      expect((await inventory(edge)).status, where).toBe(200);
      const capacity = Math.floor((edge.total - edge.reserved) * edge.allocation_ratio);
      // The smallest amount the units allow: a multiple of step_size, at least min_unit.
      const unit = Math.ceil(edge.min_unit / edge.step_size) * edge.step_size;
      let used = 0;
      const granted: number[] = [];
      let n = 0;
      const statuses: number[] = [];
      // On the empty inventory, amounts the units refuse (not a step, below min_unit, above max_unit),
      // and max_unit itself where it fits.
      const refused = [edge.step_size > 1 ? unit + 1 : 0, edge.min_unit - 1, edge.max_unit + edge.step_size];
      for (const amount of refused.filter((a) => a > 0)) {
        expect((await pair.both(claim(n++, amount), where)).status, `${where} amount ${amount}`).toBe(409);
      }
      if (edge.max_unit <= capacity) {
        expect((await pair.both(claim(n, edge.max_unit), where)).status, `${where} max_unit`).toBe(204);
        await pair.both({ method: 'DELETE', path: `/allocations/${consumer(n++)}`, version: 'latest' }, where);
      }
      // Claim by claim, one unit each, until one is refused.
      for (;;) {
        const res = await pair.both(claim(n, unit), where);
        statuses.push(res.status);
        if (res.status !== 204) break;
        granted.push(n++);
        used += unit;
      }
      expect(used, where).toBe(Math.floor(capacity / unit) * unit);
      expect(statuses.at(-1), where).toBe(409);
      // Release one claim, claim its amount again at exactly the capacity that is left.
      if (used > 0) {
        const again = granted[0]!;
        expect((await pair.both({ method: 'DELETE', path: `/allocations/${consumer(again)}`, version: 'latest' }, where)).status).toBe(204);
        expect((await pair.both(claim(again, unit), where)).status, where).toBe(204);
      }
      // The ratio shrunk to half a unit below what is used (accepted, as upstream: the provider is then over
      // capacity), where a claim is refused, then to half a unit above it, where a claim of one unit still is.
      const span = edge.total - edge.reserved;
      for (const shrunk of used > 0 ? [used - 0.5, used + 0.5] : [used + 0.5]) {
        expect((await inventory({ ...edge, allocation_ratio: shrunk / span })).status, `${where} shrunk to ${shrunk}`).toBe(200);
        expect((await pair.both(claim(n++, unit), where)).status, `${where} shrunk to ${shrunk}`).toBe(409);
      }
      expect(await dump(pair.live), where).toEqual(await dump(pair.old));
    }
  }, 60_000);

  it('reaches successes and each kind of refusal', () => {
    // The generator must reach successes and each kind of refusal, or the comparison proves little.
    const seen = [...statuses.keys()];
    for (const expected of [
      'PUT /allocations/{u} 204',
      'PUT /allocations/{u} 409',
      'PUT /allocations/{u} 400',
      'POST /allocations 204',
      'POST /allocations 409',
      'DELETE /allocations/{u} 204',
      'DELETE /allocations/{u} 404',
      'POST /reshaper 204',
      'POST /reshaper 409',
      'POST /reshaper 400',
      'PUT /resource_providers/{u}/inventories 200',
      'PUT /resource_providers/{u}/inventories 409',
      'PUT /resource_providers/{u}/traits 200',
      'PUT /resource_providers/{u}/traits 409',
      'PUT /resource_providers/{u}/traits 400',
      'DELETE /resource_providers/{u}/traits 204',
      'PUT /resource_providers/{u}/aggregates 200',
      'PUT /resource_providers/{u}/aggregates 409',
      'PUT /resource_providers/{u}/aggregates 404',
      'PUT /resource_providers/{u} 200',
      'PUT /resource_providers/{u} 400',
      'PUT /resource_providers/{u} 404',
      'PUT /resource_providers/{u} 409',
      'DELETE /resource_providers/{u} 204',
      'DELETE /resource_providers/{u} 404',
      'DELETE /resource_providers/{u} 409',
      'POST /resource_classes 201',
      'POST /resource_classes 409',
      'PUT /resource_classes/{rc} 200',
      'PUT /resource_classes/{rc} 201',
      'PUT /resource_classes/{rc} 204',
      'PUT /resource_classes/{rc} 400',
      'PUT /resource_classes/{rc} 404',
      'PUT /resource_classes/{rc} 409',
      'DELETE /resource_classes/{rc} 204',
      'DELETE /resource_classes/{rc} 400',
      'DELETE /resource_classes/{rc} 404',
      'DELETE /resource_classes/{rc} 409',
      'DELETE /traits/{rc} 204',
      'DELETE /traits/{rc} 400',
      'DELETE /traits/{rc} 404',
      'DELETE /traits/{rc} 409',
    ]) {
      expect(seen, expected).toContain(expected);
    }
  });
});
