// GET /openapi.json inside workerd: the Worker serves the same document, and
// its own answers (Placement at several microversions, Cyborg, diagnostics,
// the dashboard, both error envelopes) validate against it. The database is
// shared with the other worker files: this file makes its own providers.
import { exports } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { openApiChecker, type OpenApiChecker, type OpenApiDoc } from '../helpers/openapi-check.js';

const worker = (exports as unknown as { default: { fetch(req: Request): Promise<Response> } }).default;

function call(method: string, path: string, version: string, body?: unknown): Promise<Response> {
  const api = path.startsWith('/accelerator') ? 'accelerator' : 'placement';
  const headers: Record<string, string> = { 'x-auth-token': 'admin', 'openstack-api-version': `${api} ${version}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return worker.fetch(
    new Request(`http://placement.test${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }),
  );
}

let checker: OpenApiChecker;
/** Calls and checks the answer against the document; `status` is the one expected. */
async function check(method: string, path: string, template: string, version: string, status: number, body?: unknown) {
  const res = await call(method, path, version, body);
  expect(res.status, `${method} ${path} @${version}`).toBe(status);
  return (await checker.documented(res, method, template)) as Record<string, unknown>;
}

beforeAll(async () => {
  const res = await worker.fetch(new Request('http://placement.test/openapi.json'));
  expect(res.status).toBe(200);
  checker = openApiChecker((await res.json()) as OpenApiDoc);
});

describe('the OpenAPI document in workerd', () => {
  it("describes the Worker's Placement answers", async () => {
    const root = crypto.randomUUID();
    const consumer = crypto.randomUUID();
    const project = crypto.randomUUID();
    await check('GET', '/', '/', '1.0', 200);
    await check('POST', '/resource_providers', '/resource_providers', '1.20', 200, { name: `doc-${root}`, uuid: root });
    for (const version of ['1.0', '1.14', '1.39']) {
      await check('GET', `/resource_providers?name=doc-${root}`, '/resource_providers', version, 200);
      await check('GET', `/resource_providers/${root}`, '/resource_providers/{uuid}', version, 200);
    }
    await check('PUT', `/resource_providers/${root}/inventories`, '/resource_providers/{uuid}/inventories', '1.39', 200, {
      resource_provider_generation: 0,
      inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 2048 } },
    });
    await check('PUT', `/allocations/${consumer}`, '/allocations/{consumer_uuid}', '1.12', 204, {
      allocations: { [root]: { resources: { VCPU: 1 } } },
      project_id: project,
      user_id: 'u',
    });
    for (const version of ['1.0', '1.12', '1.28', '1.38']) {
      await check('GET', `/allocations/${consumer}`, '/allocations/{consumer_uuid}', version, 200);
      await check('GET', `/resource_providers/${root}/allocations`, '/resource_providers/{uuid}/allocations', version, 200);
    }
    for (const version of ['1.9', '1.38']) await check('GET', `/usages?project_id=${project}`, '/usages', version, 200);
    await check('GET', `/resource_providers/${root}/usages`, '/resource_providers/{uuid}/usages', '1.0', 200);
    await check('GET', '/allocation_candidates?resources=VCPU:1', '/allocation_candidates', '1.10', 200);
    for (const version of ['1.31', '1.39']) {
      await check('GET', `/allocation_candidates?resources=VCPU:1&in_tree=${root}`, '/allocation_candidates', version, 200);
    }
    await check('GET', `/resource_providers/${crypto.randomUUID()}`, '/resource_providers/{uuid}', '1.0', 404);
    await check('GET', `/resource_providers/${crypto.randomUUID()}`, '/resource_providers/{uuid}', '1.39', 404);
  });

  it("describes the Worker's Cyborg, diagnostics and dashboard answers", async () => {
    const versions = await worker.fetch(new Request('http://placement.test/accelerator/'));
    await checker.documented(versions, 'get', '/accelerator/');
    await check('GET', '/accelerator/v2/device_profiles', '/accelerator/v2/device_profiles', '2.0', 200);
    for (const version of ['2.0', '2.3']) await check('GET', '/accelerator/v2/devices', '/accelerator/v2/devices', version, 200);
    await check('GET', '/accelerator/v2/outbox?state=dead', '/accelerator/v2/outbox', '2.0', 200);
    await check('GET', `/accelerator/v2/devices/${crypto.randomUUID()}`, '/accelerator/v2/devices/{uuid}', '2.0', 404);
    await check('GET', '/accelerator/v2/accelerator_requests?bind_state=x', '/accelerator/v2/accelerator_requests', '2.0', 400);
    await check('GET', '/diagnostics/audit?limit=5', '/diagnostics/audit', 'latest', 200);
    await check('GET', '/dashboard/api/summary?per_page=5', '/dashboard/api/summary', 'latest', 200);
    expect(checker.seen.size).toBeGreaterThan(10);
  });
});
