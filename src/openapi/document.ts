// GET /openapi.json: an OpenAPI 3.1 document of both APIs (and the operator
// diagnostics), generated from operations.ts. Per operation, each body or
// query function is sampled at every microversion of its API and consecutive
// versions with the same schema become one range, so a schema that changes at
// 1.28 shows up as "1.12-1.27" and "1.28-1.33" without anyone writing that.
// Pure: built once per isolate/process, no I/O.
import * as z from 'zod';
import { CyborgErrorEnvelope } from '../cyborg/schemas/responses.js';
import { MAX_VERSION as CYBORG_MAX, MIN_VERSION as CYBORG_MIN, VERSIONS as CYBORG_VERSIONS } from '../cyborg/versions.js';
import { Microversion } from '../microversion.js';
import { PlacementErrorEnvelope } from '../placement/schemas/responses.js';
import { MAX_VERSION, MIN_VERSION } from '../placement/versions.js';
import { allOperations, type ApiName, type Operation, type QueryParam } from './operations.js';

type Json = Record<string, unknown>;

function placementVersions(): string[] {
  const min = Microversion.parse(MIN_VERSION)!;
  const max = Microversion.parse(MAX_VERSION)!;
  const out: string[] = [];
  for (let minor = min.minor; minor <= max.minor; minor++) out.push(`${min.major}.${minor}`);
  return out;
}

const VERSIONS: Record<ApiName, string[]> = {
  placement: placementVersions(),
  diagnostics: placementVersions(),
  extensions: placementVersions(),
  accelerator: [...CYBORG_VERSIONS],
  meta: [],
};

export interface VersionRange<T> {
  min: string;
  max: string;
  value: T;
}

/** Groups consecutive versions on which `valueAt` gives the same value (by `key`). */
export function versionRanges<T>(
  versions: string[],
  valueAt: (mv: Microversion) => T,
  key: (v: T) => unknown = (v) => v,
): VersionRange<T>[] {
  const out: VersionRange<T>[] = [];
  for (const version of versions) {
    const value = valueAt(Microversion.parse(version)!);
    const last = out[out.length - 1];
    if (last && key(last.value) === key(value)) last.max = version;
    else out.push({ min: version, max: version, value });
  }
  return out;
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Json {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
  delete out.$schema;
  return out;
}

/**
 * Points a component's local references (`#` and `#/$defs/X`, which zod emits
 * for recursive schemas) at the document's components: inside an OpenAPI
 * document `#` is the document, not the schema.
 */
function relocate(node: unknown, self: string, defs: Record<string, string>): unknown {
  if (Array.isArray(node)) return node.map((n) => relocate(n, self, defs));
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$ref' && typeof value === 'string' && (value === '#' || value.startsWith('#/$defs/'))) {
      out.$ref = `#/components/schemas/${value === '#' ? self : defs[value.slice('#/$defs/'.length)]}`;
    } else out[key] = relocate(value, self, defs);
  }
  return out;
}

const rangeText = (r: { min: string; max: string }) => (r.min === r.max ? r.min : `${r.min}-${r.max}`);
const openApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, '{$1}');

class Builder {
  readonly schemas: Record<string, Json> = {};
  private readonly names = { input: new Map<z.ZodType, string>(), output: new Map<z.ZodType, string>() };

  private freeName(name: string): string {
    let found = name;
    for (let i = 2; this.schemas[found]; i++) found = `${name}${i}`;
    return found;
  }

  /**
   * A component for `schema` read as a request (input) or answer (output),
   * named once; the same zod object is never emitted twice per direction.
   */
  ref(schema: z.ZodType, name: string, io: 'input' | 'output'): Json {
    let found = this.names[io].get(schema);
    if (!found) {
      found = this.freeName(name);
      const { $defs, ...body } = jsonSchema(schema, io) as Json & { $defs?: Record<string, Json> };
      this.schemas[found] = body;
      const defs: Record<string, string> = {};
      for (const def of Object.keys($defs ?? {})) {
        // zod names unnamed shared parts __schemaN; a part with a meta id keeps it.
        defs[def] = this.freeName(def.startsWith('__') ? `${found}_${def.replace(/^_+/, '')}` : def);
        this.schemas[defs[def]] = {};
      }
      this.schemas[found] = relocate(body, found, defs) as Json;
      for (const [def, schemaOfDef] of Object.entries($defs ?? {})) this.schemas[defs[def]!] = relocate(schemaOfDef, found, defs) as Json;
      this.names[io].set(schema, found);
    }
    return { $ref: `#/components/schemas/${found}` };
  }

  /**
   * Component names of the answers that change with the microversion, found
   * before any is emitted: a shape is named after the first version any
   * operation answers with it (ResourceProvider_1_14, though POST only
   * answers with a body from 1.20), and unsuffixed where it never changes.
   */
  private readonly responseNames = new Map<z.ZodType, string>();

