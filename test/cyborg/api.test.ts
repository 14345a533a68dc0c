// The accelerator API's edges: version documents and negotiation, Cyborg's
// error body, device profile validation, ARQ creation counts, PATCH
// validation and state rules, deletes, policy, and the agent report.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindBody, FPGA_RP, fpgaHostReport, fpgaProfile, HOST, makeCyborgApp, ROOT_RP, seedHost, type CyborgTestApp } from './helpers.js';

let t: CyborgTestApp;
beforeAll(async () => {
  t = await makeCyborgApp();
  await seedHost(t, 4);
});
afterAll(() => t.close());

const fault = async (res: Response) =>
  JSON.parse(((await res.json()) as { error_message: string }).error_message) as {
    faultcode: string;
    faultstring: string;
    debuginfo: null;
  };
type Arq = { uuid: string; state: string; device_profile_group_id: number; project_id: string | null };
const member = { 'x-auth-token': 'u1:p1', 'x-roles': 'member,reader' };

describe('versions', () => {
  it('serves / and /v2 without a token', async () => {
    const root = await t.app.request('/accelerator/');
    expect(root.status).toBe(200);
    expect(await root.json()).toMatchObject({
      versions: [{ id: 'v2', min_version: '2.0', max_version: '2.3' }],
      default_version: { id: 'v2' },
    });
    const v2 = await t.app.request('/accelerator/v2');
    expect(await v2.json()).toMatchObject({
      id: 'v2.0',
      min_version: '2.0',
      max_version: '2.3',
      status: 'CURRENT',
      links: [{ rel: 'self' }],
    });
    expect(v2.headers.get('openstack-api-version')).toBe('accelerator 2.0');
  });

  it('negotiates: latest, bare 2.N, and 406 for bad values', async () => {
    expect((await t.acc('GET', '/device_profiles', { version: 'latest' })).headers.get('openstack-api-version')).toBe('accelerator 2.3');
    const bare = await t.acc('GET', '/device_profiles', { headers: { 'openstack-api-version': '2.1' } });
    expect(bare.headers.get('openstack-api-version')).toBe('accelerator 2.1');
    for (const bad of ['2.4', '3.0', 'abc', '1.0']) {
      const res = await t.acc('GET', '/device_profiles', { version: bad });
      expect(res.status).toBe(406);
      expect(res.headers.get('openstack-api-maximum-version')).toBe('2.3');
      expect((await fault(res)).faultcode).toBe('Client');
    }
  });

  it('needs a token for the API', async () => {
    const res = await t.app.request('/accelerator/v2/device_profiles');
    expect(res.status).toBe(401);
    expect(await res.json()).toHaveProperty('error_message');
  });

  it('answers unknown paths and verbs in the error body', async () => {
    expect((await t.acc('GET', '/nothing-here')).status).toBe(404);
    const res = await t.acc('PUT', '/device_profiles');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, POST, DELETE');
  });
});

