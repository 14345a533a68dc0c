// Every answer is what GET /openapi.json says it is. A seeded run through the
// Placement API (at the microversions where bodies change), the Cyborg v2 API,
// the diagnostics and the dashboard: each response, success or error, is
// validated against the schema the document gives for its operation, status
// and microversion. The last test checks that every documented operation with
// a body was seen, so a new route cannot go without a checked schema.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { buildNodeDeps } from '../../src/entry/node-service.js';
import { SITE_STATE } from '../../src/ext/sites/runtime.js';
import { startSqld } from '../helpers/sqld.js';
import { bindBody, FPGA_RP, fpgaHostReport, fpgaProfile, HOST, makeCyborgApp, ROOT_RP, type CyborgTestApp } from '../cyborg/helpers.js';
import { openApiChecker, type OpenApiChecker, type OpenApiDoc } from '../helpers/openapi-check.js';
import { makeTestApp } from '../helpers/test-app.js';
import { LIMITS } from '../../src/ext/limits/service.js';

type Json = Record<string, unknown>;

let t: CyborgTestApp;
let doc: OpenApiDoc;
let checker: OpenApiChecker;
const documented = (res: Response, method: string, template: string) => checker.documented(res, method, template);

beforeAll(async () => {
  t = await makeCyborgApp();
  doc = (await (await t.app.request('/openapi.json')).json()) as OpenApiDoc;
  checker = openApiChecker(doc);
});
afterAll(() => t.close());

/** Calls that succeed unless the test says which error it wants. */
let expectedStatus: number | undefined;
async function failing<T>(status: number, call: () => Promise<T>): Promise<T> {
  expectedStatus = status;
  try {
    return await call();
  } finally {
    expectedStatus = undefined;
  }
}
async function expectStatus(res: Response, what: string) {
  const detail = `${what}: ${(await res.clone().text()).slice(0, 300)}`;
  if (expectedStatus === undefined) expect(res.status, detail).toBeLessThan(400);
  else expect(res.status, detail).toBe(expectedStatus);
}

/** A Placement call, checked; the template is the document's path. */
async function placement(method: string, url: string, template: string, version: string, body?: unknown): Promise<Json> {
  const res = await t.call(method, url, { version, ...(body === undefined ? {} : { body }) });
  await expectStatus(res, `${method} ${url} @${version}`);
  return ((await documented(res, method, template)) ?? {}) as Json;
}

/** A Cyborg call under /accelerator/v2, checked. */
async function cyborg(method: string, url: string, template: string, version = '2.0', body?: unknown): Promise<Json> {
  const res = await t.acc(method, url, { version, ...(body === undefined ? {} : { body }) });
  await expectStatus(res, `${method} ${url} @${version}`);
  return ((await documented(res, method, `/accelerator/v2${template}`)) ?? {}) as Json;
}

const ROOT = crypto.randomUUID();
const CHILD = crypto.randomUUID();
const OLD = crypto.randomUUID();
const CONSUMER = crypto.randomUUID();
const rp = (suffix = '') => `/resource_providers/{uuid}${suffix}`;

