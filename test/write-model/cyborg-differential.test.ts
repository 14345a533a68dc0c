// Differential test of the accelerator write path: random sequences of Cyborg
// operations (host reports, programmed reports, device profiles, ARQ create,
// bind, unbind and delete, attributes, device enable/disable, the bind job,
// Nova event delivery and the sweeps) run against the frozen pre-issue-13
// implementation (test/write-model/old-cyborg/) and the live one, on two
// databases with the same clock and the same uuid sequence. Every response
// (status and body) and the accelerator tables, row for row, must be identical.
import type { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppEnv } from '../../src/http/env.js';
import { consume } from '../../src/jobs/consume.js';
import type { JobMessage } from '../../src/jobs/messages.js';
import { listOutbox } from '../../src/jobs/outbox.js';
import { JobRegistry } from '../../src/jobs/registry.js';
import { runSweeps } from '../../src/jobs/sweeps.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';
import { consumeOld, createOldCyborgApp, oldCyborgJobs, runSweepsOld } from './old-cyborg/app.js';
import { mulberry32, random, type Random } from '../helpers/random.js';

const SEQUENCES = Number(process.env.CYBORG_DIFF_SEQUENCES ?? 24);
const STEPS = Number(process.env.CYBORG_DIFF_STEPS ?? 60);
const SEQUENCES_PER_TEST = 8;
const FIRST_SEED = Number(process.env.CYBORG_DIFF_SEED ?? 5000);

const uuidOf = (kind: number, i: number) => `${String(kind).repeat(8)}-0000-4000-8000-${String(i).padStart(12, '0')}`;
const HOSTS = ['cn-a', 'cn-b'];
const ROOTS = [uuidOf(1, 0), uuidOf(1, 1)];
const DEVICE_RPS = [uuidOf(1, 10), uuidOf(1, 11), uuidOf(1, 12)]; // two under cn-a, one under cn-b
const RP_HOST = ['cn-a', 'cn-a', 'cn-b'];
const INSTANCES = [0, 1, 2, 3].map((i) => uuidOf(4, i));
const PROFILES = ['dp-one', 'dp-two', 'dp-three'];
const START_MS = Date.parse('2026-01-01T00:00:00Z');

interface Side {
  t: TestApp;
  acc(req: Request): Promise<Response>;
  consume(msg: JobMessage): Promise<unknown>;
  sweeps(): Promise<void>;
}

interface Request {
  method: string;
  path: string;
  body?: unknown;
  version?: string;
}

async function side(old: boolean): Promise<Side> {
  const t = await makeTestApp({ NOVA_URL: 'http://nova.test/v2.1' });
  let nowMs = START_MS;
  let ids = 0;
  t.deps.clock = () => new Date(nowMs);
  t.deps.newId = () => uuidOf(7, ++ids);
  (t as TestApp & { tick(ms: number): void }).tick = (ms) => {
    nowMs += ms;
  };
  (t as TestApp & { reset(): void }).reset = () => {
    nowMs = START_MS;
    ids = 0;
  };
  // Nova accepts an event unless its instance is the last one, which it refuses (retry, then dead letter).
  t.deps.novaFetch = async (_url, init) => {
    const { events } = JSON.parse(String(init?.body)) as { events: { server_uuid: string }[] };
    return events[0]?.server_uuid === INSTANCES[3] ? new Response('no', { status: 500 }) : Response.json({ events });
  };
  const headers = (req: Request) => {
    const h: Record<string, string> = { 'x-auth-token': 'admin', 'openstack-api-version': `accelerator ${req.version ?? '2.0'}` };
    if (req.body !== undefined) h['content-type'] = 'application/json';
    return h;
  };
  const init = (req: Request) => ({
    method: req.method,
    headers: headers(req),
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
  });
  if (!old) {
    return {
      t,
      acc: async (req) => t.app.request(`/accelerator/v2${req.path}`, init(req)),
      consume: (msg) => consume(t.deps, msg),
      sweeps: () => runSweeps(t.deps),
    };
  }
  t.deps.jobHandlers = new JobRegistry([oldCyborgJobs]);
  const app: Hono<AppEnv> = createOldCyborgApp(t.deps);
  return {
    t,
    acc: async (req) => app.request(`/v2${req.path}`, init(req)),
    consume: (msg) => consumeOld(t.deps, msg),
    sweeps: () => runSweepsOld(t.deps),
  };
}

const TABLES = ['device_profiles', 'devices', 'deployables', 'attributes', 'attach_handles', 'accelerator_requests', 'cyborg_outbox'];