describe('device profiles', () => {
  it('creates, lists by name, shows by uuid, by name from 2.2 only', async () => {
    const created = await t.acc('POST', '/device_profiles', {
      body: [{ name: 'dp-show', description: null, groups: [{ 'resources:FPGA': 1 }] }],
    });
    expect(created.status).toBe(201);
    const profile = (await created.json()) as { uuid: string; groups: Record<string, string>[] };
    expect(profile.groups).toEqual([{ 'resources:FPGA': '1' }]);
    expect(await (await t.acc('GET', `/device_profiles/${profile.uuid}`)).json()).toMatchObject({ device_profile: { name: 'dp-show' } });
    expect((await t.acc('GET', '/device_profiles/dp-show')).status).toBe(406);
    expect((await t.acc('GET', '/device_profiles/dp-show', { version: '2.2' })).status).toBe(200);
    expect((await t.acc('GET', '/device_profiles/nope', { version: '2.2' })).status).toBe(404);
    const list = (await (await t.acc('GET', '/device_profiles?name=dp-show,other')).json()) as { device_profiles: unknown[] };
    expect(list.device_profiles).toHaveLength(1);
  });

  it.each([
    [[{ name: 'bad name!', groups: [{ 'resources:FPGA': '1' }] }], 'name'],
    [[{ name: 'x1', groups: [] }], 'groups must not be empty'],
    [[{ name: 'x2', groups: [{ 'foo:bar': '1' }] }], 'keys must start with'],
    [[{ name: 'x3', groups: [{ 'resources:DISK_GB': '1' }] }], 'Bad resource class'],
    [[{ name: 'x4', groups: [{ 'resources:FPGA': 'two' }] }], 'not an integer from 1 to 2147483647'],
    // Amounts stay integers placement can hold: never 1e+23.
    [[{ name: 'x4', groups: [{ 'resources:FPGA': '99999999999999999999999' }] }], 'not an integer from 1 to 2147483647'],
    [[{ name: 'x4', groups: [{ 'resources:FPGA': 2147483648 }] }], 'not an integer from 1 to 2147483647'],
    [[{ name: 'x5', groups: [{ 'trait:HW_CPU_X86_AVX': 'required' }] }], 'traits must be CUSTOM_'],
    [[{ name: 'x6', groups: [{ 'trait:CUSTOM_A': 'maybe' }] }], "'required' or 'forbidden'"],
    [
      [
        { name: 'x7', groups: [{}] },
        { name: 'x8', groups: [{}] },
      ],
      'exactly one',
    ],
    ['{not json', 'Malformed JSON'],
  ])('rejects %j with a 400', async (body, message) => {
    const res = await t.acc('POST', '/device_profiles', { body });
    expect(res.status).toBe(400);
    expect((await fault(res)).faultstring).toContain(message);
  });

  it('refuses a duplicate name with 409 and deletes by ?value= and by uuid', async () => {
    await t.acc('POST', '/device_profiles', { body: [{ name: 'dp-del1', groups: [{ 'resources:GPU': '1' }] }] });
    const second = (await (
      await t.acc('POST', '/device_profiles', { body: [{ name: 'dp-del2', groups: [{ 'resources:GPU': '1' }] }] })
    ).json()) as { uuid: string };
    expect((await t.acc('POST', '/device_profiles', { body: [{ name: 'dp-del1', groups: [{ 'resources:GPU': '1' }] }] })).status).toBe(409);
    expect((await t.acc('DELETE', '/device_profiles?value=dp-del1,missing')).status).toBe(404);
    expect((await t.acc('DELETE', '/device_profiles?value=dp-del1')).status).toBe(204);
    expect((await t.acc('DELETE', `/device_profiles/${second.uuid}`)).status).toBe(204);
    expect((await t.acc('DELETE', `/device_profiles/${second.uuid}`)).status).toBe(404);
  });

  it('lets members read but not create', async () => {
    expect((await t.acc('POST', '/device_profiles', { body: fpgaProfile('dp-member'), headers: member })).status).toBe(403);
    expect((await t.acc('GET', '/device_profiles', { headers: member })).status).toBe(200);
  });
});

