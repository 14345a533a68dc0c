// The host agent on Debian 12's Node (18): the bundled dist/placement-agent.mjs (`npm run build`),
// run by Node 18 (the npm package `node@18`, as `npx -y node@18`: the npm registry or its
// cache), reports a fixture host with its FPGA to server.mjs. Only the bundle is promised to run
// on 18; the checkout (tsx, vitest) needs Node 20.
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { installDistAndServe, type InstalledDist } from './helpers/installed-dist.js';
import type { ServerProcess } from './helpers/node-server.js';
import { describeWithPart } from './helpers/parts.js';

const ROOT = join(import.meta.dirname, '..');
const run = promisify(execFile);
const HEADERS = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 1.39' };
const NODE_18 = ['-y', 'node@18'];

/** Node 18's own version, or why it cannot run here. */
async function node18(): Promise<{ version?: string; missing?: string }> {
  try {
    const { stdout } = await run('npx', [...NODE_18, '--version'], { timeout: 240_000 });
    return { version: stdout.trim() };
  } catch (err) {
    return { missing: `Node 18 (npx -y node@18: the npm package node@18, from the registry or npm's cache): ${(err as Error).message}` };
  }
}

const found = await node18();

describeWithPart(found.missing, 'the bundled agent on Node 18', () => {
  let dist: InstalledDist | undefined;
  let work: string;
  let installed: string;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    dist = await installDistAndServe('placement-agent-node18-');
    ({ work, installed, server } = dist);
  }, 120_000);

  afterAll(() => dist?.remove());

  it('placement-agent.mjs once, run by Node 18, reports the FPGA host and its device', async () => {
    expect(found.version).toMatch(/^v18\./);
    const agent = await run(
      'npx',
      [
        ...NODE_18,
        join(installed, 'placement-agent.mjs'),
        'once',
        '--endpoint',
        server!.url,
        '--token',
        'admin',
        '--root',
        join(ROOT, 'agent', 'test', 'fixtures', 'fpga'),
        '--host',
        'compute1',
      ],
      { cwd: installed, env: { ...process.env, PLACEMENT_AGENT_INSTANCES_PATH: work }, timeout: 120_000 },
    );
    expect(agent.stderr).not.toMatch(/error/i);
    const byName = (await (await fetch(`${server!.url}/resource_providers?name=compute1`, { headers: HEADERS })).json()) as {
      resource_providers: { uuid: string }[];
    };
    expect(byName.resource_providers).toHaveLength(1);
    const tree = (await (
      await fetch(`${server!.url}/resource_providers?in_tree=${byName.resource_providers[0]!.uuid}`, { headers: HEADERS })
    ).json()) as {
      resource_providers: { name: string }[];
    };
    expect(tree.resource_providers.length).toBeGreaterThan(1);
    const devices = (await (await fetch(`${server!.url}/accelerator/v2/devices`, { headers: HEADERS })).json()) as { devices: unknown[] };
    expect(devices.devices).toHaveLength(1);
  }, 180_000);

  it('placement-agent.mjs reaper --once, run by Node 18, deletes the victims through Nova and releases the nomination', async () => {
    const call = async (method: string, path: string, body?: unknown) =>
      fetch(`${server!.url}${path}`, {
        method,
        headers: { ...HEADERS, 'openstack-api-version': 'placement latest', 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const host = crypto.randomUUID();
    expect((await call('POST', '/resource_providers', { name: `spot-${host}`, uuid: host })).status).toBe(200);
    expect(
      (
        await call('PUT', `/resource_providers/${host}/inventories`, {
          resource_provider_generation: 0,
          inventories: { VCPU: { total: 2 } },
        })
      ).status,
    ).toBe(200);
    const spot = crypto.randomUUID();
    const victims = [crypto.randomUUID(), crypto.randomUUID()];
    for (const v of victims) {
      const claimed = await call('PUT', `/allocations/${v}`, {
        allocations: { [host]: { resources: { VCPU: 1 } } },
        project_id: spot,
        user_id: spot,
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      });
      expect(claimed.status).toBe(204);
    }
    expect((await call('PUT', `/ext/priorities/${spot}`, { priority: 0 })).status).toBe(200);
    const made = await call('POST', '/ext/preemptions', {
      preemptor: {
        consumer_uuid: crypto.randomUUID(),
        project_id: crypto.randomUUID(),
        priority: 10,
        allocations: { [host]: { resources: { VCPU: 2 } } },
      },
      victims,
      grace_seconds: 60,
    });
    expect(made.status).toBe(201);
    // Nova, as the reaper sees it: a deleted server's allocations freed, as its compute host does.
    const deleted: string[] = [];
    const nova = createServer((req, res) => {
      const id = /^\/v2\.1\/servers\/([0-9a-f-]+)$/.exec(req.url ?? '')?.[1];
      if (req.method !== 'DELETE' || !id) return res.writeHead(404).end();
      deleted.push(id);
      void call('DELETE', `/allocations/${id}`).then(() => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => nova.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = nova.address() as AddressInfo;
      const reaper = await run('npx', [...NODE_18, join(installed, 'placement-agent.mjs'), 'reaper', '--once'], {
        cwd: installed,
        env: {
          ...process.env,
          PLACEMENT_AGENT_ENDPOINT: server!.url,
          PLACEMENT_AGENT_TOKEN: 'admin',
          PLACEMENT_AGENT_COMPUTE_ENDPOINT: `http://127.0.0.1:${port}/v2.1`,
          PLACEMENT_AGENT_REAPER_STATE_FILE: join(work, 'reaper-state.json'),
        },
        timeout: 120_000,
      });
      expect(reaper.stderr).not.toMatch(/error|warning/i);
      const actions = reaper.stdout
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { action: string }).action);
      expect(actions.filter((a) => a === 'delete_server')).toHaveLength(2);
      expect(actions).toContain('nomination_released');
      expect(deleted.sort()).toEqual([...victims].sort());
    } finally {
      nova.close();
    }
  }, 180_000);
});