async function dump(t: TestApp): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of TABLES) {
    out[table] = (await t.deps.store.client.execute(`SELECT * FROM ${table} ORDER BY id`)).rows.map((r) => ({ ...r }));
  }
  return out;
}

class Pair {
  constructor(
    readonly live: Side,
    readonly old: Side,
  ) {}

  /** Sends `req` to both; returns the live answer after checking the old one says the same. */
  async both(req: Request, where: string): Promise<{ status: number; body: unknown }> {
    const [a, b] = [await this.live.acc(req), await this.old.acc(req)];
    const [ta, tb] = [await a.text(), await b.text()];
    expect({ status: a.status, body: ta }, `${where}: ${req.method} ${req.path} ${JSON.stringify(req.body)}`).toEqual({
      status: b.status,
      body: tb,
    });
    return { status: a.status, body: ta ? (JSON.parse(ta) as unknown) : null };
  }

  /** Runs every pending outbox row, oldest first, on both, as the queue would. */
  async runJobs(where: string): Promise<void> {
    for (let round = 0; round < 5; round++) {
      const pending = async (s: Side) =>
        (await listOutbox(s.t.deps.store.db, { state: 'pending' }))
          .filter((r) => r.nextAttemptAt <= s.t.deps.clock().getTime())
          .reverse()
          .map((r) => ({ type: r.topic, outboxId: r.id }) as JobMessage);
      const [a, b] = [await pending(this.live), await pending(this.old)];
      expect(a, `${where}: pending jobs`).toEqual(b);
      if (!a.length) return;
      for (const msg of a) {
        const [ra, rb] = [await this.live.consume(msg), await this.old.consume(msg)];
        expect(ra, `${where}: job ${JSON.stringify(msg)}`).toEqual(rb);
      }
    }
  }

  tick(ms: number): void {
    for (const s of [this.live, this.old]) (s.t as TestApp & { tick(ms: number): void }).tick(ms);
  }
}

class Generator {
  constructor(
    private readonly r: Random,
    private readonly pair: Pair,
  ) {}

  private async list<T>(path: string, key: string): Promise<T[]> {
    const res = await this.pair.both({ method: 'GET', path }, 'read');
    return (res.body as Record<string, T[]>)[key] ?? [];
  }

  private report(host: string): unknown {
    const rps = DEVICE_RPS.filter((_, i) => RP_HOST[i] === host);
    const devices = [];
    const keys = ['0000:0c:00.0', '0000:0d:00.0', '0000:0e:00.0'].filter(() => this.r.chance(0.6));
    for (const key of keys) {
      const deployables = [];
      for (let d = 0, n = this.r.below(3); d < n; d++) {
        // Names repeat now and then, as a sloppy agent might send them.
        const name = `${host}-${key.slice(5, 7)}-${this.r.below(2)}`;
        const handles = [];
        for (let h = 0, m = this.r.below(4); h < m; h++)
          handles.push({ type: 'PCI', info: { bus: key.slice(5, 7), function: String(this.r.below(4)) } });
        deployables.push({
          name,
          num_accelerators: handles.length,
          rp_uuid: this.r.chance(0.8) ? this.r.pick(rps) : null,
          driver_name: this.r.chance(0.5) ? 'intel' : null,
          bitstream_id: this.r.chance(0.3) ? this.r.pick(['bs-1', 'bs-2']) : null,
          attach_handles: handles,
        });
      }
      const device: Record<string, unknown> = { key, type: 'FPGA', vendor: '0x8086', model: this.r.pick(['a10', 's10']), deployables };
      if (this.r.chance(0.2)) device.status = this.r.pick(['enabled', 'maintaining']);
      devices.push(device);
    }
    return { devices };
  }

  private group(): Record<string, string> {
    const group: Record<string, string> = { 'resources:FPGA': String(1 + this.r.below(2)) };
    if (this.r.chance(0.4)) group['trait:CUSTOM_FPGA_A'] = this.r.pick(['required', 'forbidden']);
    if (this.r.chance(0.2)) group['accel:bitstream_id'] = this.r.pick(['bs-1', 'bs-2']);
    if (this.r.chance(0.05)) group['accel:function_id'] = 'fn-1';
    return group;
  }

  private async arqUuids(): Promise<string[]> {
    return (await this.list<{ uuid: string }>('/accelerator_requests', 'arqs')).map((a) => a.uuid);
  }

