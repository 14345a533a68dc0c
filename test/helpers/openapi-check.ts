// Checks answers against GET /openapi.json: the response the document gives
// for the operation, status and microversion (its own header) must validate
// the body. Shared by the Node suite and the Worker suite (ajv runs in both).
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'vitest';
import { Microversion } from '../../src/http/microversion.js';

interface Range {
  min: string;
  max: string;
  schema: { $ref: string };
}
interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema: { $ref?: string } }>;
  'x-openstack-microversion-bodies'?: Range[];
}
export interface OpenApiDoc {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
  components: { responses: Record<string, ResponseObject> };
}

export interface OpenApiChecker {
  /** Validates `res` against the document's answer for `method template`; returns the parsed body. */
  documented(res: Response, method: string, template: string): Promise<unknown>;
  /** "METHOD /path status" of every answer checked. */
  seen: Set<string>;
}

/** The microversion an answer was made at, from its own header. */
function versionOf(res: Response): Microversion | undefined {
  const header = res.headers.get('openstack-api-version');
  return (header && Microversion.parse(header.split(' ')[1] ?? '')) || undefined;
}

export function openApiChecker(doc: OpenApiDoc): OpenApiChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema(doc as object, 'openapi.json');
  const seen = new Set<string>();
  return {
    seen,
    async documented(res, method, template) {
      const where = `${method.toUpperCase()} ${template} -> ${res.status}`;
      const operation = doc.paths[template]?.[method.toLowerCase()];
      expect(operation, `${where}: not in the document`).toBeDefined();
      let response = operation!.responses[String(res.status)] ?? operation!.responses[`${String(res.status)[0]}XX`];
      expect(response, `${where}: status not documented`).toBeDefined();
      if (response!.$ref) response = doc.components.responses[response!.$ref.split('/').pop()!];
      const text = await res.text();
      seen.add(`${method.toUpperCase()} ${template} ${res.status}`);
      if (!response!.content) {
        expect(text, `${where}: documented without a body`).toBe('');
        return undefined;
      }
      const mediaType = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
      const media = response!.content[mediaType];
      expect(media, `${where}: ${mediaType} not documented`).toBeDefined();
      let ref = media!.schema.$ref;
      const ranges = response!['x-openstack-microversion-bodies'];
      const version = versionOf(res);
      if (ranges && version) ref = ranges.find((r) => version.compare(r.min) >= 0 && version.compare(r.max) <= 0)?.schema.$ref;
      expect(ref, `${where}: no schema at ${version?.toString()}`).toMatch(/^#\/components\/schemas\//);
      const validate = ajv.getSchema(`openapi.json${ref!}`)!;
      const body: unknown = mediaType === 'application/json' ? JSON.parse(text) : text;
      expect(validate(body) ? [] : validate.errors, `${where} @${version?.toString() ?? '-'}: ${text.slice(0, 300)}`).toEqual([]);
      return body;
    },
  };
}
