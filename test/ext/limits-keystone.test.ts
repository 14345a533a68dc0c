// Project limits from a real Keystone's unified limits (docs/limits.md), enforced
// inside the claim by two service instances on one libSQL server (sqld), as
// two Worker isolates or two hosts would run: many one-VCPU claims racing
// for one project are granted exactly its limit (the registered default, or
// the project's override), round after round; another project is
// unaffected; a client that counts then claims, as Nova does today,
// over-grants in the same race. Limits changed in Keystone are enforced after
// a refresh, without a restart; with Keystone stopped the last limits stay
// enforced and nothing is refused for want of Keystone.
import { createClient } from '@libsql/client/web';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { makeDeps } from '../../src/compose.js';
import { loadConfig } from '../../src/config.js';
import { createDataStore } from '../../src/db/client.js';
import { applyMigrations } from '../../src/db/migrate.js';
import { MIGRATIONS } from '../../src/db/migrations.generated.js';
import type { Deps } from '../../src/deps.js';
import { limits as limitsExtension } from '../../src/ext/limits/extension.js';
import { LIMITS } from '../../src/ext/limits/service.js';
import { syncStandards } from '../../src/placement/sync-standards.js';
import { ADMIN_PASSWORD, startKeystone, type Keystone } from '../helpers/keystone.js';
import { startSqld, type Sqld } from '../helpers/sqld.js';

/** Rounds of the race, and claims of the project at the registered default per round (LIMITS_RACE_ROUNDS, LIMITS_RACE_CLAIMS for a longer run). */
const ROUNDS = Number(process.env.LIMITS_RACE_ROUNDS ?? 8);
const CLAIMS = Number(process.env.LIMITS_RACE_CLAIMS ?? 40);
const SERVICE_USER = 'placement';
const SERVICE_PASSWORD = 'placement-service-pw';
const silent = { debug() {}, info() {}, warn() {}, error() {} };
type App = ReturnType<typeof createApp>;

let keystone: Keystone;
let sqld: Sqld;
let systemToken: string;
const ids = { service: '', user: '', reader: '', registered: '', override: '', overridden: '' };
let instances: { app: App; deps: Deps }[];
let unlimited: App;
const hosts: string[] = [];

/** A JSON call to Keystone as the bootstrap admin, system-scoped (limits are the system's). */
async function ks<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${keystone.url}${path}`, {
    method,
    headers: { 'x-auth-token': systemToken, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`Keystone ${method} ${path}: ${res.status} ${await res.text()}`);
  return (res.status === 204 ? {} : await res.json()) as T;
}

async function adminSystemToken(): Promise<string> {
  const res = await fetch(`${keystone.url}/auth/tokens?nocatalog`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: {
        identity: { methods: ['password'], password: { user: { name: 'admin', domain: { name: 'Default' }, password: ADMIN_PASSWORD } } },
        scope: { system: { all: true } },
      },
    }),
  });
  if (res.status !== 201) throw new Error(`no system token for admin: ${res.status} ${await res.text()}`);
  return res.headers.get('x-subject-token')!;
}

function instanceConfig(limits: 'keystone' | 'off') {
  return loadConfig({
    PLACEMENT_DB_URL: sqld.url,
    PLACEMENT_POLICY_ENFORCE_NEW_DEFAULTS: 'false',
    PLACEMENT_LIMITS: limits,
    PLACEMENT_LIMITS_SERVICE: 'nova',
    PLACEMENT_LIMITS_REGION: 'RegionOne',
    PLACEMENT_LIMITS_REFRESH_SECONDS: '1',
    PLACEMENT_KEYSTONE_AUTH_URL: keystone.url,
    PLACEMENT_KEYSTONE_USERNAME: SERVICE_USER,
    PLACEMENT_KEYSTONE_PASSWORD: SERVICE_PASSWORD,
    // Keystone under uwsgi takes seconds per request on a loaded machine: a periodic read past the
    // default 10 s failed, and the sweep that should have read the new limit reported none read.
    PLACEMENT_KEYSTONE_TIMEOUT_MS: '30000',
  });
}

beforeAll(async () => {
  [keystone, sqld] = await Promise.all([startKeystone(), startSqld()]);
  systemToken = await adminSystemToken();
  ids.service = (await ks<{ service: { id: string } }>('POST', '/services', { service: { name: 'nova', type: 'compute' } })).service.id;
  ids.user = (
    await ks<{ user: { id: string } }>('POST', '/users', { user: { name: SERVICE_USER, password: SERVICE_PASSWORD, domain_id: 'default' } })
  ).user.id;
  ids.reader = (await ks<{ roles: { id: string }[] }>('GET', '/roles?name=reader')).roles[0]!.id;
  ids.overridden = (
    await ks<{ project: { id: string } }>('POST', '/projects', { project: { name: 'limited', domain_id: 'default' } })
  ).project.id;
  ids.registered = (
    await ks<{ registered_limits: { id: string }[] }>('POST', '/registered_limits', {
      registered_limits: [{ service_id: ids.service, region_id: 'RegionOne', resource_name: 'class:VCPU', default_limit: 10 }],
    })
  ).registered_limits[0]!.id;
  ids.override = (
    await ks<{ limits: { id: string }[] }>('POST', '/limits', {
      limits: [
        { service_id: ids.service, project_id: ids.overridden, region_id: 'RegionOne', resource_name: 'class:VCPU', resource_limit: 4 },
      ],
    })
  ).limits[0]!.id;

  const first = createClient({ url: sqld.url });
  await applyMigrations(first, MIGRATIONS);
  await syncStandards(first);
  const keystoneConfig = instanceConfig('keystone');
  instances = [first, createClient({ url: sqld.url })].map((client) => {
    const deps = makeDeps(createDataStore(client), keystoneConfig, silent);
    return { app: createApp(deps), deps };
  });
  unlimited = createApp(makeDeps(createDataStore(createClient({ url: sqld.url })), instanceConfig('off'), silent));
}, 240_000);

afterAll(async () => {
  sqld?.stop();
  await keystone?.close();
});

const call = (app: App, method: string, path: string, body?: unknown, version = '1.39') =>
  app.request(path, {
    method,
    headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': `placement ${version}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

