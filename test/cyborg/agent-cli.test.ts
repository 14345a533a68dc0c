// `placement-agent once` (which also reports accelerators) and `placement-agent
// accelerators` against one service: the host's devices end up as deployables
// with their PCI attach handles, on the device providers `once` created.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../agent/src/main.js';
import { makeCyborgApp, type CyborgTestApp } from './helpers.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../agent/test/fixtures/${name}`, import.meta.url));
let t: CyborgTestApp;
beforeAll(async () => {
  t = await makeCyborgApp();
});
afterAll(() => t.close());

describe('placement-agent accelerators', () => {
  it('reports discovered devices to the accelerator API after once', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (s: string) => out.push(s),
      err: (s: string) => err.push(s),
      fetch: (req: Request) => Promise.resolve(t.app.fetch(req)),
      env: { PLACEMENT_AGENT_INSTANCES_PATH: '/tmp', PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: '/nonexistent' },
    };
    const args = ['--endpoint', 'http://edge.test', '--token', 'admin', '--root', fixture('fpga'), '--host', 'fpga-host'];
    expect(await main(['once', ...args], io), err.join('\n')).toBe(0);
    expect(await main(['accelerators', ...args], io), err.join('\n')).toBe(0);
    expect(JSON.parse(out.at(-1)!)).toMatchObject({ host: 'fpga-host', devices: 1 });

    const providers = (await (await t.call('GET', '/resource_providers?name=fpga-host')).json()) as {
      resource_providers: { uuid: string }[];
    };
    const tree = (await (await t.call('GET', `/resource_providers?in_tree=${providers.resource_providers[0]!.uuid}`)).json()) as {
      resource_providers: { uuid: string; name: string }[];
    };
    const { deployables } = (await (await t.acc('GET', '/deployables')).json()) as { deployables: { rp_uuid: string }[] };
    expect(deployables).toHaveLength(1);
    expect(tree.resource_providers.map((p) => p.uuid)).toContain(deployables[0]!.rp_uuid);
  });

  it('once keeps the accelerator API up to date by itself, unless told not to', async () => {
    const run = async (host: string, env: Record<string, string> = {}, fetch = (req: Request) => Promise.resolve(t.app.fetch(req))) => {
      const out: string[] = [];
      const err: string[] = [];
      const code = await main(
        ['once', '--endpoint', 'http://edge.test', '--token', 'admin', '--root', fixture('two-nvidia'), '--host', host],
        {
          out: (s) => out.push(s),
          err: (s) => err.push(s),
          fetch,
          env: { PLACEMENT_AGENT_INSTANCES_PATH: '/tmp', PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: '/nonexistent', ...env },
        },
      );
      expect(code, err.join('\n')).toBe(0);
      return { summary: JSON.parse(out.at(-1)!) as { accelerators: unknown }, err };
    };
    const hostDevices = async (host: string) =>
      ((await (await t.acc('GET', `/hosts/${host}/devices`)).json()) as { devices: { type: string }[] }).devices;

    expect((await run('gpu-once')).summary.accelerators).toEqual({ devices: 2, sent: true });
    expect((await hostDevices('gpu-once')).map((d) => d.type)).toEqual(['GPU', 'GPU']);
    expect((await run('gpu-once')).summary.accelerators).toEqual({ devices: 2, sent: false });

    expect((await run('gpu-quiet', { PLACEMENT_AGENT_REPORT_ACCELERATORS: 'false' })).summary.accelerators).toBe('disabled');
    expect(await hostDevices('gpu-quiet')).toEqual([]);

    // A Placement without the accelerator API: the tree is still reported, with a warning.
    const placementOnly = (req: Request) =>
      Promise.resolve(
        new URL(req.url).pathname.startsWith('/accelerator/')
          ? new Response('{"errors": [{"status": 404, "detail": "not found"}]}', { status: 404 })
          : t.app.fetch(req),
      );
    const plain = await run('gpu-plain', {}, placementOnly);
    expect(plain.summary.accelerators).toBe('unsupported');
    expect(plain.err.join('\n')).toMatch(/no accelerator API/);
    expect((await t.call('GET', '/resource_providers?name=gpu-plain')).status).toBe(200);
  });

  it('needs an endpoint', async () => {
    const err: string[] = [];
    expect(await main(['accelerators'], { out: () => {}, err: (s) => err.push(s), env: {} })).toBe(2);
  });
});
