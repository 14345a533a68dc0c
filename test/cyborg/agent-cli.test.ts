// `placement-agent once` then `placement-agent accelerators` against one
// service: the host's FPGA ends up as a deployable with its PCI attach
// handle, on the device provider `once` created.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../agent/src/main.js';
import { makeCyborgApp, type CyborgTestApp } from './helpers.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../agent/test/fixtures/${name}`, import.meta.url));
let t: CyborgTestApp;
beforeAll(async () => { t = await makeCyborgApp(); });
afterAll(() => t.close());

describe('placement-agent accelerators', () => {
  it('reports discovered devices to the accelerator API after once', async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (s: string) => out.push(s), err: (s: string) => err.push(s),
      fetch: (req: Request) => Promise.resolve(t.app.fetch(req)),
      env: { PLACEMENT_AGENT_INSTANCES_PATH: '/tmp', PLACEMENT_AGENT_PROVIDER_CONFIG_LOCATION: '/nonexistent' },
    };
    const args = ['--endpoint', 'http://edge.test', '--token', 'admin', '--root', fixture('fpga'), '--host', 'fpga-host'];
    expect(await main(['once', ...args], io), err.join('\n')).toBe(0);
    expect(await main(['accelerators', ...args], io), err.join('\n')).toBe(0);
    expect(JSON.parse(out.at(-1)!)).toMatchObject({ host: 'fpga-host', devices: 1 });

    const providers = (await (await t.call('GET', '/resource_providers?name=fpga-host')).json()) as { resource_providers: { uuid: string }[] };
    const tree = (await (await t.call('GET', `/resource_providers?in_tree=${providers.resource_providers[0]!.uuid}`)).json()) as {
      resource_providers: { uuid: string; name: string }[];
    };
    const { deployables } = (await (await t.acc('GET', '/deployables')).json()) as { deployables: { rp_uuid: string }[] };
    expect(deployables).toHaveLength(1);
    expect(tree.resource_providers.map((p) => p.uuid)).toContain(deployables[0]!.rp_uuid);
  });

  it('needs an endpoint', async () => {
    const err: string[] = [];
    expect(await main(['accelerators'], { out: () => {}, err: (s) => err.push(s), env: {} })).toBe(2);
  });
});