/** One VCPU for `project` on a host, through instance `i % 2`: a new consumer (one batch) at 1.39, the ordinary path at 1.27. */
function claimOne(i: number, project: string, consumer = crypto.randomUUID()) {
  const app = instances[i % 2]!.app;
  const allocations = { [hosts[i % hosts.length]!]: { resources: { VCPU: 1 } } };
  return i % 4 < 2
    ? call(app, 'PUT', `/allocations/${consumer}`, {
        allocations,
        project_id: project,
        user_id: project,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      })
    : call(app, 'PUT', `/allocations/${consumer}`, { allocations, project_id: project, user_id: project }, '1.27');
}

async function vcpuUsage(project: string): Promise<number> {
  // 1.9: the usage of every consumer (from 1.38 it is grouped by consumer type).
  const body = (await (await call(instances[0]!.app, 'GET', `/usages?project_id=${project}`, undefined, '1.9')).json()) as {
    usages: { VCPU?: number };
  };
  return body.usages.VCPU ?? 0;
}

/** `count` one-VCPU claims of `project`, all at once; the consumers granted (409 limit_exceeded for the others). */
async function race(project: string, count: number, offset = 0): Promise<string[]> {
  const consumers = Array.from({ length: count }, () => crypto.randomUUID());
  const answers = await Promise.all(consumers.map((c, i) => claimOne(i + offset, project, c)));
  const granted: string[] = [];
  for (const [i, res] of answers.entries()) {
    if (res.status === 204) granted.push(consumers[i]!);
    else {
      expect(res.status).toBe(409);
      const error = ((await res.json()) as { errors: { code: string; detail: string }[] }).errors[0]!;
      expect(error.code).toBe('placement.ext.limit_exceeded');
      expect(error.detail).toContain(`project '${project}'`);
    }
  }
  return granted;
}

