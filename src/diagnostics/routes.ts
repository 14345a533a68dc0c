// Operator diagnostics, mounted at /diagnostics with Placement's middleware
// (microversion, auth, error envelope). Admin only: every route passes
// placement's `admin_api` rule, which a policy file may override.
//   GET  /diagnostics/audit            audit.ts (paged report)
//   POST /diagnostics/audit/repairs    audit.ts (safe repairs, dry run first)
import { Hono } from 'hono';
import type { AppEnv } from '../http/env.js';
import { readBody, validateQuery } from '../http/validate.js';
import { authorize, resource } from '../placement/middleware.js';
import { applyAuditRepairs, AuditQuery, auditReport, AuditRepairsRequest } from './audit.js';

/** The policy rule every diagnostics route requires. */
export const DIAGNOSTICS_RULE = 'admin_api';

export const diagnosticsRoutes = new Hono<AppEnv>();

resource(diagnosticsRoutes, '/audit', {
  GET: async (c) => {
    authorize(c, DIAGNOSTICS_RULE);
    const query = validateQuery(c, AuditQuery);
    const { deps } = c.var;
    c.header('cache-control', 'no-cache');
    return c.json(await auditReport({ store: deps.store, now: deps.clock(), bindingTimeoutS: deps.config.ARQ_BINDING_TIMEOUT }, query));
  },
});

resource(diagnosticsRoutes, '/audit/repairs', {
  POST: async (c) => {
    authorize(c, DIAGNOSTICS_RULE);
    const request = await readBody(c, AuditRepairsRequest);
    const { deps } = c.var;
    return c.json(await applyAuditRepairs({
      store: deps.store, jobs: deps.jobs, now: deps.clock(), bindingTimeoutS: deps.config.ARQ_BINDING_TIMEOUT,
    }, request));
  },
});