  nameResponses(operations: { op: Operation; versions: string[] }[]): void {
    const seen = new Map<z.ZodType, { base: string; min: string; changes: boolean }>();
    for (const { op, versions } of operations) {
      if (!op.response) continue;
      const ranges = versionRanges(versions, op.response).filter((r) => r.value !== undefined);
      for (const r of ranges) {
        const known = seen.get(r.value!);
        const earlier = !known || Microversion.parse(r.min)!.compare(known.min) < 0;
        seen.set(r.value!, {
          base: known?.base ?? op.responseName ?? 'Response',
          min: earlier ? r.min : known!.min,
          changes: (known?.changes ?? false) || ranges.length > 1,
        });
      }
    }
    for (const [schema, { base, min, changes }] of seen)
      this.responseNames.set(schema, changes ? `${base}_${min.replace('.', '_')}` : base);
  }

  /** The success body: one schema, or one per microversion range (anyOf, plus the ranges). */
  responseBody(op: Operation, versions: string[]): { schema: Json; ranges?: Json[] } | undefined {
    const name = op.responseName ?? `${op.bodyName ?? 'Operation'}Response`;
    if (op.responseSchema) return { schema: this.ref(op.responseSchema, name, 'output') };
    if (!op.response) return undefined;
    const ranges = versionRanges(versions, op.response).filter((r) => r.value !== undefined);
    const entries = ranges.map((r) => ({
      min: r.min,
      max: r.max,
      schema: this.ref(r.value!, this.responseNames.get(r.value!) ?? name, 'output'),
    }));
    if (!entries.length) return undefined;
    if (entries.length === 1) return { schema: entries[0]!.schema };
    return { schema: { anyOf: entries.map((e) => e.schema) }, ranges: entries };
  }

  requestBody(op: Operation, versions: string[]): Json | undefined {
    if (!op.body) return undefined;
    const ranges = versionRanges(versions, op.body);
    const withBody = ranges.filter((r) => r.value !== undefined);
    if (!withBody.length) return undefined;
    const name = op.bodyName ?? 'Body';
    const single = ranges.length === 1;
    const entries = withBody.map((r) => ({
      min: r.min,
      max: r.max,
      schema: this.ref(r.value!, single ? name : `${name}_${r.min.replace('.', '_')}`, 'input'),
    }));
    const schema = entries.length === 1 ? entries[0]!.schema : { anyOf: entries.map((e) => e.schema) };
    const noBody = ranges.filter((r) => r.value === undefined).map(rangeText);
    return {
      required: noBody.length === 0,
      description: [
        ...entries.map((e) => `microversions ${rangeText(e)}: ${String(e.schema.$ref).split('/').pop()}`),
        ...(noBody.length ? [`no body at ${noBody.join(', ')}`] : []),
      ].join('; '),
      content: { 'application/json': { schema } },
      'x-openstack-microversion-bodies': entries.map((e) => ({ min: e.min, max: e.max, schema: e.schema })),
    };
  }
}

function queryParameters(op: Operation, versions: string[], apiMax: string | undefined): Json[] {
  if (!op.query) return [];
  // Which versions accept each key, and its latest description.
  const seen = new Map<string, { param: QueryParam; min: string; max: string }>();
  const sampled = versions.length ? versions : [''];
  for (const version of sampled) {
    const mv = Microversion.parse(version) ?? new Microversion(0, 0);
    for (const param of op.query(mv)) {
      const known = seen.get(param.name);
      if (known) {
        known.max = version;
        known.param = param;
      } else {
        seen.set(param.name, { param, min: version, max: version });
      }
    }
  }
  return [...seen.values()].map(({ param, min, max }) => {
    const limited = versions.length > 0 && (min !== versions[0] || max !== apiMax);
    const notes = [param.description, limited ? `microversions ${rangeText({ min, max })}` : undefined].filter(Boolean);
    const out: Json = {
      name: param.name,
      in: 'query',
      required: param.required ?? false,
      schema: param.schema ? jsonSchema(param.schema, 'input') : { type: 'string' },
    };
    if (notes.length) out.description = notes.join('; ');
    if (versions.length) out['x-openstack-microversions'] = { min, max };
    if (param.pattern) out['x-key-pattern'] = param.pattern;
    return out;
  });
}

const ERROR_RESPONSE: Record<ApiName, string> = {
  placement: 'PlacementError',
  diagnostics: 'PlacementError',
  extensions: 'PlacementError',
  accelerator: 'CyborgError',
  meta: 'PlacementError',
};
const VERSION_HEADER: Partial<Record<ApiName, string>> = {
  placement: 'PlacementVersion',
  diagnostics: 'PlacementVersion',
  extensions: 'PlacementVersion',
  accelerator: 'AcceleratorVersion',
};
const TAGS: Record<ApiName, string> = {
  placement: 'Placement',
  accelerator: 'Accelerator (Cyborg v2)',
  diagnostics: 'Diagnostics',
  extensions: 'Extensions',
  meta: 'Meta',
};