describe('accelerator requests', () => {
  beforeAll(async () => {
    await t.acc('POST', '/device_profiles', { body: fpgaProfile('dp-arq') });
    await t.acc('POST', '/device_profiles', {
      body: [
        {
          name: 'dp-multi',
          groups: [
            { 'resources:FPGA': '2' },
            { 'resources:CUSTOM_QAT': '1', 'resources:GPU': '1' },
            { 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_XILINX': 'required' },
          ],
        },
      ],
    });
  });
  const create = async (name = 'dp-arq', headers?: Record<string, string>) =>
    ((await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: name }, headers })).json()) as { arqs: Arq[] })
      .arqs;

  it('creates one ARQ per requested unit per group', async () => {
    const arqs = await create('dp-multi');
    expect(arqs.map((a) => a.device_profile_group_id)).toEqual([0, 0, 1, 1, 2, 2]);
    const one = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'dp-multi', device_profile_group_id: '1' } });
    expect(((await one.json()) as { arqs: Arq[] }).arqs).toHaveLength(2);
  });

  it('refuses a profile that would create more ARQs than one request may, writing none', async () => {
    await t.acc('POST', '/device_profiles', {
      body: [{ name: 'dp-huge', groups: [{ 'resources:FPGA': '2147483647' }, { 'resources:GPU': '1' }] }],
    });
    const before = ((await (await t.acc('GET', '/accelerator_requests')).json()) as { arqs: Arq[] }).arqs.length;
    const res = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'dp-huge' } });
    expect(res.status).toBe(400);
    expect((await fault(res)).faultstring).toBe(
      'Device profile dp-huge would create 2147483648 accelerator requests; at most 256 can be created by one request.',
    );
    expect(((await (await t.acc('GET', '/accelerator_requests')).json()) as { arqs: Arq[] }).arqs).toHaveLength(before);
    // The group that fits can still be asked for on its own.
    const small = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'dp-huge', device_profile_group_id: '1' } });
    expect(small.status).toBe(201);
  });

  it('answers 404 for an unknown profile and 400 without a name', async () => {
    const res = await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: 'nope' } });
    expect(res.status).toBe(404);
    expect((await fault(res)).faultstring).toBe('Device Profile not found with name=nope');
    expect((await t.acc('POST', '/accelerator_requests', { body: {} })).status).toBe(400);
  });

  it('validates the bind PATCH before changing anything', async () => {
    const [a] = await create();
    const [b] = await create();
    const instance = crypto.randomUUID();
    const cases: [unknown, number, string][] = [
      [{ [a!.uuid]: [{ path: '/hostname', op: 'add', value: HOST }] }, 400, 'needs /device_rp_uuid, /instance_uuid'],
      [{ [a!.uuid]: [{ path: '/nope', op: 'add', value: 'x' }] }, 400, 'invalid path /nope'],
      [{ [a!.uuid]: [{ path: '/hostname', op: 'replace', value: 'x' }] }, 400, 'Invalid input'],
      [{ ...bindBody(a!.uuid, instance), [b!.uuid]: [{ path: '/hostname', op: 'remove' }] }, 400, 'must be add, or all remove'],
      [{ ...bindBody(a!.uuid, instance), ...bindBody(b!.uuid, instance, '33333333-3333-4333-8333-333333333333') }, 400, 'does not exist'],
      [bindBody(a!.uuid, instance, FPGA_RP, 'other-host'), 400, 'not in the tree of host other-host'],
      [bindBody(a!.uuid, instance, ROOT_RP), 400, 'has no FPGA inventory'],
      [bindBody('44444444-4444-4444-8444-444444444444', instance), 404, 'could not be found'],
      [{ [a!.uuid]: [...bindBody(a!.uuid, instance)[a!.uuid]!, { path: '/project_id', op: 'add', value: 'p2' }] }, 406, '2.1'],
    ];
    for (const [body, status, message] of cases) {
      const res = await t.acc('PATCH', '/accelerator_requests', { body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect((await fault(res)).faultstring).toContain(message);
    }
    const states = await Promise.all(
      [a, b].map(async (x) => ((await (await t.acc('GET', `/accelerator_requests/${x!.uuid}`)).json()) as Arq).state),
    );
    expect(states).toEqual(['Initial', 'Initial']);
  });

  it('checks forbidden traits and that only admins set project_id (2.1)', async () => {
    await t.acc('POST', '/device_profiles', {
      body: [{ name: 'dp-forbid', groups: [{ 'resources:FPGA': '1', 'trait:CUSTOM_FPGA_A': 'forbidden' }] }],
    });
    const [f] = await create('dp-forbid');
    const res = await t.acc('PATCH', '/accelerator_requests', { body: bindBody(f!.uuid, crypto.randomUUID()) });
    expect((await fault(res)).faultstring).toContain('forbidden trait CUSTOM_FPGA_A');

    const [m] = await create('dp-arq', member);
    expect(m!.project_id).toBe('p1');
    const withProject = {
      [m!.uuid]: [...bindBody(m!.uuid, crypto.randomUUID())[m!.uuid]!, { path: '/project_id', op: 'add', value: 'p9' }],
    };
    // Even beside a service token, only an admin may move an ARQ to another project.
    const memberViaNova = { ...member, 'x-service-token': 'nova', 'x-service-roles': 'service' };
    expect((await t.acc('PATCH', '/accelerator_requests', { body: withProject, version: '2.1', headers: memberViaNova })).status).toBe(403);
    expect((await t.acc('PATCH', '/accelerator_requests', { body: withProject, version: '2.1' })).status).toBe(202);
    await t.jobs.queue.idle();
    const shown = (await (await t.acc('GET', `/accelerator_requests/${m!.uuid}`)).json()) as Arq;
    expect(shown).toMatchObject({ state: 'Bound', project_id: 'p9' });
  });

  it('refuses binding more ARQs to an instance that already has some', async () => {
    const instance = crypto.randomUUID();
    const [a] = await create();
    const [b] = await create();
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(a!.uuid, instance) })).status).toBe(202);
    await t.jobs.queue.idle();
    const res = await t.acc('PATCH', '/accelerator_requests', { body: bindBody(b!.uuid, instance) });
    expect(res.status).toBe(409);
    expect((await fault(res)).faultstring).toContain('already has accelerator requests');
  });

  it('fails the bind when the deployable has no free attach handle', async () => {
    const arqs = await Promise.all([1, 2, 3, 4, 5].map(() => create()));
    for (const [arq] of arqs) await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arq!.uuid, crypto.randomUUID()) });
    await t.jobs.queue.idle();
    const states = await Promise.all(
      arqs.map(async ([arq]) => ((await (await t.acc('GET', `/accelerator_requests/${arq!.uuid}`)).json()) as Arq).state),
    );
    expect(states.filter((s) => s === 'BindFailed').length).toBeGreaterThan(0);
    // BindFailed cannot go back to BindStarted without an unbind.
    const failed = arqs[states.indexOf('BindFailed')]![0]!;
    expect((await t.acc('PATCH', '/accelerator_requests', { body: bindBody(failed.uuid, crypto.randomUUID()) })).status).toBe(409);
    // Cleanup frees the handles for later tests.
    for (const [arq] of arqs) await t.acc('DELETE', `/accelerator_requests/${arq!.uuid}`);
  });

  it('lists only the caller project for members; filters by instance and bind_state', async () => {
    const [mine] = await create('dp-arq', member);
    const listed = (await (await t.acc('GET', '/accelerator_requests', { headers: member })).json()) as { arqs: Arq[] };
    expect(listed.arqs.every((a) => a.project_id === 'p1')).toBe(true);
    expect(listed.arqs.map((a) => a.uuid)).toContain(mine!.uuid);
    expect((await t.acc('GET', '/accelerator_requests?bind_state=bogus')).status).toBe(400);
    const none = (await (await t.acc('GET', `/accelerator_requests?instance=${crypto.randomUUID()}`)).json()) as { arqs: Arq[] };
    expect(none.arqs).toEqual([]);
  });

  it('deletes with ?arqs= (404 for missing after deleting the rest) and refuses ambiguous deletes', async () => {
    const [a] = await create();
    const missing = crypto.randomUUID();
    const res = await t.acc('DELETE', `/accelerator_requests?arqs=${a!.uuid},${missing}`);
    expect(res.status).toBe(404);
    expect((await t.acc('GET', `/accelerator_requests/${a!.uuid}`)).status).toBe(404);
    expect((await t.acc('DELETE', '/accelerator_requests')).status).toBe(400);
    expect((await t.acc('DELETE', `/accelerator_requests?arqs=${missing}&instance=${missing}`)).status).toBe(400);
  });
});

