// The real client: Debian's python3-cyborgclient (OSC plugin) against
// `npm start`, with the endpoint on the command line as CLIENT-REQUESTS.md
// describes. Fails, saying which package is missing, where the `openstack`
// CLI (python3-openstackclient) or its accelerator plugin (python3-cyborgclient)
// is not installed: the CLI alone would fail every command with "unknown command".
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { a10Report, pciFunctions } from '../helpers/fpga-report.js';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';

const run = promisify(execFile);
const OPENSTACK = '/usr/bin/openstack';
const missing = !existsSync(OPENSTACK)
  ? 'Debian package python3-openstackclient is not installed'
  : spawnSync('/usr/bin/python3', ['-c', 'import cyborgclient.osc.plugin'], { stdio: 'ignore' }).status !== 0
    ? 'Debian package python3-cyborgclient is not installed'
    : null;
const ROOT = '11111111-1111-4111-8111-111111111111';
const FPGA = '22222222-2222-4222-8222-222222222222';
const INSTANCE = '506220bc-18f2-4294-9b29-80267a021dc0';

describeWithPart(missing, 'python3-cyborgclient against npm start', () => {
  let server: ServerProcess;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cyborgclient-'));
    server = await startServer(`file:${join(dir, 'db')}`);
    const call = async (method: string, path: string, body?: unknown, version = 'placement latest') => {
      const res = await fetch(server.url + path, {
        method,
        body: body === undefined ? undefined : JSON.stringify(body),
        headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': version },
      });
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    };
    await call('POST', '/resource_providers', { name: 'cn1', uuid: ROOT });
    await call('POST', '/resource_providers', { name: 'cn1_FPGA', uuid: FPGA, parent_provider_uuid: ROOT });
    await call('PUT', `/resource_providers/${FPGA}/inventories`, { resource_provider_generation: 0, inventories: { FPGA: { total: 1 } } });
    await call('PUT', '/accelerator/v2/hosts/cn1/devices', a10Report('cn1', FPGA, pciFunctions(1, '0c')), 'accelerator 2.0');
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const os = async (...args: string[]) => {
    const { stdout } = await run(
      OPENSTACK,
      ['--os-auth-type', 'admin_token', '--os-token', 'admin', '--os-endpoint', `${server.url}/accelerator/v2`, ...args],
      { timeout: 60_000 },
    );
    return stdout;
  };
  const json = async <T>(...args: string[]) => JSON.parse(await os(...args, '-f', 'json')) as T;

  it('runs device profile and arq create/list/show/bind/unbind/delete', async () => {
    const dp = await json<{ uuid: string; name: string }>(
      'accelerator',
      'device',
      'profile',
      'create',
      'dp-cli',
      '[{"resources:FPGA": 1}]',
    );
    expect(dp.name).toBe('dp-cli');
    expect((await json<{ name: string }[]>('accelerator', 'device', 'profile', 'list')).map((p) => p.name)).toEqual(['dp-cli']);
    expect((await json<{ uuid: string }>('accelerator', 'device', 'profile', 'show', dp.uuid)).uuid).toBe(dp.uuid);
    expect(
      (await json<{ uuid: string }>('--os-accelerator-api-version', '2.2', 'accelerator', 'device', 'profile', 'show', 'dp-cli')).uuid,
    ).toBe(dp.uuid);

    const arq = await json<{ uuid: string; state: string }>('accelerator', 'arq', 'create', 'dp-cli');
    expect(arq.state).toBe('Initial');
    expect((await json<{ uuid: string }[]>('accelerator', 'arq', 'list')).map((a) => a.uuid)).toEqual([arq.uuid]);
    await os('accelerator', 'arq', 'bind', arq.uuid, 'cn1', INSTANCE, FPGA, 'project');
    let shown = await json<{ state: string; attach_handle_type: string }>('accelerator', 'arq', 'show', arq.uuid);
    const deadline = Date.now() + 30_000; // the clock, not a count of CLI runs: each is slower on a loaded machine
    while (shown.state === 'BindStarted' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      shown = await json('accelerator', 'arq', 'show', arq.uuid);
    }
    expect(shown).toMatchObject({ state: 'Bound', attach_handle_type: 'PCI' });
    await os('accelerator', 'arq', 'unbind', arq.uuid);
    expect((await json<{ state: string }>('accelerator', 'arq', 'show', arq.uuid)).state).toBe('Unbound');
    expect(await os('accelerator', 'arq', 'delete', arq.uuid)).toContain(`Deleted accelerator_request ${arq.uuid}`);
    await expect(os('accelerator', 'arq', 'show', arq.uuid)).rejects.toThrow(/not found/);
    expect(await os('accelerator', 'device', 'profile', 'delete', dp.uuid)).toContain(`Deleted device_profile ${dp.uuid}`);
    expect(await json<unknown[]>('accelerator', 'device', 'profile', 'list')).toEqual([]);
  }, 300_000); // fourteen Python CLI starts: past 180 s at load 20, three test files at a time
});
