// The real client: Debian's python3-openstackclient + python3-osc-placement
// against `npm start`, unchanged (.ci/run installs them). Fails, naming the
// package, where either is not installed.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { describeWithPart, missingUnless } from '../helpers/parts.js';

const run = promisify(execFile);
const OPENSTACK = '/usr/bin/openstack';

const missing = missingUnless(
  [OPENSTACK, '/usr/lib/python3/dist-packages/osc_placement'],
  'Debian packages python3-openstackclient and python3-osc-placement',
);

describeWithPart(missing, 'openstack CLI (osc-placement) against npm start', () => {
  let server: ServerProcess;
  let dir: string;
  /** The client as an admin of this server at 1.39. */
  const admin = () => [
    '--os-auth-type',
    'admin_token',
    '--os-token',
    'admin',
    '--os-endpoint',
    server.url,
    '--os-placement-api-version',
    '1.39',
  ];
  const osc = async (...args: string[]): Promise<unknown> => {
    const { stdout } = await run(OPENSTACK, [...admin(), ...args, '-f', 'json'], { timeout: 60_000 });
    return stdout.trim() ? JSON.parse(stdout) : null;
  };
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'osc-'));
    server = await startServer(`file:${join(dir, 'db')}`);
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('creates a provider, sets inventory, traits and aggregates, claims and lists candidates', async () => {
    const rp = (await osc('resource', 'provider', 'create', 'cn-osc')) as { uuid: string };
    await osc('resource', 'provider', 'inventory', 'set', rp.uuid, '--resource', 'VCPU=8', '--resource', 'MEMORY_MB=4096');
    await run(OPENSTACK, [...admin(), 'trait', 'create', 'CUSTOM_OSC']);
    await osc('resource', 'provider', 'trait', 'set', rp.uuid, '--trait', 'CUSTOM_OSC');
    const aggs = (await osc(
      'resource',
      'provider',
      'aggregate',
      'set',
      rp.uuid,
      '--aggregate',
      '3a4b5c6d-0000-4000-8000-000000000001',
      '--generation',
      '2',
    )) as { uuid: string }[];
    expect(aggs.map((a) => a.uuid)).toEqual(['3a4b5c6d-0000-4000-8000-000000000001']);
    const inventory = (await osc('resource', 'provider', 'inventory', 'list', rp.uuid)) as { resource_class: string; total: number }[];
    expect(inventory.map((i) => [i.resource_class, i.total]).sort()).toEqual([
      ['MEMORY_MB', 4096],
      ['VCPU', 8],
    ]);

    const consumer = '0b7c9a52-2f6e-4a43-9d7f-1d2a6b4c0001';
    await osc(
      'resource',
      'provider',
      'allocation',
      'set',
      consumer,
      '--allocation',
      `rp=${rp.uuid},VCPU=2,MEMORY_MB=512`,
      '--project-id',
      'p1',
      '--user-id',
      'u1',
      '--consumer-type',
      'INSTANCE',
    );
    const usage = (await osc('resource', 'provider', 'usage', 'show', rp.uuid)) as { resource_class: string; usage: number }[];
    expect(usage.find((u) => u.resource_class === 'VCPU')?.usage).toBe(2);
    const candidates = (await osc('allocation', 'candidate', 'list', '--resource', 'VCPU=6', '--required', 'CUSTOM_OSC')) as unknown[];
    expect(candidates).toHaveLength(1);
    const none = (await osc('allocation', 'candidate', 'list', '--resource', 'VCPU=7')) as unknown[];
    expect(none).toHaveLength(0);
  }, 300_000); // each openstack call starts a Python CLI: seconds apiece on a loaded 2-core machine
});
