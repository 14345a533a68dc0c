// Accelerator events reach Nova with the service's own Keystone identity
// (docs/keystone.md), against a real Keystone (Debian's python3-keystone under
// uwsgi, the run's shared one, test/helpers/keystone.ts) at its port issuing
// 60 s tokens ([token] expiration = 60). A small HTTP server stands in for
// nova-api's os-server-external-events: it is registered as the `compute`
// endpoint of the catalog of the project `service` (Keystone's endpoint filter:
// other files of the run add compute endpoints of their own) and checks every
// token with that Keystone, as keystonemiddleware in nova-api does, so an
// expired or revoked token really is refused with 401.
// `npm start` in keystone mode delivers events across the first token's
// expiry; in process: a revoked token (one 401, one new sign-in, delivered),
// endpoint choice by interface and region, a catalog without Nova. Then the
// settings that stop the start, and sign-in counts against the fake Keystone.
// A missing Keystone package fails the run.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendNovaEvents } from '../../src/cyborg/nova-events.js';
import { bindBody, FPGA_RP, fpgaProfile, HOST, seedHost } from '../cyborg/helpers.js';
import { FakeKeystone } from '../helpers/fake-keystone.js';
import { type KeystoneUser, keystoneEnv, novaIdentity, passwordCredentials, SERVICE_USER } from '../helpers/keystone-credentials.js';
import { freePort, keystoneMissing, sharedKeystone, type Keystone } from '../helpers/keystone.js';
import { startServer, type ServerProcess } from '../helpers/node-server.js';

const TOKEN_LIFE_S = 60;
/** The separate Nova user (PLACEMENT_NOVA_*), beside the service's own. */
const NOVA_USER: KeystoneUser = { username: 'cyborg-nova', password: 'cyborg-nova-pw', project: SERVICE_USER.project };
const ROOT = join(import.meta.dirname, '..', '..');

/** What the stand-in saw: each accepted delivery, each refused token. */
interface Delivery {
  token: string;
  user: string;
  expiresAt: number;
  events: { name: string; server_uuid: string; tag: string; status: string }[];
}

interface StandInNova {
  url: string;
  accepted: Delivery[];
  refused: string[];
  /** Keystone's verdict on `token`, as the stand-in asks it. */
  check(token: string): Promise<{ valid: true; user: string; expiresAt: number } | { valid: false; status: number }>;
  close(): Promise<void>;
}