describe('agent report', () => {
  it('replaces a host inventory and lists devices and deployables', async () => {
    const report = (handles: number) => ({
      devices: [
        {
          key: 'gpu0',
          type: 'GPU',
          vendor: '10de',
          model: 'H100',
          deployables: [
            {
              name: 'agent-host_GPU',
              num_accelerators: handles,
              rp_uuid: null,
              attach_handles: Array.from({ length: handles }, (_, i) => ({
                type: 'PCI',
                info: { domain: '0000', bus: '1a', device: '00', function: String(i) },
              })),
            },
          ],
        },
      ],
    });
    const first = await t.acc('PUT', '/hosts/agent-host/devices', { body: report(2) });
    expect(first.status).toBe(200);
    const again = await t.acc('PUT', '/hosts/agent-host/devices', { body: report(1) });
    const [dev] = ((await again.json()) as { devices: { uuid: string }[] }).devices;
    expect(dev!.uuid).toBe(((await first.json()) as { devices: { uuid: string }[] }).devices[0]!.uuid);
    const devices = (await (await t.acc('GET', '/devices?hostname=agent-host', { version: '2.3' })).json()) as {
      devices: { type: string; status: string }[];
    };
    expect(devices.devices).toEqual([expect.objectContaining({ type: 'GPU', status: 'enabled' })]);
    expect((await t.acc('GET', '/devices?hostname=agent-host')).ok).toBe(true);
    expect((await t.acc('PUT', '/hosts/agent-host/devices', { body: { devices: [{ key: 'x' }] } })).status).toBe(400);
    expect((await t.acc('PUT', '/hosts/agent-host/devices', { body: report(1), headers: member })).status).toBe(403);
    expect((await t.acc('PUT', '/hosts/agent-host/devices', { body: { devices: [] } })).status).toBe(200);
    expect(((await (await t.acc('GET', '/devices?hostname=agent-host')).json()) as { devices: unknown[] }).devices).toEqual([]);
  });
});