describe('PLACEMENT_LIMITS=keystone against a real Keystone, two instances on one sqld', () => {
  it('refuses the start, naming the role, while the service user cannot read the limits; starts once it has the reader role on the system', async () => {
    const deps = instances[0]!.deps;
    await expect(deps.extensions.state(LIMITS)!.start()).rejects.toThrow(
      /PLACEMENT_KEYSTONE_USERNAME: .*openstack role add --user placement --user-domain Default --system all reader/,
    );
    await ks('PUT', `/system/users/${ids.user}/roles/${ids.reader}`);
    await deps.extensions.state(LIMITS)!.start();
    const shown = (await (await call(instances[1]!.app, 'GET', `/ext/limits?project_id=${ids.overridden}`)).json()) as object;
    expect(shown).toEqual({ project_id: ids.overridden, limits: { VCPU: { limit: 4, usage: 0, remaining: 4 } } });
    for (let i = 0; i < 4; i++) {
      const uuid = crypto.randomUUID();
      hosts.push(uuid);
      expect((await call(instances[0]!.app, 'POST', '/resource_providers', { name: `host-${i}`, uuid })).status).toBe(200);
      const inventories = { VCPU: { total: 1000 }, DISK_GB: { total: 1000 } };
      expect(
        (await call(instances[1]!.app, 'PUT', `/resource_providers/${uuid}/inventories`, { resource_provider_generation: 0, inventories }))
          .status,
      ).toBe(200);
    }
  }, 60_000);

  it(
    `racing one-VCPU claims (${CLAIMS} + 14 + 6 a round) grant exactly the limit (10 registered, 4 overridden), ${ROUNDS} rounds; another project is unaffected`,
    async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const fresh = crypto.randomUUID();
        const other = crypto.randomUUID();
        const [byDefault, byOverride, unaffected] = await Promise.all([
          race(fresh, CLAIMS),
          race(ids.overridden, 14, 1),
          race(other, 6, 2),
        ]);
        expect([byDefault.length, byOverride.length, unaffected.length], `round ${round}`).toEqual([10, 4, 6]);
        expect(await vcpuUsage(fresh)).toBe(10);
        expect(await vcpuUsage(ids.overridden)).toBe(4);
        // The overridden project starts the next round empty.
        for (const c of byOverride) expect((await call(instances[round % 2]!.app, 'DELETE', `/allocations/${c}`)).status).toBe(204);
      }
    },
    120_000 + ROUNDS * CLAIMS * 20,
  );

  it('the control: a client that counts usage then claims (Nova without the guard) over-grants in the same race', async () => {
    const project = crypto.randomUUID();
    const countThenClaim = async (i: number, app = unlimited, owner = project) => {
      if ((await vcpuUsage(owner)) + 1 > 10) return false;
      const res = await call(app, 'PUT', `/allocations/${crypto.randomUUID()}`, {
        allocations: { [hosts[i % hosts.length]!]: { resources: { VCPU: 1 } } },
        project_id: owner,
        user_id: owner,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      });
      return res.status === 204;
    };
    const granted = (await Promise.all(Array.from({ length: 30 }, (_, i) => countThenClaim(i)))).filter(Boolean).length;
    expect(granted).toBeGreaterThan(10);
    expect(await vcpuUsage(project)).toBe(granted);
    // The same client through the guarded instances: exactly the limit.
    const guarded = crypto.randomUUID();
    const kept = await Promise.all(Array.from({ length: 30 }, (_, i) => countThenClaim(i, instances[i % 2]!.app, guarded)));
    expect(kept.filter(Boolean)).toHaveLength(10);
    expect(await vcpuUsage(guarded)).toBe(10);
  }, 60_000);

  it('limits changed in Keystone are enforced after the refresh (POST /ext/limits/refresh, or the periodic sweep), without a restart', async () => {
    // The override lowered (Keystone refuses to change a registered limit that project limits depend on).
    await ks('PATCH', `/limits/${ids.override}`, { limit: { resource_limit: 2 } });
    const refreshed = await call(instances[0]!.app, 'POST', '/ext/limits/refresh');
    expect(refreshed.status).toBe(200);
    expect(await refreshed.json()).toMatchObject({ registered: { VCPU: 10 }, projects: 1 });
    // The other instance enforces what the first read: the limits are in the database.
    expect(await race(ids.overridden, 12, 1)).toHaveLength(2);
    // A new registered limit, read by the other instance's periodic refresh (1 s here).
    await ks('POST', '/registered_limits', {
      registered_limits: [{ service_id: ids.service, region_id: 'RegionOne', resource_name: 'class:DISK_GB', default_limit: 3 }],
    });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect(await limitsExtension.jobs!.sweeps[0]!(instances[1]!.deps)).toBe(1);
    const project = crypto.randomUUID();
    const disk = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(instances[i % 2]!.app, 'PUT', `/allocations/${crypto.randomUUID()}`, {
          allocations: { [hosts[i % hosts.length]!]: { resources: { VCPU: 1, DISK_GB: 1 } } },
          project_id: project,
          user_id: project,
          consumer_generation: null,
          consumer_type: 'INSTANCE',
        }),
      ),
    );
    expect(disk.filter((r) => r.status === 204)).toHaveLength(3);
  }, 60_000);

  it('Keystone stopped: the last limits stay enforced, nothing is refused for want of Keystone, and /readyz says so', async () => {
    await keystone.stop();
    const refresh = await call(instances[1]!.app, 'POST', '/ext/limits/refresh');
    expect(refresh.status).toBe(503);
    expect(await refresh.text()).toContain('the last ones read stay in force');
    expect(await race(crypto.randomUUID(), 14)).toHaveLength(10);
    expect(await race(crypto.randomUUID(), 4)).toHaveLength(4);
    // Two refresh intervals (1 s each here) without a read.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    expect(await limitsExtension.jobs!.sweeps[0]!(instances[0]!.deps)).toBe(0);
    const ready = await call(instances[0]!.app, 'GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reason: string }).reason).toMatch(/project limits in force were read \d+ s ago .*they stay enforced/);
    expect(await race(crypto.randomUUID(), 14)).toHaveLength(10);
    expect(await race(ids.overridden, 6, 1)).toHaveLength(0);
  }, 60_000);
});