export function buildOpenApiDocument(): Json {
  const builder = new Builder();
  const paths: Record<string, Json> = {};
  const versionsOf = (op: Operation) => {
    const all = VERSIONS[op.api];
    return op.since ? all.filter((v) => Microversion.parse(v)!.atLeast(op.since!)) : all;
  };
  const operations = allOperations();
  builder.nameResponses(operations.map((op) => ({ op, versions: versionsOf(op) })));
  for (const op of operations) {
    const all = VERSIONS[op.api];
    const apiMax = all[all.length - 1];
    const versions = versionsOf(op);
    const pathParams = [...op.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    const header = VERSION_HEADER[op.api];
    const responses: Json = {};
    const success = builder.responseBody(op, versions);
    for (const [status, description] of Object.entries(op.responses)) {
      const code = Number(status);
      const schema = success?.schema ?? { type: 'object' };
      const content =
        code === 204 || code === 202 || code === 304 || op.bodyless?.includes(code)
          ? undefined
          : Object.fromEntries((op.mediaTypes ?? ['application/json']).map((type) => [type, { schema }]));
      const response: Json = content ? { description, content } : { description };
      if (content && success?.ranges) response['x-openstack-microversion-bodies'] = success.ranges;
      responses[status] = response;
    }
    responses['4XX'] = { $ref: `#/components/responses/${ERROR_RESPONSE[op.api]}` };
    responses['5XX'] = { $ref: `#/components/responses/${ERROR_RESPONSE[op.api]}` };
    const operation: Json = {
      operationId: `${op.method}${
        openApiPath(op.path)
          .replace(/[{}]/g, '')
          .replace(/[^A-Za-z0-9]+(.)?/g, (_, ch: string | undefined) => (ch ?? '').toUpperCase()) || 'Root'
      }`,
      summary: op.summary,
      tags: [TAGS[op.api]],
      parameters: [
        ...pathParams,
        ...(header ? [{ $ref: `#/components/parameters/${header}` }] : []),
        ...queryParameters(op, versions, apiMax),
      ],
      responses,
    };
    if (versions.length) operation['x-openstack-microversions'] = { min: versions[0], max: apiMax };
    if (op.since) operation.description = `Available from microversion ${op.since}; 404 (or 405) before.`;
    const body = builder.requestBody(op, versions);
    if (body) operation.requestBody = body;
    if (op.public) operation.security = [];
    const path = openApiPath(op.path);
    paths[path] = { ...paths[path], [op.method]: operation };
  }
  builder.ref(PlacementErrorEnvelope, 'PlacementErrorEnvelope', 'output');
  builder.ref(CyborgErrorEnvelope, 'CyborgErrorEnvelope', 'output');
  return {
    openapi: '3.1.0',
    info: {
      title: 'placement-edge',
      version: `placement ${MIN_VERSION}-${MAX_VERSION}, accelerator ${CYBORG_MIN}-${CYBORG_MAX}`,
      description:
        'OpenStack Placement and Cyborg v2 compatible APIs, plus operator diagnostics. Bodies that change with the ' +
        'microversion list one schema per range (x-openstack-microversion-bodies); query parameters name the range that accepts them.',
    },
    tags: Object.values(TAGS).map((name) => ({ name })),
    security: [{ token: [] }],
    paths,
    components: {
      schemas: builder.schemas,
      securitySchemes: {
        token: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Auth-Token',
          description: 'noauth2: "admin" or "user:project"; token mode: a configured token (also as Authorization: Bearer)',
        },
      },
      parameters: {
        PlacementVersion: {
          name: 'OpenStack-API-Version',
          in: 'header',
          required: false,
          schema: { type: 'string', examples: [`placement ${MAX_VERSION}`, 'placement latest'] },
          description: `placement ${MIN_VERSION} to ${MAX_VERSION} (default ${MIN_VERSION})`,
        },
        AcceleratorVersion: {
          name: 'OpenStack-API-Version',
          in: 'header',
          required: false,
          schema: { type: 'string', examples: [`accelerator ${CYBORG_MAX}`] },
          description: `accelerator ${CYBORG_MIN} to ${CYBORG_MAX} (default ${CYBORG_MIN})`,
        },
      },
      responses: {
        PlacementError: {
          description: 'Placement error envelope',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/PlacementErrorEnvelope' } } },
        },
        CyborgError: {
          description: 'Cyborg error envelope',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/CyborgErrorEnvelope' } } },
        },
      },
    },
  };
}

let cached: Json | undefined;
/** The document, built on first use. */
export function openApiDocument(): Json {
  cached ??= buildOpenApiDocument();
  return cached;
}