describe('device enable / disable', () => {
  const hostDevice = async () => {
    const { devices } = (await (await t.acc('GET', `/devices?hostname=${HOST}`, { version: '2.3' })).json()) as {
      devices: { uuid: string; status: string }[];
    };
    return devices[0]!;
  };
  const bindState = async () => {
    await t.acc('POST', '/device_profiles', { body: fpgaProfile(`dp-maint-${crypto.randomUUID().slice(0, 8)}`) });
    const profiles = (await (await t.acc('GET', '/device_profiles')).json()) as { device_profiles: { name: string }[] };
    const name = profiles.device_profiles.filter((p) => p.name.startsWith('dp-maint-')).at(-1)!.name;
    const { arqs } = (await (await t.acc('POST', '/accelerator_requests', { body: { device_profile_name: name } })).json()) as {
      arqs: Arq[];
    };
    await t.acc('PATCH', '/accelerator_requests', { body: bindBody(arqs[0]!.uuid, crypto.randomUUID()) });
    await t.jobs.queue.idle();
    const arq = (await (await t.acc('GET', `/accelerator_requests/${arqs[0]!.uuid}`)).json()) as Arq;
    await t.acc('DELETE', `/accelerator_requests/${arq.uuid}`);
    return arq.state;
  };

  it('takes a device out of service and back; binds skip it meanwhile; agent reports keep the admin status', async () => {
    const device = await hostDevice();
    expect(device.status).toBe('enabled');
    const disabled = await t.acc('POST', `/devices/${device.uuid}/disable`);
    expect(disabled.status).toBe(200);
    expect(await disabled.text()).toBe('');
    expect((await hostDevice()).status).toBe('maintaining');
    expect(await bindState()).toBe('BindFailed');
    // The host agent's next report (no status in it) does not re-enable the device.
    await seedHostReportAgain();
    expect((await hostDevice()).status).toBe('maintaining');
    expect((await t.acc('POST', `/devices/${device.uuid}/enable`)).status).toBe(200);
    expect((await hostDevice()).status).toBe('enabled');
    expect(await bindState()).toBe('Bound');
  });

  it('is for admins only and answers 404 for an unknown device', async () => {
    const device = await hostDevice();
    expect((await t.acc('POST', `/devices/${device.uuid}/disable`, { headers: member })).status).toBe(403);
    expect((await t.acc('POST', `/devices/${crypto.randomUUID()}/enable`)).status).toBe(404);
    expect((await t.acc('GET', `/devices/${device.uuid}/enable`)).status).toBe(405);
  });
});

