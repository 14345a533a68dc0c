// GET /diagnostics/audit (paged report) and POST /diagnostics/audit/repairs
// (safe repairs, dry run first); the logic is ../audit.ts.
import type { z } from 'zod';
import type { AppContext } from '../../../http/env.js';
import { badQuery, queryParams, readBody, validationMessage } from '../../../http/validate.js';
import { authorize } from '../../../placement/http/middleware.js';
import { applyAuditRepairs, AuditQuery, auditReport, AuditRepairsRequest } from '../../audit.js';
import { DIAGNOSTICS_RULE } from '../../policy.js';
import { AuditRepairsResult, AuditReport } from '../../audit.js';
import { RouteTable, always, zodQuery } from '../../../http/route-table.js';
import { placementHttp } from '../../../placement/http/profile.js';

export const auditRoutes = new RouteTable('diagnostics', placementHttp);

/** A single-valued query (the last value wins) checked with `schema`; 400 in placement's words. */
function readQuery<S extends z.ZodType>(c: AppContext, schema: S): z.infer<S> {
  const single: Record<string, string> = {};
  for (const [k, v] of Object.entries(queryParams(c))) single[k] = v[v.length - 1] ?? '';
  const result = schema.safeParse(single);
  if (!result.success) throw badQuery(validationMessage(result.error, single));
  return result.data;
}

auditRoutes.resource('/audit', {
  GET: {
    summary: 'Audit: over-capacity providers, empty consumers, stuck ARQs, dead letters',
    query: () => zodQuery(AuditQuery),
    responses: { 200: 'The report' },
    responseSchema: AuditReport,
    responseName: 'AuditReport',
    handler: async (c) => {
      authorize(c, DIAGNOSTICS_RULE);
      const query = readQuery(c, AuditQuery);
      const { deps } = c.var;
      c.header('cache-control', 'no-cache');
      return c.json(await auditReport({ store: deps.store, now: deps.clock(), bindingTimeoutS: deps.config.ARQ_BINDING_TIMEOUT }, query));
    },
  },
});

auditRoutes.resource('/audit/repairs', {
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
