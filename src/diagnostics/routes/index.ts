// Operator diagnostics, mounted at /diagnostics with Placement's middleware
// (microversion, auth, error envelope) by src/app.ts. Admin only: every route
// passes DIAGNOSTICS_RULE.
//   /diagnostics/audit, /diagnostics/audit/repairs      audit.ts
import { Hono } from 'hono';
import type { AppEnv } from '../../http/env.js';
import { auditRoutes } from './audit.js';

export const diagnosticsRoutes = new Hono<AppEnv>();
diagnosticsRoutes.route('/', auditRoutes);