/** The FPGA host's report as seedHost sends it, with no status. */
async function seedHostReportAgain(): Promise<void> {
  const res = await t.acc('PUT', `/hosts/${HOST}/devices`, { body: fpgaHostReport(HOST, FPGA_RP, 4) });
  expect(res.status).toBe(200);
}

describe('attributes', () => {
  type Attribute = { uuid: string; id: number; deployable_id: number; key: string; value: string; links: { href: string }[] };
  const list = async (query = '') => ((await (await t.acc('GET', `/attributes${query}`)).json()) as { attributes: Attribute[] }).attributes;

  it('creates (id as string or number), lists by deployable, shows and deletes', async () => {
    expect(await list()).toEqual([]);
    // seedHost's FPGA deployable is the first one reported: id 1.
    const created = await t.acc('POST', '/attributes', { body: { deployable_id: '1', key: 'rc', value: 'FPGA' } });
    expect(created.status).toBe(201);
    const attr = (await created.json()) as Attribute;
    expect(attr).toMatchObject({ deployable_id: 1, key: 'rc', value: 'FPGA' });
    expect(attr.links[0]!.href).toMatch(new RegExp(`/accelerator/v2/attributes/${attr.uuid}$`));
    expect((await t.acc('POST', '/attributes', { body: { deployable_id: 1, key: 'traits1', value: 'CUSTOM_FAKE' } })).status).toBe(201);

    expect((await list('?deployable_id=1')).map((a) => a.key)).toEqual(['rc', 'traits1']);
    expect(await list('?deployable_id=999')).toEqual([]);
    expect(await (await t.acc('GET', `/attributes/${attr.uuid}`)).json()).toMatchObject({ uuid: attr.uuid, key: 'rc' });

    expect((await t.acc('DELETE', `/attributes/${attr.uuid}`)).status).toBe(204);
    expect((await t.acc('GET', `/attributes/${attr.uuid}`)).status).toBe(404);
    expect((await t.acc('DELETE', `/attributes/${attr.uuid}`)).status).toBe(404);
  });

  it('refuses bad input, unknown deployables and non-admin writes', async () => {
    expect((await t.acc('POST', '/attributes', { body: { deployable_id: 'x', key: 'rc', value: 'FPGA' } })).status).toBe(400);
    expect((await t.acc('POST', '/attributes', { body: { deployable_id: 1, key: 'rc' } })).status).toBe(400);
    const unknown = await t.acc('POST', '/attributes', { body: { deployable_id: 999, key: 'rc', value: 'FPGA' } });
    expect(unknown.status).toBe(400);
    expect((await fault(unknown)).faultstring).toMatch(/Deployable 999/);
    expect((await t.acc('GET', '/attributes?deployable_id=abc')).status).toBe(400);
    expect((await t.acc('POST', '/attributes', { body: { deployable_id: 1, key: 'rc', value: 'FPGA' }, headers: member })).status).toBe(
      403,
    );
    expect((await t.acc('GET', '/attributes', { headers: member })).status).toBe(403);
  });

  it('go away with their deployable when the agent stops reporting it', async () => {
    const report = (names: string[]) => ({
      devices: [
        {
          key: 'card0',
          type: 'GPU',
          vendor: '10de',
          model: 'A100',
          deployables: names.map((name) => ({ name, num_accelerators: 1, attach_handles: [] })),
        },
      ],
    });
    expect((await t.acc('PUT', '/hosts/attr-host/devices', { body: report(['attr-host_gpu0']) })).status).toBe(200);
    // The API shows deployables by uuid only; attributes name them by row id.
    const row = await t.deps.store.client.execute({ sql: 'SELECT id FROM deployables WHERE name = ?', args: ['attr-host_gpu0'] });
    const deployableId = Number(row.rows[0]![0]);
    expect((await t.acc('POST', '/attributes', { body: { deployable_id: deployableId, key: 'rc', value: 'PGPU' } })).status).toBe(201);
    expect(await list(`?deployable_id=${deployableId}`)).toHaveLength(1);
    expect((await t.acc('PUT', '/hosts/attr-host/devices', { body: report([]) })).status).toBe(200);
    expect(await list(`?deployable_id=${deployableId}`)).toEqual([]);
  });
});