  async next(): Promise<Request | 'jobs' | 'sweep'> {
    const r = this.r.next();
    if (r < 0.12)
      return { method: 'PUT', path: `/hosts/${this.r.pick([...HOSTS, 'cn-a'])}/devices`, body: this.report(this.r.pick(HOSTS)) };
    if (r < 0.2) {
      const groups = Array.from({ length: 1 + this.r.below(2) }, () => this.group());
      const profile: Record<string, unknown> = { name: this.r.pick(PROFILES), groups };
      if (this.r.chance(0.2)) profile.uuid = uuidOf(5, this.r.below(2));
      return { method: 'POST', path: '/device_profiles', body: [profile] };
    }
    if (r < 0.25) {
      if (this.r.chance(0.5)) return { method: 'DELETE', path: `/device_profiles/${this.r.pick(PROFILES)}` };
      return { method: 'DELETE', path: `/device_profiles?value=${this.r.pick(PROFILES)},${this.r.pick(PROFILES)}` };
    }
    if (r < 0.37) {
      const body: Record<string, unknown> = { device_profile_name: this.r.chance(0.9) ? this.r.pick(PROFILES) : 'dp-none' };
      if (this.r.chance(0.15)) body.device_profile_group_id = this.r.below(3);
      return { method: 'POST', path: '/accelerator_requests', body };
    }
    if (r < 0.55) {
      const arqs = await this.arqUuids();
      const body: Record<string, unknown> = {};
      for (let i = 0, n = 1 + this.r.below(2); i < n; i++) {
        const uuid = arqs.length && this.r.chance(0.95) ? this.r.pick(arqs) : uuidOf(6, 1);
        const rp = this.r.below(DEVICE_RPS.length);
        body[uuid] = [
          { path: '/hostname', op: 'add', value: this.r.chance(0.9) ? RP_HOST[rp] : this.r.pick(HOSTS) },
          { path: '/device_rp_uuid', op: 'add', value: this.r.chance(0.95) ? DEVICE_RPS[rp] : uuidOf(6, 2) },
          { path: '/instance_uuid', op: 'add', value: this.r.pick(INSTANCES) },
        ];
      }
      return { method: 'PATCH', path: '/accelerator_requests', body };
    }
    if (r < 0.6) {
      const arqs = await this.arqUuids();
      const uuid = arqs.length && this.r.chance(0.9) ? this.r.pick(arqs) : uuidOf(6, 1);
      return { method: 'PATCH', path: `/accelerator_requests/${uuid}`, body: { [uuid]: [{ path: '/hostname', op: 'remove' }] } };
    }
    if (r < 0.66) {
      const arqs = await this.arqUuids();
      if (this.r.chance(0.3)) return { method: 'DELETE', path: `/accelerator_requests?instance=${this.r.pick(INSTANCES)}` };
      const some = arqs.length ? [this.r.pick(arqs), ...(this.r.chance(0.3) ? [this.r.pick(arqs)] : [])] : [];
      if (!some.length || this.r.chance(0.1)) some.push(uuidOf(6, 3));
      return { method: 'DELETE', path: `/accelerator_requests?arqs=${some.join(',')}` };
    }
    if (r < 0.71) {
      if (this.r.chance(0.6))
        return { method: 'POST', path: '/attributes', body: { deployable_id: String(1 + this.r.below(8)), key: 'rc', value: 'FPGA' } };
      const attrs = await this.list<{ uuid: string }>('/attributes', 'attributes');
      return { method: 'DELETE', path: `/attributes/${attrs.length ? this.r.pick(attrs).uuid : uuidOf(6, 4)}` };
    }
    if (r < 0.76) {
      const devices = await this.list<{ uuid: string }>('/devices', 'devices');
      const uuid = devices.length && this.r.chance(0.9) ? this.r.pick(devices).uuid : uuidOf(6, 5);
      return { method: 'POST', path: `/devices/${uuid}/${this.r.pick(['enable', 'disable'])}` };
    }
    if (r < 0.82) {
      const deployables = await this.list<{ uuid: string }>('/deployables', 'deployables');
      const uuid = deployables.length && this.r.chance(0.9) ? this.r.pick(deployables).uuid : uuidOf(6, 6);
      return { method: 'PUT', path: `/deployables/${uuid}/programmed`, body: { bitstream_id: this.r.pick(['bs-1', 'bs-2', null]) } };
    }
    if (r < 0.96) return 'jobs';
    return 'sweep';
  }
}