async function startStandInNova(ks: Keystone): Promise<StandInNova> {
  const accepted: Delivery[] = [];
  const refused: string[] = [];
  const check: StandInNova['check'] = async (token) => {
    const res = await fetch(`${ks.url}/auth/tokens?nocatalog`, {
      headers: { 'x-auth-token': await ks.adminToken(), 'x-subject-token': token },
    });
    if (res.status !== 200) {
      await res.body?.cancel();
      return { valid: false, status: res.status };
    }
    const body = (await res.json()) as { token: { user: { name: string }; expires_at: string } };
    return { valid: true, user: body.token.user.name, expiresAt: Date.parse(body.token.expires_at) };
  };
  const read = async (req: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString();
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const text = await read(req);
      if (req.method !== 'POST' || req.url !== '/v2.1/os-server-external-events') {
        res.writeHead(404).end();
        return;
      }
      const token = String(req.headers['x-auth-token'] ?? '');
      const verdict = await check(token);
      if (!verdict.valid) {
        refused.push(token);
        res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': `Keystone uri="${ks.url}"` });
        res.end(
          JSON.stringify({ error: { code: 401, title: 'Unauthorized', message: 'The request you have made requires authentication.' } }),
        );
        return;
      }
      const body = JSON.parse(text) as { events: Delivery['events'] };
      accepted.push({ token, user: verdict.user, expiresAt: verdict.expiresAt, events: body.events });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ events: body.events.map((e) => ({ ...e, code: 200 })) }));
    })().catch((err: unknown) => {
      res.writeHead(500).end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v2.1`,
    accepted,
    refused,
    check,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const missing = keystoneMissing();

// The three blocks of this file run side by side: the two without Keystone need no more than
// seconds, and the first waits out a token's life.
describe.concurrent('accelerator events to Nova with a Keystone identity (real Keystone, 60 s tokens)', () => {
  let ks: Keystone;
  let nova: StandInNova;
  let dir: string;
  let dead: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    // A missing part fails the run, naming the Debian package (never a skip).
    if (missing) throw new Error(`test/keystone/nova-events.test.ts needs a real Keystone: ${missing}`);
    dir = mkdtempSync(join(tmpdir(), 'nova-events-'));
    ks = await sharedKeystone({ tokenExpirationSeconds: TOKEN_LIFE_S });
    nova = await startStandInNova(ks);
    // Where nothing listens: an endpoint the service must not pick.
    dead = `http://127.0.0.1:${await freePort()}/v2.1`;

    let project = '';
    for (const user of [SERVICE_USER, NOVA_USER]) project = (await ks.projectUser(user, ['service'])).projectId;
    // Nova in the catalog: RegionOne internal is the stand-in; RegionOne public and RegionTwo internal lead nowhere.
    await ks.json('POST', '/regions', { region: { id: 'RegionTwo' } });
    const compute = (await ks.json<{ service: { id: string } }>('POST', '/services', { service: { name: 'nova', type: 'compute' } }))
      .service.id;
    for (const [iface, region, url] of [
      ['public', 'RegionOne', dead],
      ['internal', 'RegionTwo', dead],
      ['internal', 'RegionOne', nova.url],
    ] as const) {
      const { endpoint } = await ks.json<{ endpoint: { id: string } }>('POST', '/endpoints', {
        endpoint: { service_id: compute, interface: iface, region_id: region, url },
      });
      // The project's catalog: these endpoints only (OS-EP-FILTER), whatever other files register.
      await ks.json('PUT', `/OS-EP-FILTER/projects/${project}/endpoints/${endpoint.id}`);
    }
  }, 600_000);

  afterAll(async () => {
    for (const server of servers) await server.stop();
    await nova?.close();
    await ks?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** `npm start` in keystone mode on its own database, with `env` on top. */
  async function start(name: string, env: Record<string, string>) {
    const server = await startServer(`file:${join(dir, `${name}.db`)}`, {
      ...keystoneEnv(ks.url),
      // Keystone answers in seconds on a loaded machine.
      PLACEMENT_KEYSTONE_TIMEOUT_MS: '60000',
      PLACEMENT_WORKERS: '1',
      JOBS_SWEEP_INTERVAL_MS: '200',
      NOVA_EVENT_BACKOFF_MS: '500',
      // The stand-in asks Keystone about each token before it answers: seconds on a loaded machine.
      NOVA_TIMEOUT_MS: '60000',
      ...env,
    });
    servers.push(server);
    const headers = async (extra: Record<string, string> = {}) => ({
      'x-auth-token': await ks.adminToken(),
      'content-type': 'application/json',
      ...extra,
    });
    const request = async (
      path: string,
      version: string,
      method: string,
      opts: { body?: unknown; headers?: Record<string, string> } = {},
    ) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: await headers({ 'openstack-api-version': version, ...opts.headers }),
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      });
    const api = {
      call: (method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
        request(path, 'placement 1.39', method, opts),
      acc: (method: string, path: string, opts: { body?: unknown; headers?: Record<string, string> } = {}) =>
        request(`/accelerator/v2${path}`, 'accelerator 2.0', method, opts),
    };
    await seedHost(api, 2);
    expect((await api.acc('POST', '/device_profiles', { body: fpgaProfile() })).status).toBe(201);
    /** Creates and binds one ARQ for `instance`; Nova's event follows. */
    const bind = async (instance: string) => {
      const created = await api.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'fpga-dp1' } });
      expect(created.status, await created.clone().text()).toBe(201);
      const arq = ((await created.json()) as { arqs: { uuid: string }[] }).arqs[0]!;
      const patched = await api.acc('PATCH', '/accelerator_requests', { body: bindBody(arq.uuid, instance, FPGA_RP, HOST) });
      expect(patched.status).toBe(202);
      return arq.uuid;
    };
    const outbox = async () =>
      (
        (await (await api.acc('GET', '/outbox')).json()) as {
          outbox: { topic: string; state: string; attempts: number; last_error: string | null; payload: { instanceUuid?: string } }[];
        }
      ).outbox;
    return { server, api, bind, outbox };
  }

  /** The Nova identity of the `cyborg-nova` user, in process (as makeDeps builds it). */
  const novaUser = (interfaces: string[], region?: string, now?: () => number) =>
    novaIdentity(ks.url, { credentials: passwordCredentials(NOVA_USER), timeoutMs: 60_000, interfaces, region }, undefined, now);

  /**
   * The first delivery Nova accepted for `instance`. At least once: a delivery
   * Nova took but answered after NOVA_TIMEOUT_MS is sent again, so one event may arrive twice.
   */
  async function deliveredFor(instance: string, timeoutMs = 180_000): Promise<Delivery> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = nova.accepted.find((d) => d.events.some((e) => e.server_uuid === instance));
      if (found) return found;
      if (Date.now() > deadline)
        throw new Error(`Nova got no event for ${instance}; accepted ${nova.accepted.length}, refused ${nova.refused.length}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  // The one test that makes Nova refuse a token runs first, alone in this block (the blocks
  // beside it never reach Nova); the rest run side by side (the first of them waits out a
  // token's life, the others need no more than a minute).
  it.sequential(
    'signs in again once when Nova refuses a revoked token, and delivers in the same attempt',
    { timeout: 600_000 },
    async () => {
      // The service's clock stands still: the token never looks due for renewal, however slow
      // Keystone is on a loaded machine, so only Nova's 401 can make the service sign in again.
      const frozen = Date.now();
      const identity = novaUser(['internal', 'public'], 'RegionOne', () => frozen);
      const held = await identity.access();
      // Revoked behind the service's back.
      const revoked = await ks.api('DELETE', '/auth/tokens', undefined, { 'x-subject-token': held.token! });
      expect(revoked.status).toBe(204);
      const refusedBefore = nova.refused.length;
      const result = await sendNovaEvents(
        identity,
        { timeoutMs: 60_000, fetch },
        {
          instanceUuid: '0d7a3c1e-0000-4000-8000-000000000031',
          events: [{ arqUuid: '0d7a3c1e-0000-4000-8000-000000000032', status: 'completed' }],
        },
      );
      expect(result).toEqual({ delivered: true });
      expect(nova.refused.slice(refusedBefore)).toEqual([held.token]);
      const got = nova.accepted.filter((d) => d.events[0]!.server_uuid === '0d7a3c1e-0000-4000-8000-000000000031');
      expect(got).toHaveLength(1);
      expect(got[0]!.token).not.toBe(held.token);
      expect(got[0]!.user).toBe('cyborg-nova');
    },
  );

  it.concurrent(
    'sends each event with a token of the PLACEMENT_NOVA_* user to the catalog endpoint, renewed before it expires',
    { timeout: 600_000 },
    async () => {
      const svc = await start('own-user', {
        PLACEMENT_NOVA_USERNAME: NOVA_USER.username,
        PLACEMENT_NOVA_PASSWORD: NOVA_USER.password,
        PLACEMENT_NOVA_PROJECT_NAME: NOVA_USER.project,
        PLACEMENT_NOVA_REGION_NAME: 'RegionOne',
      });
      // Refusals before this test (the revoked token's, above); the tests beside it send none.
      const refusedBefore = nova.refused.length;
      const instances = [
        '0d7a3c1e-0000-4000-8000-000000000001',
        '0d7a3c1e-0000-4000-8000-000000000002',
        '0d7a3c1e-0000-4000-8000-000000000003',
      ];

      // 1. The first event: RegionOne's internal endpoint (not public, not RegionTwo), the Nova user's token.
      const arq1 = await svc.bind(instances[0]!);
      const first = await deliveredFor(instances[0]!);
      expect(first.user).toBe('cyborg-nova');
      expect(first.events).toEqual([{ name: 'accelerator-request-bound', server_uuid: instances[0], tag: arq1, status: 'completed' }]);
      expect(nova.refused.slice(refusedBefore)).toEqual([]);

      // 2. After that token's expiry, Keystone (and so Nova) refuses it ...
      const waitMs = first.expiresAt + 2_000 - Date.now();
      expect(waitMs).toBeLessThanOrEqual(TOKEN_LIFE_S * 1000 + 2_000);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, waitMs)));
      expect(await nova.check(first.token)).toMatchObject({ valid: false, status: 404 });

      // ... and the next event carries a new token: renewed before it expired, never sent expired.
      await svc.bind(instances[1]!);
      const second = await deliveredFor(instances[1]!);
      expect(second.token).not.toBe(first.token);
      expect(second.user).toBe('cyborg-nova');
      expect(second.events[0]!.server_uuid).toBe(instances[1]);
      expect(nova.refused.slice(refusedBefore)).toEqual([]);

      const events = (await svc.outbox()).filter((row) => row.topic === 'nova-event');
      expect(events).toHaveLength(2);
      for (const row of events) expect(row.state).toBe('done');
    },
  );

  it.concurrent(
    "uses the service's own Keystone user without PLACEMENT_NOVA_*, and NOVA_URL over the catalog",
    { timeout: 600_000 },
    async () => {
      // The catalog's public endpoint leads nowhere: NOVA_URL wins; the token is still Keystone's.
      const svc = await start('service-user', { PLACEMENT_NOVA_VALID_INTERFACES: 'public', NOVA_URL: nova.url });
      await svc.bind('0d7a3c1e-0000-4000-8000-000000000011');
      const got = await deliveredFor('0d7a3c1e-0000-4000-8000-000000000011');
      expect(got.user).toBe('placement');
      expect(got.events[0]!.server_uuid).toBe('0d7a3c1e-0000-4000-8000-000000000011');
    },
  );

  it.concurrent(
    'picks the endpoint by interface order and region, and fails a delivery (to retry) where the catalog has none',
    { timeout: 600_000 },
    async () => {
      const identity = (interfaces: string[], region?: string) => novaUser(interfaces, region);
      expect((await identity(['internal', 'public'], 'RegionOne').access()).url).toBe(nova.url);
      expect((await identity(['public', 'internal'], 'RegionOne').access()).url).toBe(dead);
      expect((await identity(['internal'], 'RegionTwo').access()).url).toBe(dead);
      const nowhere = identity(['internal', 'public'], 'RegionThree');
      const result = await sendNovaEvents(
        nowhere,
        { timeoutMs: 10_000, fetch },
        {
          instanceUuid: '0d7a3c1e-0000-4000-8000-000000000021',
          events: [{ arqUuid: '0d7a3c1e-0000-4000-8000-000000000022', status: 'completed' }],
        },
      );
      expect(result).toEqual({
        delivered: false,
        error: expect.stringMatching(/has no internal or public compute endpoint in region RegionThree/),
      });
    },
  );
});

// A setting that cannot work stops `npm start` with one line naming it (src/entry/settings-check.ts).
describe.concurrent('PLACEMENT_NOVA_* settings that cannot work', () => {
  const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules', 'tsx', 'dist', 'esm', 'index.mjs')).href;
  const run = (env: Record<string, string>) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        ['--import', TSX_LOADER, join(ROOT, 'src', 'entry', 'node.ts')],
        {
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: '0', PLACEMENT_DB_URL: 'file::memory:', ...env },
          timeout: 110_000,
        },
        (err, _stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
      );
    });

  it.concurrent.each([
    [
      { PLACEMENT_NOVA_USERNAME: 'nova', PLACEMENT_NOVA_PROJECT_NAME: 'service', PLACEMENT_NOVA_AUTH_URL: 'http://ks:5000/v3' },
      'PLACEMENT_NOVA_PASSWORD',
    ],
    [{ PLACEMENT_NOVA_USERNAME: 'nova', PLACEMENT_NOVA_PASSWORD: 'pw', PLACEMENT_NOVA_PROJECT_NAME: 'service' }, 'PLACEMENT_NOVA_AUTH_URL'],
    [{ PLACEMENT_NOVA_PASSWORD: 'pw' }, 'PLACEMENT_NOVA_USERNAME'],
    [{ PLACEMENT_NOVA_VALID_INTERFACES: 'internal,private' }, 'PLACEMENT_NOVA_VALID_INTERFACES'],
    [{ NOVA_URL: 'nova:8774' }, 'NOVA_URL'],
  ])('%o stops the start naming %s', { timeout: 120_000 }, async (env, setting) => {
    const out = await run(env);
    expect(out.code).toBe(78);
    const lines = out.stderr.split('\n').filter((l) => l.trim() !== '');
    expect(lines, out.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^placement-edge: cannot start: ${setting}: .+ Fix: .+`));
    expect(out.stderr).not.toContain('pw');
  });
});

