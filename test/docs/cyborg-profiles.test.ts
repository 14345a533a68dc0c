// docs/openstack.md "An existing Cyborg": the loop that carries device profiles over, run as
// written (bash, curl, jq) from one placement-edge's accelerator API, standing in for Cyborg's
// (the same v2 API), into another: every profile arrives with its uuid, name, groups and
// description. The doc's first two lines (the token and Cyborg's URL from the `openstack` CLI)
// are given as TOKEN and CYBORG instead.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { serve } from '../admin/admin-command.js';
import { missingUnless, describeWithPart } from '../helpers/parts.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

const run = promisify(execFile);
const DOC = join(import.meta.dirname, '..', '..', 'docs', 'openstack.md');

/** The fenced block after `<!-- cyborg-profiles-test -->`, without its first two lines (TOKEN=, CYBORG=). */
function loop(): string {
  const text = readFileSync(DOC, 'utf8');
  const at = text.indexOf('<!-- cyborg-profiles-test -->');
  if (at < 0) throw new Error('docs/openstack.md has no <!-- cyborg-profiles-test --> block');
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(at))![1]!;
  const lines = block.split('\n').map((line) => line.replace(/^ {2}/, ''));
  expect(lines[0]).toMatch(/^TOKEN=/);
  expect(lines[1]).toMatch(/^CYBORG=/);
  return lines.slice(2).join('\n');
}

const missing = missingUnless(['/usr/bin/curl', '/usr/bin/jq'], 'Debian packages curl and jq');

describeWithPart(missing, "docs/openstack.md: Cyborg's device profiles carried over", () => {
  const apps: TestApp[] = [];
  const servers: Server[] = [];
  let cyborg: string;
  let target: string;
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const app = await makeTestApp();
      apps.push(app);
      const served = await serve(app.app);
      servers.push(served.server);
      if (i === 0) cyborg = `${served.url}/accelerator/v2`;
      else target = served.url;
    }
  });
  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
    for (const app of apps) app.close();
  });

  it('every profile arrives with its uuid, name, groups and description', async () => {
    const profiles = [
      {
        uuid: crypto.randomUUID(),
        name: 'fpga-dp1',
        description: 'one FPGA',
        groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_INTEL': 'required' }],
      },
      { uuid: crypto.randomUUID(), name: 'gpu-two', description: null, groups: [{ 'resources:PGPU': '1' }, { 'resources:PGPU': '1' }] },
    ];
    for (const profile of profiles) {
      const res = await fetch(`${cyborg}/device_profiles`, {
        method: 'POST',
        headers: { 'x-auth-token': 'admin', 'content-type': 'application/json' },
        body: JSON.stringify([profile]),
      });
      expect(res.status, await res.clone().text()).toBeLessThan(300);
    }
    const script = loop().replaceAll('http://controller:8778', target);
    await run('/bin/bash', ['-eo', 'pipefail', '-c', script], { env: { ...process.env, TOKEN: 'admin', CYBORG: cyborg } });
    type Listed = { device_profiles: { uuid: string; name: string; groups: unknown; description: string | null }[] };
    const list = async (base: string) =>
      ((await (await fetch(`${base}/device_profiles`, { headers: { 'x-auth-token': 'admin' } })).json()) as Listed).device_profiles
        .map(({ uuid, name, groups, description }) => ({ uuid, name, groups, description }))
        .sort((a, b) => a.name.localeCompare(b.name));
    const source = await list(cyborg);
    expect(source.map((p) => p.uuid).sort()).toEqual(profiles.map((p) => p.uuid).sort());
    expect(await list(`${target}/accelerator/v2`)).toEqual(source);
  });
});