describe('live answers match GET /openapi.json', () => {
  it('Placement: providers, inventories, traits, aggregates, classes', async () => {
    await placement('GET', '/', '/', '1.0');
    await placement('POST', '/resource_providers', '/resource_providers', '1.0', { name: 'old-style', uuid: OLD });
    await placement('POST', '/resource_providers', '/resource_providers', '1.20', { name: 'cn1', uuid: ROOT });
    await placement('POST', '/resource_providers', '/resource_providers', '1.39', {
      name: 'cn1_gpu',
      uuid: CHILD,
      parent_provider_uuid: ROOT,
    });
    for (const version of ['1.0', '1.14', '1.39']) {
      await placement('GET', '/resource_providers', '/resource_providers', version);
      await placement('GET', `/resource_providers/${ROOT}`, rp(), version);
    }
    await placement('GET', `/resource_providers?in_tree=${ROOT}`, '/resource_providers', '1.14');
    await placement('PUT', `/resource_providers/${OLD}`, rp(), '1.0', { name: 'old-renamed' });
    await placement('PUT', `/resource_providers/${OLD}`, rp(), '1.39', { name: 'old-renamed-again', parent_provider_uuid: null });

    const inventories = { VCPU: { total: 8 }, MEMORY_MB: { total: 4096, reserved: 512, allocation_ratio: 1.5 } };
    await placement('PUT', `/resource_providers/${ROOT}/inventories`, rp('/inventories'), '1.0', {
      resource_provider_generation: 0,
      inventories,
    });
    const stored = await placement('GET', `/resource_providers/${ROOT}/inventories`, rp('/inventories'), '1.39');
    const added = await placement('POST', `/resource_providers/${ROOT}/inventories`, rp('/inventories'), '1.0', {
      resource_provider_generation: stored.resource_provider_generation,
      resource_class: 'DISK_GB',
      total: 100,
    });
    const one = rp('/inventories/{resource_class}');
    await placement('GET', `/resource_providers/${ROOT}/inventories/DISK_GB`, one, '1.39');
    await placement('PUT', `/resource_providers/${ROOT}/inventories/DISK_GB`, one, '1.39', {
      resource_provider_generation: added.resource_provider_generation,
      total: 200,
    });
    await placement('DELETE', `/resource_providers/${ROOT}/inventories/DISK_GB`, one, '1.39');
    await placement('PUT', `/resource_providers/${CHILD}/inventories`, rp('/inventories'), '1.39', {
      resource_provider_generation: 0,
      inventories: { VGPU: { total: 4 } },
    });

    const aggregate = crypto.randomUUID();
    await placement('PUT', `/resource_providers/${OLD}/aggregates`, rp('/aggregates'), '1.1', [aggregate]);
    await placement('GET', `/resource_providers/${OLD}/aggregates`, rp('/aggregates'), '1.1');
    const aggregates = await placement('GET', `/resource_providers/${ROOT}/aggregates`, rp('/aggregates'), '1.19');
    await placement('PUT', `/resource_providers/${ROOT}/aggregates`, rp('/aggregates'), '1.39', {
      aggregates: [aggregate],
      resource_provider_generation: aggregates.resource_provider_generation,
    });

    await placement('PUT', '/traits/CUSTOM_DOC_TRAIT', '/traits/{name}', '1.6');
    await placement('PUT', '/traits/CUSTOM_DOC_TRAIT', '/traits/{name}', '1.6');
    await placement('GET', '/traits/CUSTOM_DOC_TRAIT', '/traits/{name}', '1.6');
    await placement('GET', '/traits?name=startswith:CUSTOM_', '/traits', '1.6');
    const traits = await placement('GET', `/resource_providers/${ROOT}/traits`, rp('/traits'), '1.6');
    await placement('PUT', `/resource_providers/${ROOT}/traits`, rp('/traits'), '1.39', {
      traits: ['CUSTOM_DOC_TRAIT', 'HW_CPU_X86_AVX2'],
      resource_provider_generation: traits.resource_provider_generation,
    });
    await placement('DELETE', `/resource_providers/${OLD}/traits`, rp('/traits'), '1.6');

    // Extension: shared counters (docs/extensions-gpu.md), on an inventory the child has.
    const counters = await placement('GET', `/ext/resource_providers/${CHILD}/counters`, '/ext/resource_providers/{uuid}/counters', '1.39');
    const childInventory = Object.keys(
      (await placement('GET', `/resource_providers/${CHILD}/inventories`, rp('/inventories'), '1.39')).inventories as Json,
    );
    await placement('PUT', `/ext/resource_providers/${CHILD}/counters`, '/ext/resource_providers/{uuid}/counters', '1.39', {
      resource_provider_generation: counters.resource_provider_generation,
      counters: { slices: 7 },
      consumption: Object.fromEntries(childInventory.map((rc) => [rc, { slices: 1 }])),
    });
    await failing(409, () =>
      placement('PUT', `/ext/resource_providers/${CHILD}/counters`, '/ext/resource_providers/{uuid}/counters', '1.39', {
        resource_provider_generation: 0,
        counters: {},
        consumption: {},
      }),
    );

    await placement('GET', '/resource_classes', '/resource_classes', '1.2');
    await placement('POST', '/resource_classes', '/resource_classes', '1.2', { name: 'CUSTOM_DOC_A' });
    await placement('GET', '/resource_classes/CUSTOM_DOC_A', '/resource_classes/{name}', '1.2');
    await placement('PUT', '/resource_classes/CUSTOM_DOC_A', '/resource_classes/{name}', '1.2', { name: 'CUSTOM_DOC_B' });
    await placement('PUT', '/resource_classes/CUSTOM_DOC_C', '/resource_classes/{name}', '1.7');
    await placement('PUT', '/resource_classes/CUSTOM_DOC_C', '/resource_classes/{name}', '1.7');
    await placement('DELETE', '/resource_classes/CUSTOM_DOC_C', '/resource_classes/{name}', '1.7');
  });

  it('Placement: allocations, usages and candidates at each shape', async () => {
    const claim = { allocations: { [ROOT]: { resources: { VCPU: 2, MEMORY_MB: 1024 } } }, project_id: 'proj', user_id: 'user' };
    await placement('PUT', `/allocations/${CONSUMER}`, '/allocations/{consumer_uuid}', '1.12', claim);
    for (const version of ['1.0', '1.12', '1.28', '1.38']) {
      await placement('GET', `/allocations/${CONSUMER}`, '/allocations/{consumer_uuid}', version);
      await placement('GET', `/resource_providers/${ROOT}/allocations`, rp('/allocations'), version);
    }
    // No allocations: no owner fields, at every shape.
    await placement('GET', `/allocations/${crypto.randomUUID()}`, '/allocations/{consumer_uuid}', '1.38');
    const typed = crypto.randomUUID();
    await placement('POST', '/allocations', '/allocations', '1.38', {
      [typed]: {
        allocations: { [CHILD]: { resources: { VGPU: 1 } } },
        project_id: 'proj',
        user_id: 'user',
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    await placement('GET', `/resource_providers/${CHILD}/usages`, rp('/usages'), '1.0');
    for (const version of ['1.9', '1.38']) await placement('GET', '/usages?project_id=proj', '/usages', version);
    for (const version of ['1.10', '1.12', '1.17', '1.27', '1.29', '1.34', '1.39']) {
      const body = await placement('GET', '/allocation_candidates?resources=VCPU:1', '/allocation_candidates', version);
      expect((body.allocation_requests as unknown[]).length, version).toBeGreaterThan(0);
    }
    await placement('GET', '/allocation_candidates?resources=VCPU:1&resources1=VGPU:1&group_policy=none', '/allocation_candidates', '1.39');
    await placement('DELETE', `/allocations/${typed}`, '/allocations/{consumer_uuid}', '1.38');
  });

  it('Placement: error envelopes, with and without codes', async () => {
    for (const version of ['1.0', '1.22', '1.23', '1.39']) {
      await failing(404, () => placement('GET', `/resource_providers/${crypto.randomUUID()}`, rp(), version));
    }
    await failing(409, () =>
      placement('PUT', `/resource_providers/${ROOT}/traits`, rp('/traits'), '1.39', { traits: [], resource_provider_generation: 999 }),
    );
    await failing(400, () => placement('POST', '/resource_providers', '/resource_providers', '1.39', { nom: 'x' }));
    // 406: the envelope carries min_version and max_version.
    const res = await t.app.request('/resource_providers', {
      headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement 9.99' },
    });
    expect(res.status).toBe(406);
    await documented(res, 'get', '/resource_providers');
  });

  it('Cyborg v2: devices, deployables, attributes, profiles, ARQs, outbox', async () => {
    for (const path of ['/accelerator/', '/accelerator/v2']) {
      const res = await t.app.request(path);
      await documented(res, 'get', path);
    }
    await cyborg('PUT', `/hosts/${HOST}/devices`, '/hosts/{hostname}/devices', '2.0', fpgaHostReport(HOST, FPGA_RP, 1));
    await cyborg('GET', `/hosts/${HOST}/devices`, '/hosts/{hostname}/devices');
    let deviceUuid = '';
    for (const version of ['2.0', '2.3']) {
      const list = await cyborg('GET', `/devices?hostname=${HOST}`, '/devices', version);
      deviceUuid = (list.devices as { uuid: string }[])[0]!.uuid;
      await cyborg('GET', `/devices/${deviceUuid}`, '/devices/{uuid}', version);
    }
    await cyborg('POST', `/devices/${deviceUuid}/disable`, '/devices/{uuid}/disable');
    await cyborg('POST', `/devices/${deviceUuid}/enable`, '/devices/{uuid}/enable');
    const deployables = await cyborg('GET', '/deployables', '/deployables');
    const deployable = (deployables.deployables as { uuid: string; id?: number; device_id: number }[])[0]!;
    await cyborg('GET', `/deployables/${deployable.uuid}`, '/deployables/{uuid}');
    await cyborg('PUT', `/deployables/${deployable.uuid}/programmed`, '/deployables/{uuid}/programmed', '2.0', { bitstream_id: 'bs-1' });

    const attribute = await cyborg('POST', '/attributes', '/attributes', '2.0', { deployable_id: '1', key: 'rc', value: 'FPGA' });
    await cyborg('GET', '/attributes?deployable_id=1', '/attributes');
    await cyborg('GET', `/attributes/${String(attribute.uuid)}`, '/attributes/{uuid}');
    await cyborg('DELETE', `/attributes/${String(attribute.uuid)}`, '/attributes/{uuid}');

    // The placement side the profile needs: FPGA inventory and trait on the device provider.
    await placement('POST', '/resource_providers', '/resource_providers', '1.39', { name: HOST, uuid: ROOT_RP });
    await placement('POST', '/resource_providers', '/resource_providers', '1.39', {
      name: `${HOST}_FPGA_RP`,
      uuid: FPGA_RP,
      parent_provider_uuid: ROOT_RP,
    });
    await placement('PUT', `/resource_providers/${FPGA_RP}/inventories`, rp('/inventories'), '1.39', {
      resource_provider_generation: 0,
      inventories: { FPGA: { total: 1 } },
    });
    await placement('PUT', '/traits/CUSTOM_FPGA_A', '/traits/{name}', '1.39');
    await placement('PUT', `/resource_providers/${FPGA_RP}/traits`, rp('/traits'), '1.39', {
      traits: ['CUSTOM_FPGA_A'],
      resource_provider_generation: 1,
    });

    const profile = await cyborg('POST', '/device_profiles', '/device_profiles', '2.0', fpgaProfile('doc-dp'));
    await cyborg('GET', '/device_profiles?name=doc-dp', '/device_profiles');
    await cyborg('GET', `/device_profiles/${String(profile.uuid)}`, '/device_profiles/{key}');
    await cyborg('GET', '/device_profiles/doc-dp', '/device_profiles/{key}', '2.2');

    const created = await cyborg('POST', '/accelerator_requests', '/accelerator_requests', '2.0', { device_profile_name: 'doc-dp' });
    const arq = (created.arqs as { uuid: string }[])[0]!;
    const instance = crypto.randomUUID();
    await cyborg('PATCH', '/accelerator_requests', '/accelerator_requests', '2.0', bindBody(arq.uuid, instance));
    await t.jobs.queue.idle();
    const bound = await cyborg('GET', `/accelerator_requests/${arq.uuid}`, '/accelerator_requests/{uuid}');
    expect(bound.state, JSON.stringify(await (await t.acc('GET', '/outbox')).json())).toBe('Bound');
    await cyborg('GET', `/accelerator_requests?instance=${instance}&bind_state=resolved`, '/accelerator_requests');
    await cyborg('GET', '/accelerator_requests', '/accelerator_requests');
    await cyborg('GET', '/outbox', '/outbox');
    await cyborg('GET', '/outbox?state=done', '/outbox');
    await cyborg('DELETE', `/accelerator_requests?instance=${instance}`, '/accelerator_requests');
    await cyborg('DELETE', '/device_profiles?value=doc-dp', '/device_profiles');
  });

  it('Cyborg v2: its own error envelope, messages unchanged', async () => {
    const badState = await t.acc('GET', '/accelerator_requests?bind_state=bound');
    expect(badState.status).toBe(400);
    const body = (await documented(badState, 'get', '/accelerator/v2/accelerator_requests')) as { error_message: string };
    expect(JSON.parse(body.error_message)).toEqual({
      faultcode: 'Client',
      faultstring: "Invalid bind_state bound: only 'resolved' is supported.",
      debuginfo: null,
    });
    const badOutbox = await t.acc('GET', '/outbox?state=later');
    const outboxBody = (await documented(badOutbox, 'get', '/accelerator/v2/outbox')) as { error_message: string };
    expect(JSON.parse(outboxBody.error_message).faultstring).toBe('Invalid state later: one of pending, done, dead.');
    await failing(404, () => cyborg('GET', `/devices/${crypto.randomUUID()}`, '/devices/{uuid}'));
    await failing(406, () => cyborg('GET', '/device_profiles/by-name', '/device_profiles/{key}', '2.0'));
  });

  it('diagnostics, dashboard and this document', async () => {
    const admin = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest' };
    const get = (path: string, headers: Record<string, string> = admin) => t.app.request(path, { headers });
    await documented(await get('/diagnostics/audit'), 'get', '/diagnostics/audit');
    await documented(
      await t.app.request('/diagnostics/audit/repairs', {
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/json' },
        body: JSON.stringify({ dry_run: true, delete_empty_consumers: [CONSUMER] }),
      }),
      'post',
      '/diagnostics/audit/repairs',
    );
    await documented(
      await get('/diagnostics/allocation_candidates?resources=VCPU:4&host=cn1'),
      'get',
      '/diagnostics/allocation_candidates',
    );
    await documented(await get('/diagnostics/audit?limit=0'), 'get', '/diagnostics/audit');

    await documented(await get('/dashboard/api/summary'), 'get', '/dashboard/api/summary');
    await documented(await get('/dashboard/api/summary?page=0'), 'get', '/dashboard/api/summary');
    const page = await get('/dashboard', {});
    const etag = page.headers.get('etag')!;
    await documented(page, 'get', '/dashboard');
    await documented(await get('/dashboard', { 'if-none-match': etag }), 'get', '/dashboard');
    for (const file of ['app.js', 'app.css'])
      await documented(await get(`/dashboard/assets/${file}`, {}), 'get', '/dashboard/assets/{file}');
    await documented(await get('/openapi.json', {}), 'get', '/openapi.json');
    await documented(await get('/healthz', {}), 'get', '/healthz');
    await documented(await get('/readyz', {}), 'get', '/readyz');
    await documented(await get('/metrics'), 'get', '/metrics');
  });

  it('extensions: headroom, taints, the drain list, leases', async () => {
    const admin = { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest' };
    const send = (method: string, path: string, body?: unknown) =>
      t.app.request(path, {
        method,
        headers: body === undefined ? admin : { ...admin, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const host = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: `ext-${host}`, uuid: host } })).status).toBe(200);
    await t.call('PUT', `/resource_providers/${host}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
    });
    const consumer = crypto.randomUUID();
    await t.call('PUT', `/allocations/${consumer}`, {
      body: {
        allocations: { [host]: { resources: { VCPU: 1 } } },
        project_id: crypto.randomUUID(),
        user_id: crypto.randomUUID(),
        consumer_generation: null,
        consumer_type: 'INSTANCE',
      },
    });
    await documented(await send('GET', '/ext/headroom?resources=VCPU:1'), 'get', '/ext/headroom');
    const taints = `/ext/resource_providers/${host}/taints`;
    const read = (await documented(await send('GET', taints), 'get', '/ext/resource_providers/{uuid}/taints')) as Json;
    const taint = { key: 'maintenance', effect: 'NoSchedule' };
    const put = await send('PUT', taints, { resource_provider_generation: read.resource_provider_generation, taints: [taint] });
    expect(put.status).toBe(200);
    await documented(put, 'put', '/ext/resource_providers/{uuid}/taints');
    await documented(await send('GET', '/ext/taints'), 'get', '/ext/taints');
    const lease = `/ext/leases/${consumer}`;
    await documented(await send('PUT', lease, { seconds: 60 }), 'put', '/ext/leases/{consumer_uuid}');
    await documented(await send('GET', lease), 'get', '/ext/leases/{consumer_uuid}');
    await documented(await send('GET', '/ext/leases'), 'get', '/ext/leases');
    await documented(await send('DELETE', lease), 'delete', '/ext/leases/{consumer_uuid}');
    await documented(await send('GET', lease), 'get', '/ext/leases/{consumer_uuid}');
    const gangs = (await documented(
      await send('GET', '/ext/gang_candidates?count=1&resources=VCPU:1&ext_domain=any'),
      'get',
      '/ext/gang_candidates',
    )) as {
      gangs: { allocation_requests: { allocations: Json }[] }[];
    };
    const member = {
      allocations: gangs.gangs[0]!.allocation_requests[0]!.allocations,
      project_id: crypto.randomUUID(),
      user_id: crypto.randomUUID(),
    };
    const members = { [crypto.randomUUID()]: { ...member, consumer_generation: null, consumer_type: 'INSTANCE' } };
    await documented(await send('POST', '/ext/gangs', { members, lease_seconds: 60 }), 'post', '/ext/gangs');
    // What if (docs/simulate.md): a flavor change that displaces the server, and a plan.
    const simulation = {
      changes: [
        { op: 'set_inventory', providers: [host], resource_class: 'VCPU', total: 1 },
        { op: 'add_copies', of: host, count: 1 },
      ],
      queries: [
        { name: 'one', query: 'resources=VCPU:1' },
        { name: 'gangs', query: 'resources=VCPU:1&count=2' },
      ],
      per_tree: true,
    };
    await documented(await send('POST', '/ext/simulate', simulation), 'post', '/ext/simulate');
    await documented(await send('GET', '/ext/defrag?resources=VCPU:4'), 'get', '/ext/defrag');
  });

  it('extensions: project limits (PLACEMENT_LIMITS=static)', async () => {
    const limited = await makeTestApp({ PLACEMENT_LIMITS: 'static', PLACEMENT_LIMITS_JSON: '{"registered": {"class:VCPU": 1}}' });
    try {
      await limited.deps.extensions.state(LIMITS)!.start();
      const host = crypto.randomUUID();
      expect((await limited.call('POST', '/resource_providers', { body: { name: `limits-${host}`, uuid: host } })).status).toBe(200);
      await limited.call('PUT', `/resource_providers/${host}/inventories`, {
        body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
      });
      const project = crypto.randomUUID();
      const claim = () =>
        limited.call('PUT', `/allocations/${crypto.randomUUID()}`, {
          body: {
            allocations: { [host]: { resources: { VCPU: 1 } } },
            project_id: project,
            user_id: project,
            consumer_generation: null,
            consumer_type: 'INSTANCE',
          },
        });
      expect((await claim()).status).toBe(204);
      await documented(await claim(), 'put', '/allocations/{consumer_uuid}');
      await documented(await limited.call('GET', `/ext/limits?project_id=${project}`), 'get', '/ext/limits');
      await documented(await limited.call('GET', '/ext/limits'), 'get', '/ext/limits');
      await documented(await limited.call('POST', '/ext/limits/refresh'), 'post', '/ext/limits/refresh');
    } finally {
      limited.close();
    }
  });

  it('extensions: holds and their availability', async () => {
    const host = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: `holds-${host}`, uuid: host } })).status).toBe(200);
    await t.call('PUT', `/resource_providers/${host}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
    });
    const project = crypto.randomUUID();
    const consumer = crypto.randomUUID();
    const body = {
      allocations: { [host]: { resources: { VCPU: 1 } } },
      project_id: project,
      user_id: project,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
    expect((await t.call('PUT', `/allocations/${consumer}`, { body })).status).toBe(204);
    const start = new Date(Date.now() + 3600_000).toISOString();
    const end = new Date(Date.now() + 7200_000).toISOString();
    const made = await t.call('POST', '/ext/holds', {
      body: { project_id: project, start, end, allocations: { [host]: { resources: { VCPU: 2 } } } },
    });
    expect(made.status).toBe(201);
    const hold = (await documented(made, 'post', '/ext/holds')) as Json;
    await documented(await t.call('GET', `/ext/holds/${hold.uuid}`), 'get', '/ext/holds/{uuid}');
    await documented(await t.call('PATCH', `/ext/holds/${hold.uuid}`, { body: { generation: 1, end } }), 'patch', '/ext/holds/{uuid}');
    await documented(await t.call('GET', `/ext/holds?project_id=${project}`), 'get', '/ext/holds');
    await documented(await t.call('GET', '/ext/holds/availability?resources=VCPU:1&duration=60'), 'get', '/ext/holds/availability');
    await documented(await t.call('GET', '/ext/holds/timeline'), 'get', '/ext/holds/timeline');
  });

  it('extensions: priorities, preemption candidates and preemptions', async () => {
    const host = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: `preempt-${host}`, uuid: host } })).status).toBe(200);
    await t.call('PUT', `/resource_providers/${host}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
    });
    const project = crypto.randomUUID();
    const victim = crypto.randomUUID();
    const body = {
      allocations: { [host]: { resources: { VCPU: 4 } } },
      project_id: project,
      user_id: project,
      consumer_generation: null,
      consumer_type: 'INSTANCE',
    };
    expect((await t.call('PUT', `/allocations/${victim}`, { body })).status).toBe(204);
    await documented(await t.call('PUT', `/ext/priorities/${project}`, { body: { priority: 0 } }), 'put', '/ext/priorities/{project_id}');
    await documented(await t.call('GET', `/ext/priorities/${project}`), 'get', '/ext/priorities/{project_id}');
    await documented(await t.call('GET', '/ext/priorities'), 'get', '/ext/priorities');
    await documented(
      await t.call('PUT', `/ext/consumers/${victim}/priority`, { body: { priority: 1 } }),
      'put',
      '/ext/consumers/{consumer_uuid}/priority',
    );
    await documented(await t.call('GET', `/ext/consumers/${victim}/priority`), 'get', '/ext/consumers/{consumer_uuid}/priority');
    await documented(
      await t.call('GET', `/ext/preemption_candidates?resources=VCPU:2&in_tree=${host}&ext_priority=5`),
      'get',
      '/ext/preemption_candidates',
    );
    const made = await t.call('POST', '/ext/preemptions', {
      body: {
        preemptor: {
          consumer_uuid: crypto.randomUUID(),
          project_id: project,
          priority: 5,
          allocations: { [host]: { resources: { VCPU: 2 } } },
        },
        victims: [victim],
        grace_seconds: 30,
      },
    });
    expect(made.status).toBe(201);
    const preemption = (await documented(made, 'post', '/ext/preemptions')) as Json;
    await documented(await t.call('GET', `/ext/preemptions/${preemption.id}`), 'get', '/ext/preemptions/{id}');
    await documented(await t.call('GET', '/ext/events?kind=preemption'), 'get', '/ext/events');
  });

  it("extensions: an edge site's slice", async () => {
    const host = crypto.randomUUID();
    const aggregate = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: `site-${host}`, uuid: host } })).status).toBe(200);
    await t.call('PUT', `/resource_providers/${host}/inventories`, {
      body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
    });
    await t.call('PUT', `/resource_providers/${host}/aggregates`, {
      body: { resource_provider_generation: 1, aggregates: [aggregate] },
    });
    const put = await t.call('PUT', '/ext/sites/site-openapi', {
      body: { aggregate, capacity: { [host]: { resources: { VCPU: 2 } } } },
    });
    expect(put.status).toBe(200);
    await documented(put, 'put', '/ext/sites/{site}');
    await documented(await t.call('GET', '/ext/sites/site-openapi'), 'get', '/ext/sites/{site}');
    // A site instance (site mode needs a libSQL server as its primary: sqld here).
    const sqld = await startSqld();
    const dir = mkdtempSync(join(tmpdir(), 'site-openapi-'));
    const site = await buildNodeDeps(
      loadConfig({
        PLACEMENT_DB_URL: sqld.url,
        PLACEMENT_SITE: 'site-openapi',
        PLACEMENT_SITE_DB_PATH: join(dir, 'site.db'),
        PLACEMENT_WORKERS: '1',
      }),
      { debug() {}, info() {}, warn() {}, error() {} },
    );
    try {
      const res = await createApp(site).request('/ext/site', {
        headers: { 'x-auth-token': 'admin', 'openstack-api-version': 'placement latest' },
      });
      expect(res.status).toBe(200);
      await documented(res, 'get', '/ext/site');
    } finally {
      site.extensions.state(SITE_STATE)?.stop();
      site.store.close();
      sqld.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('saw an answer of every documented operation that has a body', () => {
    const withBody: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const bodied = Object.entries(operation.responses).some(([status, r]) => /^2\d\d$/.test(status) && r.content);
        if (bodied) withBody.push(`${method.toUpperCase()} ${path}`);
      }
    }
    const seen = checker.seen;
    const checked = new Set([...seen].filter((s) => / 2\d\d$/.test(s)).map((s) => s.replace(/ \d+$/, '')));
    expect(withBody.filter((op) => !checked.has(op)).sort()).toEqual([]);
    // And an error of each envelope.
    expect([...seen].some((s) => s.startsWith('GET /resource_providers/{uuid} 404'))).toBe(true);
    expect([...seen].some((s) => s.startsWith('GET /accelerator/v2/devices/{uuid} 404'))).toBe(true);
  });
});