// Counts a real Keystone cannot give: how often the service signs in for Nova (fake Keystone).
describe.concurrent('the Nova token of a Keystone issuing short-lived tokens', () => {
  it('is used for half its life, then renewed before it expires', async () => {
    const clock = { now: Date.now() };
    const ks = new FakeKeystone(60_000, () => clock.now);
    ks.catalog = [{ type: 'compute', endpoints: [{ interface: 'internal', region_id: 'RegionOne', url: 'http://nova.test/v2.1' }] }];
    const identity = novaIdentity('http://keystone.test/v3', {}, ks.fetch, () => clock.now);
    const signIns = () => ks.count('POST /v3/auth/tokens');
    expect(await identity.access()).toEqual({ url: 'http://nova.test/v2.1', token: 'svc-1' });
    clock.now += 29_000;
    expect((await identity.access()).token).toBe('svc-1');
    expect(signIns()).toBe(1);
    clock.now += 2_000; // 29 s left of 60: renewed, never sent expired
    expect((await identity.access()).token).toBe('svc-2');
    expect(signIns()).toBe(2);
    // Nova refusing the held token: one new sign-in, shared by concurrent deliveries.
    const renewed = await Promise.all([1, 2, 3].map(() => identity.renewAfterRefusal({ url: 'http://nova.test/v2.1', token: 'svc-2' })));
    expect(renewed.map((r) => r?.token)).toEqual(['svc-3', 'svc-3', 'svc-3']);
    expect(signIns()).toBe(3);
  });
});
