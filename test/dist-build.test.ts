// `npm run build` output as an operator installs it: the two bundles copied
// away from the checkout, with only libSQL's native binding beside them, run
// by plain `node` (no tsx). The server migrates, syncs the standard names and
// serves; the agent, configured as deploy/etc/agent.yaml, reports a fixture
// host to it.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installDistAndServe, type InstalledDist } from './helpers/installed-dist.js';
import type { ServerProcess } from './helpers/node-server.js';

const ROOT = join(import.meta.dirname, '..');
const run = promisify(execFile);
const HEADERS = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39', 'content-type': 'application/json' };

let dist: InstalledDist | undefined;
let work: string;
let installed: string;
let server: ServerProcess | undefined;

beforeAll(async () => {
  dist = await installDistAndServe('placement-edge-dist-');
  ({ work, installed, server } = dist);
}, 60_000);

afterAll(() => dist?.remove());

async function get<T>(path: string): Promise<T> {
  const response = await fetch(`${server!.url}${path}`, { headers: HEADERS });
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

describe('npm run build', () => {
  it('dist/package.json installs only the native libSQL binding, at the locked version, and names both bins', () => {
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as Record<string, unknown>;
    const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
    expect(pkg.dependencies).toEqual({ libsql: lock.packages['node_modules/libsql']!.version });
    expect(pkg.bin).toEqual({
      'placement-edge': 'server.mjs',
      'placement-agent': 'placement-agent.mjs',
      'placement-admin': 'placement-admin.mjs',
    });
  });

  it('server.mjs serves on a fresh database: migrations applied and standard names synced', async () => {
    const root = await get<{ versions: { max_version: string }[] }>('/');
    expect(root.versions[0]!.max_version).toBe('1.39');
    await get('/resource_classes/VCPU');
    const traits = await get<{ traits: string[] }>('/traits?name=in:HW_CPU_X86_AVX2,COMPUTE_NODE');
    expect(traits.traits.sort()).toEqual(['COMPUTE_NODE', 'HW_CPU_X86_AVX2']);
    // The Cyborg tables come from the last migrations.
    await get('/accelerator/v2/device_profiles');
  });

  it('placement-agent.mjs, configured like deploy/etc/agent.yaml, reports a fixture host with its provider config to server.mjs', async () => {
    const providerConfig = join(work, 'provider_config');
    mkdirSync(providerConfig);
    copyFileSync(join(ROOT, 'deploy', 'etc', 'provider_config.example.yaml'), join(providerConfig, '10-example.yaml'));
    const agent = await run(
      process.execPath,
      [
        join(installed, 'placement-agent.mjs'),
        'once',
        '--config',
        join(ROOT, 'deploy', 'etc', 'agent.yaml'),
        '--endpoint',
        server!.url,
        '--token',
        'admin',
        '--root',
        join(ROOT, 'agent', 'test', 'fixtures', 'two-nvidia'),
      ],
      {
        cwd: installed,
        env: { ...process.env, PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: providerConfig, PLACEMENT_AGENT_INSTANCES_PATH: work },
      },
    );
    expect(agent.stderr).not.toMatch(/error/i);

    const { resource_providers: providers } = await get<{ resource_providers: { uuid: string; name: string }[] }>(
      '/resource_providers?name=gpu-host-2',
    );
    expect(providers).toHaveLength(1);
    const uuid = providers[0]!.uuid;
    const inventories = await get<{ inventories: Record<string, { total: number; reserved: number }> }>(
      `/resource_providers/${uuid}/inventories`,
    );
    expect(inventories.inventories.VCPU!.total).toBe(8);
    expect(inventories.inventories.CUSTOM_LLC).toMatchObject({ total: 22, reserved: 2 });
    const traits = await get<{ traits: string[] }>(`/resource_providers/${uuid}/traits`);
    expect(traits.traits).toEqual(expect.arrayContaining(['COMPUTE_NODE', 'CUSTOM_P_STATE_ENABLED']));
    const devices = await get<{ devices: unknown[] }>('/accelerator/v2/devices');
    expect(devices.devices).toHaveLength(2);
  });

  it('every bin answers --help and --version without starting anything', async () => {
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    for (const [bin, name] of [
      ['server.mjs', 'placement-edge'],
      ['placement-agent.mjs', 'placement-agent'],
      ['placement-admin.mjs', 'placement-admin'],
    ] as const) {
      const help = await run(process.execPath, [join(installed, bin), '--help'], { cwd: installed });
      expect(help.stdout, bin).toMatch(/usage: /);
      const shown = await run(process.execPath, [join(installed, bin), '--version'], { cwd: installed });
      expect(shown.stdout).toBe(`${name} ${version}\n`);
    }
    expect(existsSync(join(installed, 'data'))).toBe(false);
  });

  it('placement-admin.mjs audit exits 0 on a clean service and 1 once a provider is over capacity', async () => {
    const admin = () =>
      run(process.execPath, [join(installed, 'placement-admin.mjs'), 'audit', '--endpoint', server!.url]).then(
        (ok) => ({ code: 0, stdout: ok.stdout }),
        (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
      );
    const clean = await admin();
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain('Providers whose usage exceeds capacity: 0');

    const rp = crypto.randomUUID();
    const send = (method: string, path: string, body: unknown) =>
      fetch(`${server!.url}${path}`, { method, headers: HEADERS, body: JSON.stringify(body) }).then((r) => r.status);
    expect(await send('POST', '/resource_providers', { name: 'shrunk', uuid: rp })).toBe(200);
    expect(
      await send('PUT', `/resource_providers/${rp}/inventories`, { resource_provider_generation: 0, inventories: { VCPU: { total: 8 } } }),
    ).toBe(200);
    const claim = {
      allocations: { [rp]: { resources: { VCPU: 6 } } },
      project_id: 'p',
      user_id: 'u',
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
    expect(await send('PUT', `/allocations/${crypto.randomUUID()}`, claim)).toBe(204);
    expect(await send('PUT', `/resource_providers/${rp}/inventories/VCPU`, { resource_provider_generation: 2, total: 4 })).toBe(200);

    const found = await admin();
    expect(found.code).toBe(1);
    expect(found.stdout).toContain('Providers whose usage exceeds capacity: 1');
    expect(found.stdout).toContain(rp);
  });
});