describe('the accelerator write path answers and stores exactly as the frozen pre-issue-13 one', () => {
  let pair: Pair;
  beforeAll(async () => {
    pair = new Pair(await side(false), await side(true));
  });
  afterAll(() => {
    pair.live.t.close();
    pair.old.t.close();
  });

  async function seed(): Promise<void> {
    for (const s of [pair.live, pair.old]) {
      await s.t.deps.store.client.batch(
        TABLES.map((table) => `DELETE FROM ${table}`),
        'write',
      );
      (s.t as TestApp & { reset(): void }).reset();
      const ok = async (method: string, path: string, body?: unknown) => {
        const res = await s.t.call(method, path, { body });
        if (res.status >= 300) throw new Error(`seed ${method} ${path}: ${res.status} ${await res.text()}`);
      };
      const exists = (await s.t.call('GET', `/resource_providers/${ROOTS[0]}`)).status === 200;
      if (exists) continue;
      await ok('PUT', '/traits/CUSTOM_FPGA_A');
      for (const [i, host] of HOSTS.entries()) await ok('POST', '/resource_providers', { name: host, uuid: ROOTS[i] });
      for (const [i, rp] of DEVICE_RPS.entries()) {
        await ok('POST', '/resource_providers', { name: `fpga-${i}`, uuid: rp, parent_provider_uuid: ROOTS[HOSTS.indexOf(RP_HOST[i]!)] });
        await ok('PUT', `/resource_providers/${rp}/inventories`, { resource_provider_generation: 0, inventories: { FPGA: { total: 4 } } });
        if (i !== 1) await ok('PUT', `/resource_providers/${rp}/traits`, { resource_provider_generation: 1, traits: ['CUSTOM_FPGA_A'] });
      }
    }
  }

  const statuses = new Map<string, number>();
  for (let first = 0; first < SEQUENCES; first += SEQUENCES_PER_TEST) {
    const last = Math.min(SEQUENCES, first + SEQUENCES_PER_TEST);
    it(`random sequences ${first}-${last - 1} of ${STEPS} operations`, async () => {
      for (let s = first; s < last; s += 1) {
        const seedValue = FIRST_SEED + s;
        const rnd = mulberry32(seedValue);
        await seed();
        const gen = new Generator(random(rnd), pair);
        for (let step = 0; step < STEPS; step += 1) {
          const where = `seed ${seedValue} step ${step}`;
          const op = await gen.next();
          if (op === 'jobs') {
            await pair.runJobs(where);
          } else if (op === 'sweep') {
            pair.tick(rnd() < 0.5 ? 301_000 : 61_000);
            await pair.live.sweeps();
            await pair.old.sweeps();
            await pair.runJobs(where);
          } else {
            const res = await pair.both(op, where);
            const key = `${op.method} ${op.path
              .replace(/\?.*$/, '')
              .replace(/[0-9a-f-]{36}/g, '{u}')
              .replace(/hosts\/[^/]+/, 'hosts/{h}')} ${res.status}`;
            statuses.set(key, (statuses.get(key) ?? 0) + 1);
          }
          pair.tick(1000);
        }
        await pair.runJobs(`seed ${seedValue} end`);
        for (const path of ['/accelerator_requests', '/devices', '/deployables', '/attributes', '/outbox', '/device_profiles']) {
          await pair.both({ method: 'GET', path }, `seed ${seedValue} end`);
        }
        expect(await dump(pair.live.t), `state after seed ${seedValue}`).toEqual(await dump(pair.old.t));
      }
    }, 180_000);
  }

  it('reaches successes and each kind of refusal', () => {
    const seen = [...statuses.keys()];
    for (const expected of [
      'PUT /hosts/{h}/devices 200',
      'POST /device_profiles 201',
      'POST /device_profiles 409',
      'DELETE /device_profiles/dp-one 204',
      'DELETE /device_profiles 404',
      'POST /accelerator_requests 201',
      'POST /accelerator_requests 404',
      'PATCH /accelerator_requests 202',
      'PATCH /accelerator_requests 400',
      'PATCH /accelerator_requests 404',
      'PATCH /accelerator_requests 409',
      'PATCH /accelerator_requests/{u} 202',
      'DELETE /accelerator_requests 204',
      'DELETE /accelerator_requests 404',
      'POST /attributes 201',
      'POST /attributes 400',
      'DELETE /attributes/{u} 204',
      'POST /devices/{u}/disable 200',
      'PUT /deployables/{u}/programmed 200',
      'PUT /deployables/{u}/programmed 404',
    ]) {
      expect(seen, `${expected} (seen: ${seen.sort().join('; ')})`).toContain(expected);
    }
  });
});
