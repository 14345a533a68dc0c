// GET /diagnostics/audit (paged report) and POST /diagnostics/audit/repairs
// (safe repairs, dry run first); the logic is ../audit.ts.
import type { z } from 'zod';
import type { AppContext } from '../../../http/env.js';
import { badQuery, queryParams, readBody, validationMessage } from '../../../http/validate.js';
import { authorize } from '../../../placement/http/middleware.js';
import {
  applyAuditRepairs,
  type AuditCheck,
  auditQuery,
  auditReport,
  auditReportSchema,
  AuditRepairsRequest,
  AuditRepairsResult,
} from '../../audit.js';
import { DIAGNOSTICS_RULE } from '../../policy.js';
import { RouteTable, always, zodQuery } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';

/** A single-valued query (the last value wins) checked with `schema`; 400 in placement's words. */
function readQuery<S extends z.ZodType>(c: AppContext, schema: S): z.infer<S> {
  const single: Record<string, string> = {};
  for (const [k, v] of Object.entries(queryParams(c))) single[k] = v[v.length - 1] ?? '';
  const result = schema.safeParse(single);
  if (!result.success) throw badQuery(validationMessage(result.error, single));
  return result.data;
}

/** The audit's routes, with the installed extensions' checks. */
export function auditRoutes(checks: readonly AuditCheck[]): RouteTable {
  const AuditQuery = auditQuery(checks);
  return new RouteTable('diagnostics', placementHttp)
    .resource('/audit', {
      GET: {
        summary: 'Audit: over-capacity providers, empty consumers, stuck ARQs, dead letters',
        query: () => zodQuery(AuditQuery),
        responses: { 200: 'The report' },
        responseSchema: auditReportSchema(checks),
        responseName: 'AuditReport',
        handler: async (c) => {
          authorize(c, DIAGNOSTICS_RULE);
          const query = readQuery(c, AuditQuery);
          const { deps } = c.var;
          c.header('cache-control', 'no-cache');
          const context = { store: deps.store, now: deps.clock(), bindingTimeoutS: deps.config.ARQ_BINDING_TIMEOUT };
          return c.json(await auditReport(context, query, checks));
        },
      },
    })
    .resource('/audit/repairs', {
      POST: {
        summary: 'Apply (or dry-run) the safe repairs',
        body: always(AuditRepairsRequest),
        bodyName: 'AuditRepairs',
        responses: { 200: 'What was (or would be) done' },
        responseSchema: AuditRepairsResult,
        responseName: 'AuditRepairsResult',
        handler: async (c) => {
          authorize(c, DIAGNOSTICS_RULE);
          const request = await readBody(c, AuditRepairsRequest);
          const { deps } = c.var;
          return c.json(
            await applyAuditRepairs(
              {
                store: deps.store,
                jobs: deps.jobs,
                now: deps.clock(),
                bindingTimeoutS: deps.config.ARQ_BINDING_TIMEOUT,
              },
              request,
            ),
          );
        },
      },
    });
}
