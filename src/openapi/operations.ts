// Every operation the app serves, for GET /openapi.json, in the order the
// document lists them. The APIs' operations come from the same RouteTable
// declarations the routers register (src/http/route-table.ts): each entry
// points at the zod schema (or the schema(mv) function, or the parser's key
// table) its handler validates with; document.ts samples those at every
// microversion to find the ranges. The few routes outside the API kits (the
// dashboard, this document, health and metrics) are listed here.
import { z } from 'zod';
import { CYBORG_V2_ROUTES, rootRoutes as cyborgRootRoutes } from '../cyborg/http/routes/index.js';
import { SummaryQueryString, SummaryResponse } from '../dashboard/schema.js';
import { DIAGNOSTICS_ROUTES } from '../diagnostics/http/routes/index.js';
import { EXT_ROUTES } from '../ext/http/routes/index.js';
import { operationsBelow, zodQuery, type Operation } from '../http/route-table.js';
import { PLACEMENT_ROUTES } from '../placement/http/routes/index.js';

export type { ApiName, Method, Operation, QueryParam } from '../http/route-table.js';

/** The dashboard's page and assets: text. */
const TEXT = z.string();

/** /healthz and /readyz: a status, and on a 503 the reason. */
const HealthSchema = z.object({ status: z.string(), reason: z.string().optional() });

/** This document, as far as its consumers rely on it. */
const OpenApiDocumentSchema = z.looseObject({
  openapi: z.literal('3.1.0'),
  info: z.looseObject({ title: z.string(), version: z.string() }),
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
  components: z.looseObject({ schemas: z.record(z.string(), z.unknown()) }),
});

export const OPERATIONS: Operation[] = [
  ...operationsBelow('', PLACEMENT_ROUTES),
  ...operationsBelow('/accelerator', [cyborgRootRoutes]),
  ...operationsBelow('/accelerator/v2', CYBORG_V2_ROUTES),
  ...operationsBelow('/diagnostics', DIAGNOSTICS_ROUTES),
  // The extensions (docs/extensions.md).
  ...operationsBelow('/ext', EXT_ROUTES),

  // --- Capacity dashboard -----------------------------------------------------
  {
    api: 'meta',
    method: 'get',
    path: '/dashboard',
    summary: 'The capacity dashboard (HTML page)',
    public: true,
    responses: { 200: 'The page', 304: 'Not modified' },
    mediaTypes: ['text/html'],
    responseSchema: TEXT,
    responseName: 'Text',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/dashboard/assets/:file',
    summary: "The dashboard's script and stylesheet",
    public: true,
    responses: { 200: 'The asset', 304: 'Not modified' },
    mediaTypes: ['text/javascript', 'text/css'],
    responseSchema: TEXT,
    responseName: 'Text',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/dashboard/api/summary',
    summary: 'Capacity summary behind the dashboard (admin): trees, totals, usage per project',
    query: () => zodQuery(SummaryQueryString),
    responses: { 200: 'The summary' },
    responseSchema: SummaryResponse,
    responseName: 'DashboardSummary',
  },

  // --- This document ----------------------------------------------------------
  {
    api: 'meta',
    method: 'get',
    path: '/openapi.json',
    summary: 'This OpenAPI document',
    public: true,
    responses: { 200: 'OpenAPI 3.1' },
    responseSchema: OpenApiDocumentSchema,
    responseName: 'OpenApiDocument',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/healthz',
    summary: 'Liveness: the process serves (reads nothing)',
    public: true,
    responses: { 200: 'Serving' },
    responseSchema: HealthSchema,
    responseName: 'Health',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/readyz',
    summary: 'Readiness: the database answers, migrations are applied, standard names are synced (503 with the reason otherwise)',
    public: true,
    responses: { 200: 'Ready' },
    responseSchema: HealthSchema,
    responseName: 'Health',
  },
  {
    api: 'meta',
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus text exposition (open in noauth2; otherwise an admin token or PLACEMENT_METRICS_TOKEN)',
    responses: { 200: 'The metrics' },
    mediaTypes: ['text/plain'],
    responseSchema: TEXT,
    responseName: 'Text',
  },
];
