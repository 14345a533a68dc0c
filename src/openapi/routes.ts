// GET /openapi.json: this document, declared like every other route.
import * as z from 'zod';
import { RouteTable } from '../http/route-table.js';
import { openApiDocument } from './document.js';

/** This document, as far as its consumers rely on it. */
const OpenApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.looseObject({ schemas: z.record(z.string(), z.unknown()) }),
});

export const openApiRoutes = new RouteTable('meta').resource('/openapi.json', {
  GET: {
    summary: 'This OpenAPI document',
    public: true,
    responses: { 200: 'OpenAPI 3.1' },
    responseSchema: OpenApiDocumentSchema,
    responseName: 'OpenApiDocument',
    handler: (c) => c.json(openApiDocument()),
  },
});
