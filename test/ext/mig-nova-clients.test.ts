// Nova's own clients (Debian's python3-nova: the scheduler's report client and
// nova/accelerator/cyborg.py, driven by mig-nova-clients.py as Nova's API,
// scheduler and conductor call them) booting instances with a MIG profile
// device profile against `npm start` (docs/extensions-gpu.md): each 3g.40gb lands on a GPU
// whose slices still allow it, and once none does Nova gets no candidate
// (NoValidHost). Fails, naming the package, where python3-nova is not installed.
import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { HOST, startFakeNova } from '../cyborg/helpers.js';
import { startServer, type ServerProcess } from '../helpers/node-server.js';
import { describeWithPart } from '../helpers/parts.js';
import { H100_PROFILES, h100Counters, h100DeviceReport, MIG_3G_PROFILE } from './mig-h100.js';

const run = promisify(execFile);
const PYTHON = '/usr/bin/python3';
const SCRIPT = join(import.meta.dirname, 'mig-nova-clients.py');
const missing =
  spawnSync(PYTHON, ['-c', 'import nova.scheduler.client.report, nova.accelerator.cyborg'], { stdio: 'ignore' }).status !== 0
    ? 'Debian package python3-nova is not installed (import nova.scheduler.client.report, nova.accelerator.cyborg failed)'
    : null;

describeWithPart(missing, "Nova's clients boot MIG profile instances", () => {
  let server: ServerProcess;
  let nova: Awaited<ReturnType<typeof startFakeNova>>;
  let dir: string;
  const gpus: string[] = [];

  async function call(method: string, path: string, body?: unknown, version = 'placement latest'): Promise<Response> {
    const res = await fetch(server.url + path, {
      method,
      body: body === undefined ? undefined : JSON.stringify(body),
      headers: { 'x-auth-token': 'admin', 'content-type': 'application/json', 'openstack-api-version': version },
    });
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'mig-nova-'));
    nova = await startFakeNova();
    server = await startServer(`file:${join(dir, 'db')}`, { NOVA_URL: nova.url });
    const root = crypto.randomUUID();
    await call('POST', '/resource_providers', { name: HOST, uuid: root });
    await call('PUT', `/resource_providers/${root}/inventories`, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 64 }, MEMORY_MB: { total: 262144 } },
    });
    for (const rc of Object.keys(H100_PROFILES)) await call('PUT', `/resource_classes/${rc}`, undefined, 'placement 1.7');
    for (let i = 0; i < 2; i += 1) {
      const gpu = crypto.randomUUID();
      await call('POST', '/resource_providers', { name: `${HOST}_GPU${i}`, uuid: gpu, parent_provider_uuid: root });
      const inventories = Object.fromEntries(
        Object.entries(H100_PROFILES).map(([rc, [, , most]]) => [rc, { total: most, max_unit: most }]),
      );
      await call('PUT', `/resource_providers/${gpu}/inventories`, { resource_provider_generation: 0, inventories });
      await call('PUT', `/ext/resource_providers/${gpu}/counters`, h100Counters(1));
      gpus.push(gpu);
    }
    const devices = h100DeviceReport(HOST, gpus);
    await call('PUT', `/accelerator/v2/hosts/${HOST}/devices`, { devices }, 'accelerator 2.0');
    await call('POST', '/accelerator/v2/device_profiles', MIG_3G_PROFILE, 'accelerator 2.0');
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
    await nova?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it(
    'binds each 3g.40gb where the GPU slices allow it, two per H100, and the fifth boot is NoValidHost',
    { timeout: 180_000 },
    async () => {
      const conf = join(dir, 'nova.conf');
      writeFileSync(
        conf,
        [
          '[placement]',
          'auth_type = admin_token',
          `endpoint = ${server.url}`,
          'token = admin',
          '[cyborg]',
          `endpoint_override = ${server.url}/accelerator/v2`,
          '[service_user]',
          'send_service_user_token = false',
          '',
        ].join('\n'),
      );
      const input = join(dir, 'input.json');
      writeFileSync(
        input,
        JSON.stringify({
          device_profile: 'mig-3g',
          flavor: { VCPU: 2, MEMORY_MB: 4096 },
          hostname: HOST,
          boots: 5,
          user_id: crypto.randomUUID(),
          project_id: crypto.randomUUID(),
          user_token: 'admin',
        }),
      );
      const { stdout } = await run(PYTHON, [SCRIPT, conf, input], { timeout: 150_000 });
      const seen = JSON.parse(stdout.trim().split('\n').at(-1)!) as { bound: (string | null)[]; query: string };
      // Nova's own query: the device profile's group as a granular group beside the flavor's.
      expect(seen.query).toContain('CUSTOM_MIG_3G_40GB%3A1');
      expect(seen.bound.slice(0, 4).filter((rp) => rp === gpus[0])).toHaveLength(2);
      expect(seen.bound.slice(0, 4).filter((rp) => rp === gpus[1])).toHaveLength(2);
      expect(seen.bound[4]).toBeNull();
      // Each GPU's counters are full on compute slices: 2 x 3 of 7 (a 1g.10gb would still fit, a 3g.40gb not).
      for (const gpu of gpus) {
        const counters = (await (await call('GET', `/ext/resource_providers/${gpu}/counters`)).json()) as {
          load: Record<string, number>;
        };
        expect(counters.load).toEqual({ compute_slices: 6, memory_slices: 8 });
      }
      const arqs = (await (await call('GET', '/accelerator/v2/accelerator_requests', undefined, 'accelerator 2.0')).json()) as {
        arqs: { state: string; device_rp_uuid: string }[];
      };
      expect(
        arqs.arqs
          .filter((a) => a.state === 'Bound')
          .map((a) => a.device_rp_uuid)
          .sort(),
      ).toEqual([...gpus, ...gpus].sort());
    },
  );
});
