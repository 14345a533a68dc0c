// The host agent's discovery, reported to Placement (syncTree) and to the
// accelerator API (reportAccelerators), then an ARQ bound to the discovered
// FPGA: the attach handle is the PCI function the agent found.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../agent/src/config.js';
import { discover } from '../../agent/src/discover/index.js';
import { providerUuid } from '../../agent/src/discover/uuid.js';
import { ratioSettings } from '../../agent/src/ratios/index.js';
import { acceleratorReport, pciAttachInfo, reportAccelerators } from '../../agent/src/report/accelerators.js';
import { PlacementClient } from '../../agent/src/report/client.js';
import { syncTree } from '../../agent/src/report/sync.js';
import { makeCyborgApp, type CyborgTestApp } from './helpers.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../agent/test/fixtures/${name}`, import.meta.url));
let t: CyborgTestApp;
beforeAll(async () => {
  t = await makeCyborgApp();
});
afterAll(() => t.close());

describe('agent accelerator report', () => {
  it('parses PCI addresses into attach handle info', () => {
    expect(pciAttachInfo('0000:0c:00.1')).toEqual({ domain: '0000', bus: '0c', device: '00', function: '1' });
    expect(pciAttachInfo('garbage')).toBeUndefined();
  });

  it('reports the discovered FPGA and binds an ARQ to it', async () => {
    const found = await discover({ root: fixture('fpga'), statfs: () => ({ bsize: 1024 ** 3, blocks: 20 }) });
    const client = new PlacementClient({ endpoint: 'http://edge.test', token: 'admin', fetch: (r) => t.app.fetch(r) });
    await syncTree(client, found.providers, { ratios: ratioSettings(loadAgentConfig({ env: {} })), log: { info() {}, warn() {} } });
    const fpga = found.providers.find((p) => p.device?.kind === 'FPGA')!;
    expect(fpga).toBeDefined();
    const body = acceleratorReport(found.providers, providerUuid);
    expect(body.devices.length).toBeGreaterThan(0);
    expect(await reportAccelerators(client, found.host.hostname, found.providers, providerUuid)).toEqual({
      devices: body.devices.length,
      sent: true,
    });
    // The service now holds exactly this report: the next one is not sent again.
    expect(await reportAccelerators(client, found.host.hostname, found.providers, providerUuid)).toEqual({
      devices: body.devices.length,
      sent: false,
    });
    const held = (await (await t.acc('GET', `/hosts/${found.host.hostname}/devices`)).json()) as { devices: { key: string }[] };
    expect(held.devices.map((d) => d.key).sort()).toEqual(body.devices.map((d) => d.key).sort());

    const { deployables } = (await (await t.acc('GET', '/deployables')).json()) as { deployables: { name: string; rp_uuid: string }[] };
    expect(deployables.map((d) => d.name)).toContain(fpga.name);

    await t.acc('POST', '/device_profiles', { body: [{ name: 'agent-fpga', groups: [{ 'resources:FPGA': '1' }] }] });
    const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'agent-fpga' } })).json()) as {
      arqs: { uuid: string }[];
    };
    const instance = crypto.randomUUID();
    const patch = await t.acc('PATCH', '/accelerator_requests', {
      body: {
        [arqs[0]!.uuid]: [
          { path: '/hostname', op: 'add', value: found.host.hostname },
          { path: '/device_rp_uuid', op: 'add', value: providerUuid(fpga.name) },
          { path: '/instance_uuid', op: 'add', value: instance },
        ],
      },
    });
    expect(patch.status).toBe(202);
    await t.jobs.queue.idle();
    const shown = (await (await t.acc('GET', `/accelerator_requests?instance=${instance}`)).json()) as {
      arqs: { state: string; attach_handle_info: Record<string, string> }[];
    };
    expect(shown.arqs[0]).toMatchObject({ state: 'Bound', attach_handle_info: pciAttachInfo(fpga.device!.pciAddress)! });
  });
});
