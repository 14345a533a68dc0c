// Operator diagnostics, mounted at /diagnostics with Placement's middleware
// (microversion, auth, error envelope) by src/app.ts. Admin only: every route
// passes DIAGNOSTICS_RULE.
//   /diagnostics/audit, /diagnostics/audit/repairs      audit.ts
//   /diagnostics/allocation_candidates                  candidates.ts ("why no host")
import { Hono } from 'hono';
import type { AppEnv } from '../../../http/env.js';
import { auditRoutes } from './audit.js';
import { candidateDiagnosisRoutes } from './candidates.js';

export const diagnosticsRoutes = new Hono<AppEnv>();
diagnosticsRoutes.route('/', auditRoutes);
diagnosticsRoutes.route('/', candidateDiagnosisRoutes);
